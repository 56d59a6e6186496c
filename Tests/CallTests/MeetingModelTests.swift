import CallServer
import Foundation
import Observation
import Synchronization
import Testing
import TestSupport

@testable import CallClient

/// Issue 32, part 3: the `@Observable` model follows the meeting on the main actor, and the per-topic
/// sequences serve any number of readers with bounded buffers.
@Suite(.serialized, .realTime) struct MeetingModelTests {
    @MainActor @Test func theModelFollowsParticipantsSpeakerMicrophoneAndConnection() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = MeetingModel(meeting: SeedListenerTests.meeting(server, "alice", microphone: .none))
        #expect(alice.connection == .notJoined)
        // An observer of the speaker, as SwiftUI's view update would be.
        let changes = Mutex(0)
        func observeSpeaker() {
            withObservationTracking { _ = alice.speakerId } onChange: {
                changes.withLock { $0 += 1 }
            }
        }
        observeSpeaker()
        try await alice.join()
        #expect(alice.connection == .joined)
        #expect(alice.participants.map(\.id) == ["alice"] && alice.localParticipant?.id == "alice" && alice.micMuted)

        let voice = MicrophoneChoice.custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true))
        let bob = MeetingModel(meeting: SeedListenerTests.meeting(server, "bob", microphone: voice))
        try await bob.join()
        #expect(!bob.micMuted)
        #expect(await SeedListenerTests.until { alice.participants.map(\.id) == ["alice", "bob"] }, "\(alice.participants.map(\.id))")
        #expect(await SeedListenerTests.until { alice.speakerId == "bob" && bob.speakerId == "bob" })
        #expect(changes.withLock { $0 } >= 1, "the observer heard the speaker change")

        try await bob.setMicMuted(true)
        #expect(bob.micMuted)
        #expect(await SeedListenerTests.until { alice.participants.first { $0.id == "bob" }?.micMuted == true })

        // A failed call through the model is its last error.
        let carol = MeetingModel(meeting: SeedListenerTests.meeting(server, "carol", microphone: .none))
        try await carol.join()
        do {
            try await carol.setMicMuted(false)
        } catch {}
        // carol's token is a publisher's, but she has no microphone: 3059.
        #expect(carol.lastError?.code == .noMicrophoneFound, "\(String(describing: carol.lastError))")
        #expect(carol.micMuted)

        bob.leave()
        #expect(await SeedListenerTests.until { bob.connection == .left(.left) })
        #expect(await SeedListenerTests.until { alice.participants.map(\.id) == ["alice", "carol"] }, "\(alice.participants.map(\.id))")
        carol.leave()
        alice.leave()
    }

    @Test func everyReaderOfATopicHearsItAndALateOneStartsFromTheLatest() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = SeedListenerTests.meeting(server, "alice", microphone: .none)
        try await alice.join()
        defer { alice.leave() }
        // Two readers of the speaker, and one of the errors, before bob speaks.
        let first = alice.speakerChanges
        let second = alice.speakerChanges
        let errors = alice.errors
        let readers = [first, second].map { stream in
            Task { () -> String? in
                for await id in stream where id != nil { return id }
                return nil
            }
        }
        let voice = MicrophoneChoice.custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true))
        let bob = SeedListenerTests.meeting(server, "bob", microphone: voice)
        try await bob.join()
        defer { bob.leave() }
        for reader in readers { #expect(await reader.value == "bob") }
        // A reader made now starts from the current speaker, and the list from the latest change.
        var late = alice.speakerChanges.makeAsyncIterator()
        let current = await late.next()
        // bob or, in a pause of his, nobody (the replay is checked exactly in the test below).
        #expect(current == .some("bob") || current == .some(nil), "\(String(describing: current))")
        var list = alice.participantChanges.makeAsyncIterator()
        #expect(await list.next()?.participants.map(\.id) == ["alice", "bob"])

        alice.send(.text("hello"), to: "nobody-here")
        var errorReader = errors.makeAsyncIterator()
        let error = await errorReader.next()
        #expect(error?.code == .server(.noSuchParticipant), "\(String(describing: error))")

        // The meeting's end finishes every reader.
        alice.leave()
        var ended = alice.errors.makeAsyncIterator()
        #expect(await ended.next() == nil)
        var speakerAfter = alice.speakerChanges.makeAsyncIterator()
        _ = await speakerAfter.next()  // the latest, replayed
        #expect(await speakerAfter.next() == nil)
    }

    /// Issue 32, friction 10: `events` buffered without bound while nobody read it.
    @Test func theEventsStreamNobodyReadsKeepsTheNewestOnly() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token("alice"))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = .none
        configuration.eventsBufferSize = 3
        let alice = Meeting(configuration: configuration)
        let log = ParticipantEventTests.MeetingLog()
        alice.addEventListener(log)
        try await alice.join()
        // Ten level reports (2 s of the server's clock) and more: far more than three events.
        #expect(await Waiting.until(timeout: 10) { log.levelReports.load(ordering: .relaxed) >= 10 })
        alice.leave()
        // The queue gives the stream each event before the listeners: once they heard the end, the
        // stream holds all it will (reading earlier would make room for later events).
        #expect(await Waiting.until { log.all.contains("left left") })
        var kept: [MeetingEvent] = []
        for await event in alice.events { kept.append(event) }
        #expect(kept.count == 3, "\(kept.map { "\($0)".prefix(40) })")
        #expect(kept.last == .meetingLeft(reason: .left, error: nil))
    }

    @Test func aReaderThatFallsBehindKeepsTheNewestOnly() async {
        let topic = Broadcast<Int>(capacity: 4, replaysLatest: false)
        let slow = topic.subscribe()
        let quick = topic.subscribe()
        let quickReader = Task { () -> [Int] in
            var seen: [Int] = []
            for await value in quick {
                seen.append(value)
            }
            return seen
        }
        for value in 1...10 { topic.yield(value) }
        topic.finish()
        var kept: [Int] = []
        for await value in slow { kept.append(value) }
        #expect(kept == [7, 8, 9, 10], "a reader that reads nothing keeps the newest \(topic.capacity)")
        let quickSeen = await quickReader.value
        #expect(quickSeen.last == 10 && quickSeen.count >= 4 && quickSeen == quickSeen.sorted(), "\(quickSeen)")
        // A reader made after the end ends at once.
        var after = topic.subscribe().makeAsyncIterator()
        #expect(await after.next() == nil)

        // A replaying topic gives a new reader the latest value first, then what follows.
        let speaker = Broadcast<String?>(capacity: 4, replaysLatest: true)
        var early = speaker.subscribe().makeAsyncIterator()
        speaker.yield("alice")
        speaker.yield(nil)
        var late = speaker.subscribe().makeAsyncIterator()
        speaker.yield("bob")
        #expect(await early.next() == .some("alice"))
        #expect(await late.next() == .some(nil))
        #expect(await late.next() == .some("bob"))
    }
}

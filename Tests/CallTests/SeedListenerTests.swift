@testable import CallClient
import CallServer
import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

/// Issue 32, frictions 1, 2 and 4: listener code as the seeds write it compiles and runs. A view
/// controller with mutable state and no annotation, and a `@MainActor` view model, are listeners; they
/// hear every event on the main queue (the main actor's executor); the meeting holds them weakly; the participants already in the
/// room reach them as `onParticipantJoined`.
@Suite(.serialized, .realTime) struct SeedListenerTests {
    /// Seed 000's view controller as it is written there: no isolation of its own, `var`s, the listener
    /// added in its initialiser. (`MeetingEventListener` makes it `@MainActor`.)
    final class MeetingViewController: MeetingEventListener {
        let meeting: Meeting
        var joined = false
        var tiles: [String] = []
        var highlighted: String?
        var log: [String] = []
        /// Callbacks that ran off the main queue.
        var offMain = 0
        /// When each `onSpeakerChanged` and `onAudioLevels` ran (uptime, ns).
        var speakerTimes: [UInt64] = []
        var levelTimes: [UInt64] = []

        init(meeting: Meeting) {
            self.meeting = meeting
            meeting.addEventListener(self)
        }

        private func heard(_ line: String) {
            if !SeedListenerTests.onMainQueue { offMain += 1 }
            log.append(line)
        }

        func onMeetingJoined() {
            heard("joined")
            joined = true
        }

        func onParticipantJoined(_ participant: Participant) {
            heard("participant \(participant.id)")
            tiles.append(participant.id)
        }

        func onParticipantLeft(_ participant: Participant) {
            heard("left \(participant.id)")
            tiles.removeAll { $0 == participant.id }
        }

        func onSpeakerChanged(participantId: String?) {
            speakerTimes.append(DispatchTime.now().uptimeNanoseconds)
            heard("speaker \(participantId ?? "-")")
            highlighted = participantId
        }

        func onAudioLevels(_ levels: [String: Double]) {
            levelTimes.append(DispatchTime.now().uptimeNanoseconds)
            if !SeedListenerTests.onMainQueue { offMain += 1 }
        }
    }

    /// An explicitly `@MainActor` view model, with a participant listener of its own.
    @MainActor final class SpeakerViewModel: MeetingEventListener, ParticipantEventListener {
        var speaking = false
        var participantCount = 0
        var offMain = 0

        func onMeetingJoined(participants: [Participant]) {
            if !SeedListenerTests.onMainQueue { offMain += 1 }
            participantCount = participants.count
        }

        func onSpeakingChanged(_ speaking: Bool) {
            if !SeedListenerTests.onMainQueue { offMain += 1 }
            self.speaking = speaking
        }
    }

    /// Counts its own deinitialisation: the meeting must not keep it alive.
    final class Dropped: MeetingEventListener {
        final class Count: Sendable { let value = Atomic<Int>(0) }
        let gone: Count
        init(_ gone: Count) { self.gone = gone }
        deinit { gone.value.add(1, ordering: .relaxed) }
        func onAudioLevels(_ levels: [String: Double]) {}
    }

    /// Marks the main queue, whichever thread drains it (on Linux, after `dispatchMain()`, a worker
    /// thread does: `Thread.isMainThread` is false there).
    static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()

    /// Whether the caller runs on the main queue (the main actor's executor).
    static var onMainQueue: Bool { DispatchQueue.getSpecific(key: mainQueueKey) == true }

    static func meeting(_ server: RoomServer, _ participant: String, microphone: MicrophoneChoice) -> Meeting {
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token(participant))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = microphone
        return Meeting(configuration: configuration)
    }

    /// Polls `condition` on the main actor, suspending between polls, until it holds or `timeout` passes.
    @MainActor static func until(timeout: Double = Waiting.defaultTimeout, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    @MainActor @Test func seedStyleListenersHearEveryEventOnTheMainActorWithThoseAlreadyThere() async throws {
        #expect(Self.onMainQueue)  // a @MainActor test runs there too: the check checks
        let server = try CallTestServer.server()
        defer { server.stop() }
        // alice and carol are in the room before bob joins; bob's screen must show both.
        let alice = Self.meeting(server, "alice", microphone: .none)
        let carol = Self.meeting(server, "carol", microphone: .none)
        try await alice.join()
        let aliceScreen = MeetingViewController(meeting: alice)
        try await carol.join()
        #expect(await Self.until { aliceScreen.tiles == ["carol"] }, "alice's screen shows \(aliceScreen.tiles)")

        let voice = MicrophoneChoice.custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true))
        let bob = Self.meeting(server, "bob", microphone: voice)
        let bobScreen = MeetingViewController(meeting: bob)
        let model = SpeakerViewModel()
        alice.addEventListener(model)
        try await bob.join()

        #expect(await Self.until { bobScreen.tiles.count == 2 }, "bob's screen shows \(bobScreen.tiles)")
        #expect(bobScreen.joined)
        #expect(bobScreen.log.prefix(3) == ["joined", "participant alice", "participant carol"])
        #expect(await Self.until { aliceScreen.tiles == ["carol", "bob"] }, "alice's screen shows \(aliceScreen.tiles)")

        // The room names bob; alice's view model follows bob's own listener.
        let bobAtAlice = try #require(alice.participants.first { $0.id == "bob" })
        bobAtAlice.addEventListener(model)
        #expect(await Self.until { aliceScreen.highlighted == "bob" && bobScreen.highlighted == "bob" })
        #expect(await Self.until { model.speaking })
        #expect(await Self.until { aliceScreen.levelTimes.count >= 10 })

        // A listener nobody else holds goes: the meeting holds it weakly; events keep flowing.
        let gone = Dropped.Count()
        do {
            let dropped = Dropped(gone)
            alice.addEventListener(dropped)
        }
        #expect(gone.value.load(ordering: .relaxed) == 1)
        let levels = aliceScreen.levelTimes.count
        #expect(await Self.until { aliceScreen.levelTimes.count >= levels + 3 })

        bob.leave()
        #expect(await Self.until { aliceScreen.tiles == ["carol"] }, "alice's screen shows \(aliceScreen.tiles)")
        #expect(aliceScreen.offMain + bobScreen.offMain + model.offMain == 0)
        carol.leave()
        alice.leave()
    }

    /// The time from a signalling message's arrival (the WebSocket's thread) to the `@MainActor`
    /// listener's call, for `speaker-changed` and `audio-levels`; printed, not asserted (timing belongs
    /// to measurements, docs/call.md "Threads").
    @MainActor @Test func eventsReachAMainActorListenerSoonAfterTheirMessage() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .none)
        let arrivals = Mutex<(speaker: [UInt64], levels: [UInt64])>(([], []))
        alice.arrivalProbe.withLock {
            $0 = { text in
                let now = DispatchTime.now().uptimeNanoseconds
                if text.contains("\"speaker-changed\"") { arrivals.withLock { $0.speaker.append(now) } }
                if text.contains("\"audio-levels\"") { arrivals.withLock { $0.levels.append(now) } }
            }
        }
        let screen = MeetingViewController(meeting: alice)
        try await alice.join()
        let voice = MicrophoneChoice.custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true))
        let bob = Self.meeting(server, "bob", microphone: voice)
        try await bob.join()
        #expect(await Self.until { screen.speakerTimes.count >= 1 && screen.levelTimes.count >= 40 })
        bob.leave()
        alice.leave()
        #expect(await Self.until { screen.log.last == "left bob" || !screen.tiles.contains("bob") })

        let (speakerArrivals, levelArrivals) = arrivals.withLock { ($0.speaker, $0.levels) }
        // Each listener call pairs with the message before it; a message whose call is still queued at
        // the end is left out.
        func delays(_ arrivals: [UInt64], _ calls: [UInt64]) -> [Double] {
            zip(arrivals, calls).map { Double($1 &- $0) / 1e6 }
        }
        let speaker = delays(speakerArrivals, screen.speakerTimes)
        let levels = delays(levelArrivals, screen.levelTimes).sorted()
        #expect(!speaker.isEmpty && levels.count >= 40)
        #expect(speaker.allSatisfy { $0 >= 0 } && levels.allSatisfy { $0 >= 0 }, "a call came before its message")
        let median = levels[levels.count / 2]
        let p95 = levels[levels.count * 95 / 100]
        print("SeedListenerTests: message to @MainActor listener: speaker-changed \(speaker.map { String(format: "%.2f", $0) }) ms; "
            + "audio-levels median \(String(format: "%.2f", median)) ms, p95 \(String(format: "%.2f", p95)) ms, max \(String(format: "%.2f", levels.last ?? 0)) ms (\(levels.count))")
    }
}

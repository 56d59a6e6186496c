import CallClient
import CallProtocol
import CallServer
import Foundation
import SpeakerFiles
import SpeakerIO
import Synchronization
import Testing
import TestSupport

/// The SDK's threads: a meeting's two event channels, the `events` stream and the listeners, see one
/// order whichever thread raised each event (the WebSocket's: messages, levels; the microphone's:
/// speaking while muted; the app's own: an error thrown and reported by a call); its timers and queues
/// neither keep it alive nor stop.
@Suite(.serialized, .realTime) struct MeetingThreadingTests {
    /// What a listener heard, one line per call, as `line(_:)` writes the event.
    final class Recorder: MeetingEventListener {
        let lines = Mutex<[String]>([])
        private func add(_ line: String) { lines.withLock { $0.append(line) } }
        nonisolated var all: [String] { lines.withLock { $0 } }
        nonisolated func count(_ prefix: String) -> Int { all.count { $0.hasPrefix(prefix) } }

        func onMeetingJoined() { add("joined") }
        func onMeetingLeft() { add("left") }
        func onParticipantJoined(_ participant: Participant) { add("participant-joined \(participant.id)") }
        func onParticipantLeft(_ participant: Participant) { add("participant-left \(participant.id)") }
        func onParticipantsChanged(_ update: ParticipantListUpdate) { add("participants \(update.participants.map(\.id))") }
        func onSpeakerChanged(participantId: String?) { add("speaker \(participantId ?? "-")") }
        func onStreamEnabled(participantId: String, kind: StreamKind) { add("enabled \(participantId) \(kind)") }
        func onStreamDisabled(participantId: String, kind: StreamKind) { add("disabled \(participantId) \(kind)") }
        func onMicMuted(participantId: String, muted: Bool) { add("mic \(participantId) \(muted)") }
        func onAudioLevels(_ levels: [String: Double]) { add("levels \(levels.keys.sorted())") }
        func onMessage(from participantId: String, body: MessageBody) { add("message \(participantId) \(body)") }
        func onSpeakingWhileMuted() { add("speaking-while-muted") }
        func onError(_ error: MeetingError) { add("error \(error.message)") }
    }

    /// Set once, read by the threads it stops.
    final class Flag: Sendable {
        let value = Atomic<Bool>(false)
    }

    /// The line `Recorder` writes for `event` (a listener method carries less than its event).
    static func line(_ event: MeetingEvent) -> String {
        switch event {
        case .meetingJoined: "joined"
        case .meetingLeft: "left"
        case .participantJoined(let participant): "participant-joined \(participant.id)"
        case .participantLeft(let participant, _): "participant-left \(participant.id)"
        case .participantsChanged(let update): "participants \(update.participants.map(\.id))"
        case .speakerChanged(let id): "speaker \(id ?? "-")"
        case .streamEnabled(let id, let kind): "enabled \(id) \(kind)"
        case .streamDisabled(let id, let kind): "disabled \(id) \(kind)"
        case .micMuted(let id, let muted, _): "mic \(id) \(muted)"
        case .audioLevels(let levels): "levels \(levels.keys.sorted())"
        case .message(let from, let body): "message \(from) \(body)"
        case .speakingWhileMuted: "speaking-while-muted"
        case .error(let error): "error \(error.message)"
        case .reconnecting: "reconnecting"
        case .reconnected: "reconnected"
        }
    }

    static func meeting(
        _ server: RoomServer, _ participant: String, microphone: MicrophoneChoice, joinTimeout: Double = 10, pingInterval: Double = 5
    ) -> Meeting {
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token(participant))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = microphone
        configuration.micEnabled = false
        // The stream is read after the run: it must keep every event (the default keeps the newest 1,024).
        configuration.eventsBufferSize = 1_000_000
        configuration.joinTimeout = joinTimeout
        configuration.pingInterval = pingInterval
        return Meeting(configuration: configuration)
    }

    /// A voice, looped, at 48 kHz: the muted microphone's engine hears speech and warns every 3 s.
    static func speech() throws -> CustomMicrophoneTrack {
        let voice = try Resampler(inputRate: 16000, outputRate: 48000).process(Synthesis.voice(seconds: 3, f0: 180, levelDBFS: -22, seed: 21))
        return CustomMicrophoneTrack(source: FileMicrophone(samples: voice, loop: true), label: "speech")
    }

    @Test func theStreamAndAListenerSeeOneOrderUnderConcurrentEmitters() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .custom(try Self.speech()))
        let bob = Self.meeting(server, "bob", microphone: .none)
        let recorder = Recorder()
        alice.addEventListener(recorder)
        try await bob.join()
        defer { bob.leave() }
        try await alice.join()

        // Three sources at once: bob's messages and the levels arrive on alice's WebSocket thread,
        // the muted microphone warns from its own thread, and three app threads make calls that report
        // an error (an unknown webcam) on the calling thread.
        let stop = Flag()
        let finished = DispatchGroup()
        for thread in 0..<3 {
            finished.enter()
            Thread.detachNewThread {
                var index = 0
                while !stop.value.load(ordering: .relaxed) {
                    try? alice.changeCam(deviceId: "/dev/no-such-camera-\(thread)-\(index)")
                    index += 1
                    usleep(200)  // pacing, so that the other sources keep up; not a wait for an event
                }
                finished.leave()
            }
        }
        finished.enter()
        Thread.detachNewThread {
            // 40 a second, under the server's budget of 50.
            for index in 0..<120 where !stop.value.load(ordering: .relaxed) {
                bob.send(.text("m\(index)"), to: "alice")
                usleep(25_000)
            }
            finished.leave()
        }
        let mixed = await Waiting.until(timeout: 30) {
            recorder.count("speaking-while-muted") >= 1 && recorder.count("message bob") >= 60 && recorder.count("levels") >= 5
        }
        stop.value.store(true, ordering: .relaxed)
        finished.wait()
        alice.leave()

        var streamed: [String] = []
        for await event in alice.events { streamed.append(Self.line(event)) }
        #expect(streamed.last == "left")
        #expect(await Waiting.until { recorder.all.last == "left" })
        let heard = recorder.all
        #expect(mixed, "errors \(recorder.count("error")), messages \(recorder.count("message")), warnings \(recorder.count("speaking-while-muted"))")
        // The sources interleave: messages arrived between the calls' errors.
        let errors = heard.indices.filter { heard[$0].hasPrefix("error") }
        #expect(errors.count > 100)
        #expect(heard.indices.contains { heard[$0].hasPrefix("message") && $0 > errors.first! && $0 < errors.last! })
        #expect(streamed.count == heard.count, "stream \(streamed.count) events, listener \(heard.count)")
        if let first = zip(streamed, heard).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
            Issue.record("first difference at \(first) of \(streamed.count): stream \(streamed[first...].prefix(4)), listener \(heard[first...].prefix(4))")
        }
    }

    @Test func nothingReachesEitherChannelAfterMeetingLeft() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .none)
        let recorder = Recorder()
        alice.addEventListener(recorder)
        try await alice.join()
        alice.leave()
        // An error reported after leaving goes nowhere: the stream has finished with `meetingLeft`,
        // and the listener hears the same sequence.
        #expect(throws: MeetingError.self) { try alice.changeCam(deviceId: "/dev/no-such-camera") }
        var streamed: [String] = []
        for await event in alice.events { streamed.append(Self.line(event)) }
        #expect(streamed == ["joined", "left"])
        // Nor does the listener hear it: checked after a second meeting's level reports have shown
        // that time passed (at least 0.2 s of the server's clock).
        let marker = Self.meeting(server, "marker", microphone: .none)
        let markerRecorder = Recorder()
        marker.addEventListener(markerRecorder)
        try await marker.join()
        defer { marker.leave() }
        #expect(await Waiting.until { markerRecorder.count("levels") >= 2 })
        #expect(recorder.all == ["joined", "left"])
    }

    @Test func aDroppedMeetingLeavesAtOnceWithoutItsJoinTimeout() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let bob = Self.meeting(server, "bob", microphone: .none)
        let bobRecorder = Recorder()
        bob.addEventListener(bobRecorder)
        try await bob.join()
        defer { bob.leave() }

        // Alice's microphone runs muted and her WebSocket receives levels when the app drops her; a long
        // join timeout must not keep her alive, nor must the threads that raise her events.
        weak var dropped: Meeting?
        do {
            let alice = Self.meeting(server, "alice", microphone: .custom(try Self.speech()), joinTimeout: 300)
            let recorder = Recorder()
            alice.addEventListener(recorder)
            try await alice.join()
            #expect(await Waiting.until { recorder.count("speaking-while-muted") >= 1 && recorder.count("levels") >= 2 })
            dropped = alice
        }
        #expect(await Waiting.until { dropped == nil }, "the meeting is still referenced")
        #expect(await Waiting.until { bobRecorder.all.contains("participant-left alice") }, "\(bobRecorder.all.filter { !$0.hasPrefix("levels") })")
    }

    @Test func pingsKeepASilentMeetingInTheRoom() async throws {
        // The server removes a client silent for 1 s; alice, muted and sending nothing else, pings
        // every 0.2 s from her timer.
        let server = try CallTestServer.server(clientTimeout: 1)
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .none, pingInterval: 0.2)
        let recorder = Recorder()
        alice.addEventListener(recorder)
        try await alice.join()
        defer { alice.leave() }
        // 15 level reports: 3 s of the server's clock, three client timeouts.
        #expect(await Waiting.until { recorder.count("levels") >= 15 })
        #expect(alice.localParticipant != nil)
        #expect(!recorder.all.contains { $0.hasPrefix("error") || $0 == "left" }, "\(recorder.all.filter { !$0.hasPrefix("levels") })")
    }
}

import CallTransport
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import CallClient
@testable import CallServer

/// The seeds' participant-level API: a participant's own listener, peer-list updates, why the meeting
/// was left, the local webcam's event and joining without a microphone.
@Suite(.serialized, .realTime) struct ParticipantEventTests {
    /// What one participant's listener heard, one line per call.
    final class ParticipantLog: ParticipantEventListener {
        let lines = Mutex<[String]>([])
        let levels = Atomic<Int>(0)
        private func add(_ line: String) { lines.withLock { $0.append(line) } }
        nonisolated var all: [String] { lines.withLock { $0 } }

        func onStreamEnabled(kind: StreamKind) { add("enabled \(kind)") }
        func onStreamDisabled(kind: StreamKind) { add("disabled \(kind)") }
        func onMicMuted(_ muted: Bool, by moderatorId: String?) { add("mic \(muted) \(moderatorId ?? "-")") }
        func onAudioLevel(_ level: Double) { levels.add(1, ordering: .relaxed) }
        func onSpeakingChanged(_ speaking: Bool) { add("speaking \(speaking)") }
        func onLeft(reason: MeetingLeaveReason) { add("left \(reason)") }
    }

    /// What a meeting's listener heard: leave reasons, errors, list updates and the local streams.
    final class MeetingLog: MeetingEventListener {
        let lines = Mutex<[String]>([])
        let updates = Mutex<[ParticipantListUpdate]>([])
        let joinedParticipants = Mutex<[Participant]>([])
        let levelReports = Atomic<Int>(0)
        private func add(_ line: String) { lines.withLock { $0.append(line) } }
        nonisolated var all: [String] { lines.withLock { $0 } }

        func onMeetingLeft(reason: MeetingLeaveReason) { add("left \(reason.rawValue)") }
        func onParticipantJoined(_ participant: Participant) { joinedParticipants.withLock { $0.append(participant) } }
        func onParticipantsChanged(_ update: ParticipantListUpdate) { updates.withLock { $0.append(update) } }
        func onStreamEnabled(participantId: String, kind: StreamKind) { add("enabled \(participantId) \(kind)") }
        func onStreamDisabled(participantId: String, kind: StreamKind) { add("disabled \(participantId) \(kind)") }
        func onAudioLevels(_ levels: [String: Double]) { levelReports.add(1, ordering: .relaxed) }
        func onError(_ error: MeetingError) { add("error \(error.code.rawValue)") }
    }

    static func meeting(_ server: RoomServer, _ participant: String, role: Role = .publisher, microphone: MicrophoneChoice) -> Meeting {
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token(participant, role: role))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = microphone
        return Meeting(configuration: configuration)
    }

    /// The bundled recording of bob speaking, looped: the room's engine names its publisher speaker.
    static func voice() throws -> MicrophoneChoice {
        .custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true))
    }

    @Test func aParticipantsOwnListenerHearsItsStreamsMicrophoneLevelSpeakingAndLeaving() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let bob = Self.meeting(server, "bob", microphone: .none)
        let bobLog = MeetingLog()
        bob.addEventListener(bobLog)
        try await bob.join()
        defer { bob.leave() }
        let alice = Self.meeting(server, "alice", microphone: try Self.voice())
        try await alice.join()

        // A copy from the joined event: the listener belongs to the participant, not to the copy.
        #expect(await Waiting.until(timeout: 5) { bobLog.joinedParticipants.withLock { $0.count } == 1 })
        let aliceSeenByBob = try #require(bobLog.joinedParticipants.withLock { $0.first })
        let log = ParticipantLog()
        aliceSeenByBob.addEventListener(log)
        let other = ParticipantLog()
        try #require(bob.localParticipant).addEventListener(other)

        #expect(await Waiting.until(timeout: 10) { log.all.contains("speaking true") }, "\(log.all)")
        #expect(log.levels.load(ordering: .relaxed) > 0)
        alice.enableWebcam()
        #expect(await Waiting.until(timeout: 5) { log.all.contains("enabled video") }, "\(log.all)")
        alice.muteMic()
        #expect(await Waiting.until(timeout: 5) { log.all.contains("mic true -") }, "\(log.all)")
        alice.leave()
        #expect(await Waiting.until(timeout: 5) { log.all.last == "left left" }, "\(log.all)")
        let heard = log.all
        #expect(heard.filter { !$0.hasPrefix("speaking") } == ["enabled video", "mic true -", "left left"], "\(heard)")
        #expect(other.all.allSatisfy { !$0.hasPrefix("enabled") && !$0.hasPrefix("mic") && !$0.hasPrefix("left") }, "only alice's events: \(other.all)")
    }

    @Test func peerListUpdatesSayWhoJoinedLeftOrChanged() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let bob = Self.meeting(server, "bob", microphone: .none)
        let log = MeetingLog()
        bob.addEventListener(log)
        try await bob.join()
        defer { bob.leave() }
        let alice = Self.meeting(server, "alice", microphone: try Self.voice())
        try await alice.join()
        #expect(await Waiting.until(timeout: 5) { log.updates.withLock { $0.count } >= 1 })
        let joined = try #require(log.updates.withLock { $0.first })
        #expect(joined.added.map(\.id) == ["alice"] && joined.removed.isEmpty && joined.updated.isEmpty)
        #expect(joined.participants.map(\.id) == ["bob", "alice"])

        alice.muteMic()
        #expect(await Waiting.until(timeout: 5) { log.updates.withLock { $0.last?.updated.first?.micMuted == true } })
        let muted = try #require(log.updates.withLock { $0.last })
        #expect(muted.updated.map(\.id) == ["alice"] && muted.added.isEmpty && muted.removed.isEmpty)
        #expect(muted.participants.first { $0.id == "alice" }?.micMuted == true)

        alice.leave()
        #expect(await Waiting.until(timeout: 5) { log.updates.withLock { $0.last?.removed.isEmpty == false } })
        let left = try #require(log.updates.withLock { $0.last })
        #expect(left.removed.map(\.id) == ["alice"] && left.participants.map(\.id) == ["bob"])
        #expect(bob.participants.map(\.id) == ["bob"])
    }

    @Test func aModeratorsRemovalEndsTheMeetingAsRemovedNotAsALostConnection() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let moderator = Self.meeting(server, "mod", role: .moderator, microphone: .none)
        try await moderator.join()
        defer { moderator.leave() }
        let alice = Self.meeting(server, "alice", microphone: .none)
        let log = MeetingLog()
        alice.addEventListener(log)
        try await alice.join()
        moderator.removeParticipant("alice")

        var ending: [MeetingEvent] = []
        for await event in alice.events {
            if case .meetingLeft = event { ending.append(event) }
            if case .error = event { ending.append(event) }
        }
        let left = try #require(ending.last)
        guard case .meetingLeft(let reason, let error) = left else {
            Issue.record("the stream ended without meetingLeft: \(ending)")
            return
        }
        #expect(reason == .removed)
        #expect(error?.code == .server(.removed))
        #expect(ending.count == 1, "no error event, neither 4011 nor 3001: \(ending)")
        #expect(await Waiting.until(timeout: 5) { log.all.last == "left removed" }, "\(log.all)")
        #expect(!log.all.contains { $0.hasPrefix("error") }, "\(log.all)")
    }

    @Test func leaveReasonsForLeavingAClosedRoomAndALostConnection() async throws {
        let server = try CallTestServer.server()
        let alice = Self.meeting(server, "alice", microphone: .none)
        let aliceLog = MeetingLog()
        alice.addEventListener(aliceLog)
        try await alice.join()
        alice.leave()
        #expect(await Waiting.until(timeout: 5) { aliceLog.all == ["left left"] }, "\(aliceLog.all)")

        // The room is deleted through the HTTP API: 4013, then the close.
        let bob = Self.meeting(server, "bob", microphone: .none)
        let bobLog = MeetingLog()
        bob.addEventListener(bobLog)
        try await bob.join()
        let response = server.handle(
            HTTPRequest(method: "DELETE", path: "/v1/rooms/room", headers: ["authorization": "Bearer \(CallTestServer.adminToken())"]),
            from: PeerAddress(host: "127.0.0.1", port: 1))
        #expect(response.status == 204 || response.status == 200, "\(response.status)")
        #expect(await Waiting.until(timeout: 5) { bobLog.all.last == "left room-closed" }, "\(bobLog.all)")
        #expect(bobLog.all == ["left room-closed"])

        // The server goes away: the connection is lost (3001, also an error).
        let restarted = try CallTestServer.server()
        // Without reconnecting (MeetingReconnectTests covers it), as before it existed.
        var carolConfiguration = MeetingConfiguration(server: "ws://127.0.0.1:\(restarted.port)", roomId: "room", token: CallTestServer.token("carol"))
        carolConfiguration.speaker = .none  // no sound card on the test machines
        carolConfiguration.microphone = .none
        carolConfiguration.reconnect = false
        let carol = Meeting(configuration: carolConfiguration)
        let carolLog = MeetingLog()
        carol.addEventListener(carolLog)
        try await carol.join()
        restarted.stop()
        #expect(await Waiting.until(timeout: 10) { carolLog.all.last == "left connection-lost" }, "\(carolLog.all)")
        #expect(carolLog.all == ["error 3001", "left connection-lost"])
        server.stop()
    }

    @Test func theLocalWebcamRaisesItsOwnStreamEventsOnce() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .none)
        let bob = Self.meeting(server, "bob", microphone: .none)
        let aliceLog = MeetingLog(), bobLog = MeetingLog()
        alice.addEventListener(aliceLog)
        bob.addEventListener(bobLog)
        try await alice.join()
        defer { alice.leave() }
        try await bob.join()
        defer { bob.leave() }
        let own = ParticipantLog()
        try #require(alice.localParticipant).addEventListener(own)

        alice.enableWebcam()
        alice.disableWebcam()
        // Bob hearing both proves the server's echoes reached alice before his second event.
        #expect(await Waiting.until(timeout: 5) { bobLog.all == ["enabled alice video", "disabled alice video"] }, "\(bobLog.all)")
        #expect(await Waiting.until(timeout: 5) { alice.localParticipant?.videoEnabled == false && aliceLog.all.count >= 2 })
        #expect(aliceLog.all == ["enabled alice video", "disabled alice video"], "once each: \(aliceLog.all)")
        #expect(own.all == ["enabled video", "disabled video"])
    }

    /// Issue 32, friction 6: after `muteMic()` the local participant still showed its old state until the
    /// server's echo, and a subscriber's `unmuteMic()` did nothing at all, silently.
    @Test func muteAndUnmuteShowAtOnceAndASubscriberIsTold() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let track = try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/alice.flac"))
        let alice = Self.meeting(server, "alice", microphone: .custom(track))
        try await alice.join()
        defer { alice.leave() }
        #expect(alice.localParticipant?.micMuted == false)
        alice.muteMic()
        #expect(alice.localParticipant?.micMuted == true)
        alice.unmuteMic()
        #expect(alice.localParticipant?.micMuted == false)

        let carol = Self.meeting(server, "carol", role: .subscriber, microphone: .none)
        let log = MeetingLog()
        carol.addEventListener(log)
        try await carol.join()
        defer { carol.leave() }
        carol.unmuteMic()
        #expect(await Waiting.until(timeout: 5) { log.all.contains("error 4006") }, "\(log.all)")
        #expect(carol.localParticipant?.micMuted == true)
    }

    /// Issue 32, friction 6's other half: the `async` form returns once the server has confirmed the
    /// state, and throws for a subscriber and for a microphone a moderator muted.
    @Test func theAsyncMuteReturnsTheConfirmedStateAndThrowsForASubscriber() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let track = try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/alice.flac"), loop: true)
        let alice = Self.meeting(server, "alice", microphone: .custom(track))
        try await alice.join()
        defer { alice.leave() }
        let watcher = Self.meeting(server, "watcher", microphone: .none)
        try await watcher.join()
        defer { watcher.leave() }
        let muted = try await alice.setMicMuted(true)
        #expect(muted.micMuted && muted.id == "alice")
        #expect(alice.localParticipant?.micMuted == true)
        let unmuted = try await alice.setMicMuted(false)
        #expect(!unmuted.micMuted)
        // Confirmed: the server has it, so the watcher hears it soon (its echo left the server with alice's).
        #expect(await Waiting.until(timeout: 5) { watcher.participants.first { $0.id == "alice" }?.micMuted == false })
        #expect(try await alice.setMicMuted(false).micMuted == false, "already so: answered at once")

        let carol = Self.meeting(server, "carol", role: .subscriber, microphone: .none)
        try await carol.join()
        defer { carol.leave() }
        await #expect(throws: MeetingError.self) { try await carol.setMicMuted(false) }
        do {
            try await carol.setMicMuted(false)
        } catch {
            #expect(error.code == .server(.notAllowed))
        }
        #expect(try await carol.setMicMuted(true).micMuted, "muting a subscriber's silent microphone is no error")

        let idle = Self.meeting(server, "idle", microphone: .none)
        do {
            try await idle.setMicMuted(true)
            Issue.record("a meeting not joined confirmed a mute")
        } catch {
            #expect(error.code == .invalidArgument)
        }
    }

    /// Issue 32, friction 5: the defaults play on the default output (this machine has no sound card,
    /// so the meeting says so, 3002, and goes on), and joining with the default microphone where there
    /// is none tells the caller of `join` (3059) before connecting; `.none` joins without one.
    @Test func theDefaultsPlayOnTheDefaultOutputAndAMissingMicrophoneFailsTheJoin() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token("alice"))
        #expect(configuration.speaker == .device("default"))
        let noMicrophones = Meeting(configuration: configuration, microphones: { [] })
        do {
            try await noMicrophones.join()
            Issue.record("joined with the default microphone and none there")
        } catch {
            #expect(error.code == .noMicrophoneFound)
            #expect(error.message.contains("microphone = .none"), "\(error.message)")
        }

        var listening = configuration
        listening.microphone = .none
        let alice = Meeting(configuration: listening, microphones: { [] })
        let log = MeetingLog()
        alice.addEventListener(log)
        try await alice.join()
        defer { alice.leave() }
        // Three level reports: time enough for the player to open, or to fail.
        #expect(await Waiting.until(timeout: 5) { log.levelReports.load(ordering: .relaxed) >= 3 })
        // A machine with a sound card plays and reports nothing; one without says why nothing plays.
        #expect(log.all.isEmpty || log.all == ["error 3002"], "\(log.all)")
        #expect(alice.localParticipant?.micMuted == true)
        #expect(alice.participants.map(\.id) == ["alice"], "the failed join left nobody in the room")
    }

    @Test func joiningWithoutAMicrophoneNeedsNoSettingAndRaisesNoError() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        // The default configuration has micEnabled = true.
        let alice = Self.meeting(server, "alice", microphone: .none)
        let log = MeetingLog()
        alice.addEventListener(log)
        try await alice.join()
        defer { alice.leave() }
        #expect(alice.localParticipant?.micMuted == true)
        // Three level reports (0.6 s of the server's clock) pass without an error.
        #expect(await Waiting.until(timeout: 5) { log.levelReports.load(ordering: .relaxed) >= 3 })
        #expect(log.all.isEmpty, "\(log.all)")
        #expect(server.mediaStatistics.accepted == 0)

        // Unmuting without a microphone: 3059, and the participant stays muted for everyone.
        let watcher = Self.meeting(server, "watcher", microphone: .none)
        let watched = MeetingLog()
        watcher.addEventListener(watched)
        try await watcher.join()
        defer { watcher.leave() }
        alice.unmuteMic()
        #expect(await Waiting.until(timeout: 5) { log.all == ["error 3059"] }, "\(log.all)")
        let reports = watched.levelReports.load(ordering: .relaxed)
        #expect(await Waiting.until(timeout: 5) { watched.levelReports.load(ordering: .relaxed) >= reports + 3 })
        #expect(watcher.participants.first { $0.id == "alice" }?.micMuted == true, "the server was not told")
        #expect(alice.localParticipant?.micMuted == true)
    }
}

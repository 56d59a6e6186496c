@testable import CallClient
@testable import CallServer
import CallProtocol
import CallTransport
import Foundation
import SpeakerFiles
import SpeakerIO
import Synchronization
import TestSupport
import Testing

/// A meeting that loses its server reconnects by itself (to the same address, or to a fallback),
/// follows redirects, republishes its microphone, and does not reconnect when the meeting was ended
/// on purpose.
@Suite(.realTime) struct MeetingReconnectTests {
    /// What a meeting's listener heard, one line per event that matters here.
    final class Log: MeetingEventListener {
        let lines = Mutex<[String]>([])
        /// The participant ids as the events told them (joined, then each join and leave).
        let seen = Mutex<Set<String>>([])
        private func add(_ line: String) { lines.withLock { $0.append(line) } }
        nonisolated var all: [String] { lines.withLock { $0 } }
        nonisolated func count(_ line: String) -> Int { all.count { $0 == line } }

        func onMeetingJoined() { add("joined") }
        func onMeetingLeft(reason: MeetingLeaveReason) { add("left \(reason.rawValue)") }
        func onParticipantJoined(_ participant: Participant) {
            add("participant-joined \(participant.id)")
            seen.withLock { _ = $0.insert(participant.id) }
        }
        func onParticipantLeft(_ participant: Participant) {
            add("participant-left \(participant.id)")
            seen.withLock { _ = $0.remove(participant.id) }
        }
        func onError(_ error: MeetingError) { add("error \(error.code.rawValue)") }
        func onReconnecting() { add("reconnecting") }
        func onReconnected() { add("reconnected") }
    }

    /// A room server with the tests' secret and room `room`, on `port` (0: any). A port that the
    /// previous server has just left may still be taken for a moment: binding is retried until it
    /// is free.
    static func server(port: Int = 0) throws -> RoomServer {
        var configuration = RoomServerConfiguration()
        configuration.port = port
        configuration.secret = CallTestServer.secret
        configuration.rooms = ["room"]
        var made: RoomServer?
        var lastError: (any Error)?
        _ = Waiting.until {
            do {
                made = try RoomServer(configuration: configuration)
                return true
            } catch {
                lastError = error
                return false
            }
        }
        guard let made else { throw lastError ?? CallError(.serverError, "no server") }
        made.start()
        return made
    }

    static func url(_ port: Int) -> String { "ws://127.0.0.1:\(port)" }

    static func meeting(
        _ server: String, _ participant: String, role: Role = .publisher, microphone: MicrophoneChoice = .none,
        fallbacks: [String] = [], reconnect: Bool = true, log: Log? = nil
    ) -> Meeting {
        var configuration = MeetingConfiguration(server: server, roomId: "room", token: CallTestServer.token(participant, role: role))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = microphone
        configuration.fallbackServers = fallbacks
        configuration.reconnect = reconnect
        let meeting = Meeting(configuration: configuration)
        if let log { meeting.addEventListener(log) }
        return meeting
    }

    /// Synthetic speech, looped, as a custom microphone.
    static func voice(seed: UInt64 = 7) throws -> MicrophoneChoice {
        let speech = try Resampler(inputRate: 16000, outputRate: 48000).process(Synthesis.voice(seconds: 2, f0: 190, levelDBFS: -22, seed: seed))
        return .custom(CustomMicrophoneTrack(source: FileMicrophone(samples: speech, loop: true), label: "voice"))
    }

    /// A TCP port with nothing listening on it (a server's, stopped).
    static func deadPort() throws -> Int {
        let server = try Self.server()
        let port = server.port
        server.stop()
        return port
    }

    // MARK: Losing the server

    @Test func aMeetingWhoseServerRestartsReconnectsAndPublishesToTheNewServer() async throws {
        let first = try Self.server()
        let port = first.port
        let log = Log()
        let alice = Self.meeting(Self.url(port), "alice", microphone: try Self.voice(), log: log)
        try await alice.join()
        defer { alice.leave() }
        // A second participant, which does not reconnect: the rejoin's list drops it.
        let carol = Self.meeting(Self.url(port), "carol", reconnect: false)
        try await carol.join()
        #expect(await Waiting.until { log.all.contains("participant-joined carol") }, "\(log.all)")
        #expect(await Waiting.until { first.mediaStatistics.accepted > 25 })
        let firstSSRC = alice.localParticipant?.ssrc

        first.stop()
        #expect(await Waiting.until { log.all.contains("reconnecting") }, "\(log.all)")
        let second = try Self.server(port: port)
        defer { second.stop() }
        #expect(await Waiting.until(timeout: 30) { log.all.contains("reconnected") }, "\(log.all)")

        // Reconnecting, then the list's change (carol is gone), then reconnected; no meetingLeft.
        let lines = log.all
        let reconnecting = try #require(lines.firstIndex(of: "reconnecting"))
        let reconnected = try #require(lines.firstIndex(of: "reconnected"))
        let carolLeft = try #require(lines.firstIndex(of: "participant-left carol"))
        #expect(reconnecting < carolLeft && carolLeft < reconnected, "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("left") }, "\(lines)")
        #expect(alice.participants.map(\.id) == ["alice"])
        #expect(alice.localParticipant?.ssrc != nil && alice.localParticipant?.ssrc != firstSSRC)
        // Its microphone (the same source) reaches the new server.
        #expect(await Waiting.until { second.mediaStatistics.accepted > 25 }, "\(second.mediaStatistics)")

        // Someone joining the new server sees alice, and alice sees them, through events that
        // agree with her list.
        let bob = Self.meeting(Self.url(port), "bob")
        try await bob.join()
        defer { bob.leave() }
        #expect(bob.participants.map(\.id).contains("alice"))
        #expect(await Waiting.until { alice.participants.map(\.id) == ["alice", "bob"] })
        #expect(await Waiting.until { log.seen.withLock { $0 } == ["bob"] }, "\(log.all)")
        #expect(await Waiting.until { bob.receivedPackets["alice", default: 0] > 25 }, "\(bob.receivedPackets)")
    }

    @Test func aMutedMicrophoneRejoinsMutedAndUnmutesToTheNewServer() async throws {
        let first = try Self.server()
        let port = first.port
        let log = Log()
        let alice = Self.meeting(Self.url(port), "alice", microphone: try Self.voice(), log: log)
        try await alice.join()
        defer { alice.leave() }
        alice.muteMic()
        first.stop()
        let second = try Self.server(port: port)
        defer { second.stop() }
        #expect(await Waiting.until(timeout: 30) { log.all.contains("reconnected") }, "\(log.all)")
        #expect(alice.localParticipant?.micMuted == true)

        // Bob publishes: once the server has forwarded plenty of his, nothing came from alice.
        let bob = Self.meeting(Self.url(port), "bob", microphone: try Self.voice(seed: 9))
        try await bob.join()
        defer { bob.leave() }
        #expect(await Waiting.until { alice.receivedPackets["bob", default: 0] > 50 }, "\(alice.receivedPackets)")
        #expect(bob.receivedPackets["alice"] == nil, "\(bob.receivedPackets)")
        alice.unmuteMic()
        #expect(await Waiting.until { bob.receivedPackets["alice", default: 0] > 25 }, "\(bob.receivedPackets)")
    }

    @Test func aMeetingThatCannotReconnectEndsAsConnectionLostAfterTheTimeout() async throws {
        let server = try Self.server()
        let log = Log()
        var configuration = MeetingConfiguration(server: Self.url(server.port), roomId: "room", token: CallTestServer.token("alice"))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = .none
        configuration.reconnectTimeout = 2
        let alice = Meeting(configuration: configuration)
        alice.addEventListener(log)
        try await alice.join()
        server.stop()
        #expect(await Waiting.until { log.all.last == "left connection-lost" }, "\(log.all)")
        #expect(log.all == ["joined", "reconnecting", "error 3001", "left connection-lost"])
    }

    @Test func leavingWhileReconnectingStopsIt() async throws {
        let server = try Self.server()
        let log = Log()
        let alice = Self.meeting(Self.url(server.port), "alice", log: log)
        try await alice.join()
        server.stop()
        #expect(await Waiting.until { log.all.contains("reconnecting") }, "\(log.all)")
        alice.leave()
        #expect(await Waiting.until { log.all.last == "left left" }, "\(log.all)")
        #expect(log.all == ["joined", "reconnecting", "left left"])
        // Nothing follows meetingLeft: the stream has finished.
        var after: [MeetingEvent] = []
        for await event in alice.events { after.append(event) }
        #expect(after.contains(.meetingLeft(reason: .left, error: nil)))
        #expect(after.last == .meetingLeft(reason: .left, error: nil))
    }

    // MARK: Fallback servers

    @Test func joiningWithTheFirstServerDownLandsOnTheFallback() async throws {
        let dead = try Self.deadPort()
        let fallback = try Self.server()
        defer { fallback.stop() }
        let alice = Self.meeting(Self.url(dead), "alice", fallbacks: [Self.url(fallback.port)])
        try await alice.join()
        defer { alice.leave() }
        let bob = Self.meeting(Self.url(fallback.port), "bob")
        try await bob.join()
        defer { bob.leave() }
        #expect(bob.participants.map(\.id) == ["alice", "bob"])
    }

    @Test func reconnectingCyclesToTheFallbackWhenTheServerStaysDown() async throws {
        let first = try Self.server()
        let fallback = try Self.server()
        defer { fallback.stop() }
        let log = Log()
        let alice = Self.meeting(Self.url(first.port), "alice", microphone: try Self.voice(), fallbacks: [Self.url(fallback.port)], log: log)
        try await alice.join()
        defer { alice.leave() }
        first.stop()
        #expect(await Waiting.until(timeout: 30) { log.all.contains("reconnected") }, "\(log.all)")
        let bob = Self.meeting(Self.url(fallback.port), "bob")
        try await bob.join()
        defer { bob.leave() }
        #expect(bob.participants.map(\.id) == ["alice", "bob"])
        #expect(await Waiting.until { fallback.mediaStatistics.accepted > 25 }, "\(fallback.mediaStatistics)")
    }

    // MARK: Redirects

    /// A node that answers every `join`: with a `redirect` to `target` (nil: to itself) and a close,
    /// or (`joinWithoutPongs`) with a `joined` and then silence, never answering a ping.
    final class FakeNode: WebServerDelegate {
        enum Answer: Sendable { case redirect(String?), joinWithoutPongs }
        let answer: Answer
        let joins = Mutex(0)
        private let web = Mutex<WebServer?>(nil)

        init(_ answer: Answer) throws {
            self.answer = answer
            let server = try WebServer(webSocketPaths: [RoomServer.signallingPath], delegate: self)
            web.withLock { $0 = server }
            server.start()
        }

        var port: Int { web.withLock { $0?.port ?? 0 } }
        var url: String { "ws://127.0.0.1:\(port)/v1/signal?room=room" }

        func stop() {
            let server = web.withLock { web in
                defer { web = nil }
                return web
            }
            server?.stop()
        }

        func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse { .empty(status: 404) }
        func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {}
        func webSocketClosed(_ connection: ConnectionID) {}

        func webSocketReceived(_ connection: ConnectionID, text: String) {
            guard case .join? = try? ClientMessage(json: text), let server = web.withLock({ $0 }) else { return }
            let count = joins.withLock { count in
                count += 1
                return count
            }
            switch answer {
            case .redirect(let target):
                server.send(ServerMessage.redirect(Redirect(url: target ?? url, nodeId: "fake", roomId: "room")).json, to: connection)
                server.close(connection)
            case .joinWithoutPongs:
                let me = ParticipantInfo(id: "alice", displayName: "alice", role: .publisher, micMuted: true, audio: false, video: false, ssrc: UInt32(count))
                let room = JoinedRoom(roomID: "room", participantID: "alice", participants: [me], speakerID: nil, media: nil)
                server.send(ServerMessage.joined(room).json, to: connection)
            }
        }
    }

    @Test func aRedirectIsFollowedToTheRoomsNode() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let node = try FakeNode(.redirect("ws://127.0.0.1:\(server.port)/v1/signal?room=room"))
        defer { node.stop() }
        let alice = Self.meeting(Self.url(node.port), "alice", microphone: try Self.voice())
        try await alice.join()
        defer { alice.leave() }
        #expect(node.joins.withLock { $0 } == 1)
        #expect(alice.participants.map(\.id) == ["alice"])
        // RTP goes to the host of the connection made last, at MEDIA's port.
        #expect(await Waiting.until { server.mediaStatistics.accepted > 25 }, "\(server.mediaStatistics)")
    }

    @Test func aRedirectLoopFailsTheJoinAfterFiveRedirects() async throws {
        let node = try FakeNode(.redirect(nil))
        defer { node.stop() }
        let alice = Self.meeting(Self.url(node.port), "alice")
        await #expect {
            try await alice.join()
        } throws: { error in
            guard let error = error as? MeetingError else { return false }
            return error.code == .network && error.message.contains("too many redirects")
        }
        // The first join and five more, one per redirect followed.
        #expect(node.joins.withLock { $0 } == 6)
    }

    @Test func aServerThatStopsAnsweringPingsCountsAsLost() async throws {
        let node = try FakeNode(.joinWithoutPongs)
        defer { node.stop() }
        let log = Log()
        var configuration = MeetingConfiguration(server: Self.url(node.port), roomId: "room", token: CallTestServer.token("alice"))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = .none
        configuration.pingInterval = 0.2
        configuration.pingTimeout = 1
        let alice = Meeting(configuration: configuration)
        alice.addEventListener(log)
        try await alice.join()
        defer { alice.leave() }
        // Silence past the ping timeout: reconnecting, and the node (which joins again) takes it back.
        #expect(await Waiting.until { log.all.contains("reconnected") }, "\(log.all)")
        #expect(node.joins.withLock { $0 } >= 2)
        #expect(log.all.prefix(3) == ["joined", "reconnecting", "reconnected"], "\(log.all)")
    }

    // MARK: Endings that are not losses

    @Test func aRemovedParticipantDoesNotReconnect() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let moderator = Self.meeting(Self.url(server.port), "mod", role: .moderator)
        try await moderator.join()
        defer { moderator.leave() }
        let log = Log()
        let alice = Self.meeting(Self.url(server.port), "alice", log: log)
        try await alice.join()
        moderator.removeParticipant("alice")
        #expect(await Waiting.until { log.all.last == "left removed" }, "\(log.all)")
        // The moderator was there before alice: her listener hears of him as a joining participant.
        #expect(log.all == ["joined", "participant-joined mod", "left removed"])
        #expect(await Waiting.until { moderator.participants.map(\.id) == ["mod"] })
    }

    @Test func aClosedRoomDoesNotReconnect() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let log = Log()
        let alice = Self.meeting(Self.url(server.port), "alice", log: log)
        try await alice.join()
        let response = server.handle(
            HTTPRequest(method: "DELETE", path: "/v1/rooms/room", headers: ["authorization": "Bearer \(CallTestServer.adminToken())"]),
            from: PeerAddress(host: "127.0.0.1", port: 1))
        #expect(response.status == 204 || response.status == 200, "\(response.status)")
        #expect(await Waiting.until { log.all.last == "left room-closed" }, "\(log.all)")
        #expect(log.all == ["joined", "left room-closed"])
    }

    @Test func leavingDoesNotReconnect() async throws {
        let server = try Self.server()
        defer { server.stop() }
        let log = Log()
        let alice = Self.meeting(Self.url(server.port), "alice", log: log)
        try await alice.join()
        alice.leave()
        #expect(await Waiting.until { log.all.last == "left left" }, "\(log.all)")
        // A later participant is alone: alice did not come back.
        let bob = Self.meeting(Self.url(server.port), "bob")
        try await bob.join()
        defer { bob.leave() }
        #expect(bob.participants.map(\.id) == ["bob"])
        #expect(log.all == ["joined", "left left"])
    }

    // MARK: The plan

    @Test func theBackoffDoublesFromAQuarterSecondToTwoAndCyclesThroughTheServers() {
        var plan = Reconnection(servers: ["a", "b", "c"], current: 1, start: 100, timeout: 30)
        var attempts: [String] = []
        var delays: [Double] = []
        for _ in 0..<6 {
            guard let next = plan.nextAttempt(now: 100) else { break }
            attempts.append(next.server)
            delays.append(next.delay)
        }
        #expect(attempts == ["b", "c", "a", "b", "c", "a"])
        #expect(delays == [0.25, 0.5, 1, 2, 2, 2])
        #expect(plan.nextAttempt(now: 129) == nil, "past the deadline once the wait is added")
        #expect(plan.isRetryable(.unavailable, now: 125) && plan.isRetryable(.roomNotFound, now: 125))
        #expect(plan.isRetryable(.duplicateParticipant, now: 105) && !plan.isRetryable(.duplicateParticipant, now: 125))
        #expect(!plan.isRetryable(.invalidToken, now: 101) && !plan.isRetryable(.removed, now: 101))
    }
}

import CallProtocol
import CallTransport
import Testing
@testable import CallServer

/// The signalling rules of browsers' WebRTC sessions (`offer`, `ice-candidate`), without sockets.
@Suite struct WebRTCRegistryTests {
    var base: RoomRegistryTests

    init() throws {
        base = try RoomRegistryTests()
    }

    static let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n"
    static let relay = MediaEndpoint(host: "127.0.0.1", port: 47000)
    static let candidate = ICECandidate(candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host", sdpMLineIndex: 0)

    mutating func send(_ connection: ConnectionID, _ message: ClientMessage) -> [Effect] {
        base.registry.received(connection, text: message.json, now: 0, epochSeconds: RoomRegistryTests.now)
    }

    /// Joins `participant` on `connection` the way the meeting page does (no rtpPort) and offers.
    mutating func offer(_ connection: ConnectionID, _ participant: String, role: Role = .publisher) -> [Effect] {
        _ = base.join(connection, RoomRegistryTests.token(participant, role: role), rtpPort: nil)
        return send(connection, .offer(sdp: Self.offer))
    }

    @Test mutating func anOfferOpensASessionAndTheAnswerBindsItsRelay() throws {
        let opened = offer(1, "alice")
        guard case .webRTC(.open(1, room: "room", participant: "alice", ssrc: let ssrc?, offer: Self.offer))? = opened.first else {
            Issue.record("no open: \(opened)")
            return
        }
        // Candidates found while answering wait for the answer.
        #expect(base.registry.webRTCLocalCandidate(1, Self.candidate).isEmpty)
        let answered = base.registry.webRTCAnswered(1, answer: "v=0 answer", endpoint: Self.relay)
        let source = MediaSource(host: "127.0.0.1", port: 47000)
        #expect(answered == [
            .media(.bind(room: "room", participant: "alice", sender: source, receiver: Self.relay, mixSSRC: nil)),
            .send(1, .answer(sdp: "v=0 answer")), .send(1, .iceCandidate(Self.candidate)),
        ])
        #expect(base.registry.webRTCLocalCandidate(1, Self.candidate) == [.send(1, .iceCandidate(Self.candidate))])
        #expect(send(1, .iceCandidate(Self.candidate)) == [.webRTC(.candidate(1, Self.candidate))])
        #expect(base.registry.room("room")?.participant("alice")?.info.ssrc == ssrc.rawValue)
    }

    @Test mutating func aSubscriberOnlyReceives() {
        _ = offer(1, "viewer", role: .subscriber)
        let answered = base.registry.webRTCAnswered(1, answer: "a", endpoint: Self.relay)
        #expect(answered.first == .media(.bind(room: "room", participant: "viewer", sender: nil, receiver: Self.relay, mixSSRC: nil)))
    }

    /// Issue 29: a client on the server's host joined with `rtpPort` set to another member's relay socket,
    /// and its room's audio went into that browser.
    @Test mutating func aJoinNamingARelaySocketIsRefusedWhileTheSessionLasts() {
        _ = offer(1, "alice")
        let answered = base.registry.webRTCAnswered(1, answer: "a", endpoint: Self.relay, mixSSRC: 77)
        #expect(answered.first == .media(.bind(
            room: "room", participant: "alice", sender: MediaSource(host: "127.0.0.1", port: 47000), receiver: Self.relay, mixSSRC: 77)))
        let refused = base.join(2, RoomRegistryTests.token("mallory"), rtpPort: Self.relay.port)
        #expect(RoomRegistryTests.errorCode(refused, to: 2) == .malformedMessage && RoomRegistryTests.closes(refused, 2), "\(refused)")
        // From another host the same port is another socket; once alice leaves it is no longer the server's.
        let elsewhere = base.join(3, RoomRegistryTests.token("carol"), rtpPort: Self.relay.port, peerHost: "192.0.2.7")
        #expect(RoomRegistryTests.errorCode(elsewhere, to: 3) == nil, "\(elsewhere)")
        _ = send(1, .leave)
        let later = base.join(4, RoomRegistryTests.token("dave"), rtpPort: Self.relay.port)
        #expect(RoomRegistryTests.errorCode(later, to: 4) == nil, "\(later)")
    }

    @Test mutating func aLevelOnlyServerRefusesOffersAndKeepsTheParticipant() {
        base.registry = RoomRegistry(settings: RoomRegistry.Settings(
            secret: RoomRegistryTests.secret, rtp: RoomRegistryTests.rtp, clientTimeout: 10, levelsOnly: true))
        _ = try? base.registry.createRoom(id: "room", maxParticipants: 3)
        let refused = offer(1, "alice")
        #expect(RoomRegistryTests.errorCode(refused, to: 1) == .notAllowed && !RoomRegistryTests.closes(refused, 1), "\(refused)")
        #expect(!refused.contains { if case .webRTC = $0 { true } else { false } })
        #expect(base.registry.room("room")?.participants.map(\.info.id) == ["alice"])
    }

    /// A room created level-only in a server that decodes: its media opens level-only, a browser's offer in it is
    /// refused and the participant stays, while another room of the server takes offers; a recording server
    /// refuses to create one.
    @Test mutating func aLevelOnlyRoomRefusesOffersAndARecordingServerRefusesToCreateOne() throws {
        base.registry = RoomRegistry(settings: RoomRegistry.Settings(secret: RoomRegistryTests.secret, rtp: RoomRegistryTests.rtp, clientTimeout: 10))
        let (_, effects) = try base.registry.createRoom(id: "room", maxParticipants: 3, levelsOnly: true)
        #expect(effects == [.media(.openRoom(room: "room", levelsOnly: true))])
        #expect(base.registry.room("room")?.levelsOnly == true)
        let refused = offer(1, "alice")
        #expect(RoomRegistryTests.errorCode(refused, to: 1) == .notAllowed && !RoomRegistryTests.closes(refused, 1), "\(refused)")
        #expect(!refused.contains { if case .webRTC = $0 { true } else { false } })
        #expect(base.registry.room("room")?.participants.map(\.info.id) == ["alice"])
        let (_, decoded) = try base.registry.createRoom(id: "decoded", maxParticipants: 3)
        #expect(decoded == [.media(.openRoom(room: "decoded", levelsOnly: false))])

        var recording = RoomRegistry(settings: RoomRegistry.Settings(
            secret: RoomRegistryTests.secret, rtp: RoomRegistryTests.rtp, clientTimeout: 10, recording: true))
        #expect(throws: CallError.self) { try recording.createRoom(id: "room", maxParticipants: 3, levelsOnly: true) }
        #expect(recording.room("room") == nil)
        _ = try recording.createRoom(id: "room", maxParticipants: 3)
    }

    @Test mutating func offersAndCandidatesOutOfOrderAreRefusedAndTheRoomStays() {
        base.registry.opened(1, room: "room", peerHost: "127.0.0.1", now: 0)
        #expect(RoomRegistryTests.errorCode(send(1, .offer(sdp: Self.offer)), to: 1) == .joinState)
        _ = base.join(2, RoomRegistryTests.token("bob"), rtpPort: nil)
        let early = send(2, .iceCandidate(Self.candidate))
        #expect(RoomRegistryTests.errorCode(early, to: 2) == .joinState && !RoomRegistryTests.closes(early, 2))
        _ = send(2, .offer(sdp: Self.offer))
        #expect(RoomRegistryTests.errorCode(send(2, .offer(sdp: Self.offer)), to: 2) == .joinState)
        // A plain-RTP participant cannot offer too.
        _ = base.join(3, RoomRegistryTests.token("carol"), rtpPort: 5002)
        #expect(RoomRegistryTests.errorCode(send(3, .offer(sdp: Self.offer)), to: 3) == .joinState)
        #expect(base.registry.room("room")?.participants.map(\.info.id) == ["bob", "carol"])
    }

    @Test mutating func aRefusedOfferMayBeMadeAgain() {
        _ = offer(1, "alice")
        let refused = base.registry.webRTCRefused(1, CallError(.malformedMessage, "malformed SDP offer: no o= line"))
        #expect(refused == [.send(1, .error(CallError(.malformedMessage, "malformed SDP offer: no o= line")))])
        #expect(base.registry.room("room")?.participant("alice") != nil)
        #expect(send(1, .offer(sdp: Self.offer)).first.map { if case .webRTC(.open) = $0 { true } else { false } } == true)
    }

    @Test mutating func leavingClosingAndRemovalCloseTheSession() throws {
        _ = offer(1, "alice")
        _ = base.registry.webRTCAnswered(1, answer: "a", endpoint: Self.relay)
        #expect(send(1, .leave).contains(.webRTC(.close(1))))

        _ = offer(2, "bob")
        #expect(base.registry.closed(2).contains(.webRTC(.close(2))))

        _ = base.join(3, RoomRegistryTests.token("mod", role: .moderator), rtpPort: nil)
        _ = offer(4, "carol")
        _ = base.registry.webRTCAnswered(4, answer: "a", endpoint: Self.relay)
        #expect(send(3, .removeParticipant("carol")).contains(.webRTC(.close(4))))
        // An answer that comes after the connection went closes the new session at once.
        _ = offer(5, "dave")
        _ = base.registry.closed(5)
        #expect(base.registry.webRTCAnswered(5, answer: "a", endpoint: Self.relay) == [.webRTC(.close(5))])
    }
}

import CallProtocol
import CallTransport
import SpeakerRTP
import Testing
@testable import CallServer

/// The signalling rules, without sockets: inputs in, effects out.
@Suite struct RoomRegistryTests {
    static let secret = TokenSecret("registry-test-secret-0123")!
    static let now = 1_700_000_000

    /// The server's RTP socket: 127.0.0.1:40000.
    static let rtp = UDPSocket.OwnAddresses(bound: SocketAddress(host: "127.0.0.1", port: 40000)!)

    var registry = RoomRegistry(settings: RoomRegistry.Settings(secret: secret, rtp: rtp, clientTimeout: 10))

    init() throws {
        _ = try registry.createRoom(id: "room", maxParticipants: 3)
    }

    static func token(_ participant: String, room: String = "room", role: Role = .publisher, expires: Int = now + 60) -> String {
        AccessToken(room: room, participantID: participant, role: role, issuedAt: now - 10, expiresAt: expires).signed(with: secret)
    }

    /// Opens connection `number` from `peerHost` and joins with `token`.
    mutating func join(_ number: ConnectionID, _ token: String, rtpPort: Int? = 5000, room: CallRoomID? = "room", peerHost: String = "127.0.0.1") -> [Effect] {
        registry.opened(number, room: room, peerHost: peerHost, now: 0)
        return registry.received(number, text: ClientMessage.join(token: token, mic: true, webcam: false, rtpPort: rtpPort).json, now: 0, epochSeconds: Self.now)
    }

    static func messages(_ effects: [Effect], to connection: ConnectionID) -> [ServerMessage] {
        effects.compactMap { if case .send(connection, let message) = $0 { message } else { nil } }
    }

    static func errorCode(_ effects: [Effect], to connection: ConnectionID) -> CallErrorCode? {
        for case .error(let error) in messages(effects, to: connection) { return error.code }
        return nil
    }

    static func closes(_ effects: [Effect], _ connection: ConnectionID) -> Bool { effects.contains(.close(connection)) }

    /// Rooms `.` and `..` could be created but never read or deleted through the HTTP API (their URL
    /// paths normalise away), and would record into the recordings folder or its parent.
    @Test(arguments: [".", ".."])
    mutating func dotRoomIdsAreRefused(id: String) {
        #expect(throws: CallError.self) { try registry.createRoom(id: CallRoomID(id), maxParticipants: 3) }
        do {
            _ = try registry.createRoom(id: CallRoomID(id), maxParticipants: 3)
        } catch {
            #expect(error.code == .malformedMessage)
            #expect(error.message.contains("not . or .."), "\(error.message)")
        }
    }

    @Test mutating func joinAnswersWithTheRoomAndMedia() throws {
        let effects = join(1, Self.token("alice"))
        guard case .joined(let room)? = Self.messages(effects, to: 1).first else {
            Issue.record("no joined: \(effects)")
            return
        }
        #expect(room.participantID == "alice" && room.roomID == "room" && room.speakerID == nil)
        let media = try #require(room.media)
        #expect(media.rtpPort == 40000 && media.payloadType == 111 && media.audioLevelId == 1)
        #expect(effects.contains(.media(.addMember(
            room: "room", participant: "alice", ssrc: SSRC(media.ssrc), sender: MediaSource(host: "127.0.0.1", port: 5000),
            receiver: MediaEndpoint(host: "127.0.0.1", port: 5000)))))
    }

    @Test mutating func theJoinMayNameTheParticipant() {
        registry.opened(1, room: "room", peerHost: "127.0.0.1", now: 0)
        let text = ClientMessage.join(token: Self.token("alice"), mic: true, webcam: false, rtpPort: nil, displayName: "Alice Smith").json
        guard case .joined(let room)? = Self.messages(registry.received(1, text: text, now: 0, epochSeconds: Self.now), to: 1).first else {
            Issue.record("no joined")
            return
        }
        #expect(room.participants.first?.displayName == "Alice Smith")
    }

    @Test mutating func othersHearOfJoinsAndLeaves() {
        _ = join(1, Self.token("alice"))
        let effects = join(2, Self.token("bob"))
        guard case .participantJoined(let bob)? = Self.messages(effects, to: 1).first else {
            Issue.record("alice was not told")
            return
        }
        #expect(bob.id == "bob")
        let leaving = registry.received(2, text: ClientMessage.leave.json, now: 1, epochSeconds: Self.now)
        #expect(Self.messages(leaving, to: 1) == [.participantLeft("bob", reason: .left)])
        #expect(Self.closes(leaving, 2))
        #expect(leaving.contains(.media(.removeMember(room: "room", participant: "bob"))))
    }

    @Test mutating func forgedExpiredAndWrongRoomTokensAreRefusedAndClosed() {
        let forged = AccessToken(room: "room", participantID: "eve", role: .moderator, issuedAt: 0, expiresAt: Self.now + 60)
            .signed(with: TokenSecret("not-the-server-secret-xyz")!)
        for (number, token, code) in [
            (ConnectionID(1), forged, CallErrorCode.invalidToken), (2, Self.token("late", expires: Self.now - 1), .tokenExpired),
            (3, Self.token("stray", room: "elsewhere"), .wrongRoom), (4, "garbage", .invalidToken),
        ] {
            let effects = join(number, token)
            #expect(Self.errorCode(effects, to: number) == code)
            #expect(Self.closes(effects, number))
            #expect(!effects.contains { if case .media = $0 { true } else { false } })
        }
        #expect(registry.room("room")?.participants.isEmpty == true)
    }

    @Test mutating func unknownRoomFullRoomAndDuplicateIDs() {
        #expect(Self.errorCode(join(1, Self.token("a", room: "nope"), room: "nope"), to: 1) == .roomNotFound)
        _ = join(2, Self.token("a"))
        #expect(Self.errorCode(join(3, Self.token("a")), to: 3) == .duplicateParticipant)
        _ = join(4, Self.token("b"))
        _ = join(5, Self.token("c"))
        #expect(Self.errorCode(join(6, Self.token("d")), to: 6) == .roomFull)
    }

    @Test mutating func subscribersGetNoMediaAndCannotPublish() {
        let effects = join(1, Self.token("viewer", role: .subscriber))
        guard case .joined(let room)? = Self.messages(effects, to: 1).first else {
            Issue.record("no joined")
            return
        }
        #expect(room.media == nil)
        #expect(room.participants.first?.ssrc == nil && room.participants.first?.micMuted == true)
        // It still receives forwarded audio, but nothing it sends is bound.
        #expect(effects.contains(.media(.addMember(
            room: "room", participant: "viewer", ssrc: nil, sender: nil, receiver: MediaEndpoint(host: "127.0.0.1", port: 5000)))))
        let unmute = registry.received(1, text: ClientMessage.unmuteMic.json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(unmute, to: 1) == .notAllowed)
        let publish = registry.received(1, text: ClientMessage.enableStream(.audio).json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(publish, to: 1) == .notAllowed)
        #expect(!Self.closes(unmute + publish, 1))
    }

    @Test mutating func onlyModeratorsMuteAndRemove() {
        _ = join(1, Self.token("alice"))
        _ = join(2, Self.token("mod", role: .moderator))
        let denied = registry.received(1, text: ClientMessage.muteParticipant("mod").json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(denied, to: 1) == .notAllowed)
        let muted = registry.received(2, text: ClientMessage.muteParticipant("alice").json, now: 1, epochSeconds: Self.now)
        #expect(Self.messages(muted, to: 1) == [.micMuted("alice", muted: true, by: "mod")])
        #expect(muted.contains(.media(.setMuted(room: "room", participant: "alice", muted: true))))
        let removed = registry.received(2, text: ClientMessage.removeParticipant("alice").json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(removed, to: 1) == .removed)
        #expect(Self.closes(removed, 1))
        #expect(Self.messages(removed, to: 2) == [.participantLeft("alice", reason: .removed)])
    }

    /// Hardening item 8: a client's displayName replaced the token's signed name, so anyone could appear
    /// as anyone. A signed name now stands; a token without a name still lets the client choose.
    @Test mutating func aSignedNameCannotBeReplaced() {
        registry.opened(1, room: "room", peerHost: "127.0.0.1", now: 0)
        let signed = AccessToken(
            room: "room", participantID: "alice", displayName: "Alice", role: .publisher, issuedAt: Self.now - 10,
            expiresAt: Self.now + 60
        ).signed(with: Self.secret)
        let impostor = ClientMessage.join(token: signed, mic: true, webcam: false, rtpPort: nil, displayName: "The CEO").json
        let refused = registry.received(1, text: impostor, now: 0, epochSeconds: Self.now)
        #expect(Self.errorCode(refused, to: 1) == .notAllowed)
        #expect(Self.closes(refused, 1))
        #expect(registry.room("room")?.participants.isEmpty == true)
        // The same name (as SDKs send it back) is fine.
        registry.opened(2, room: "room", peerHost: "127.0.0.1", now: 0)
        let same = ClientMessage.join(token: signed, mic: true, webcam: false, rtpPort: nil, displayName: "Alice").json
        guard case .joined(let room)? = Self.messages(registry.received(2, text: same, now: 0, epochSeconds: Self.now), to: 2).first else {
            Issue.record("no joined")
            return
        }
        #expect(room.participants.first?.displayName == "Alice")
    }

    /// Hardening item 8: a participant muted by a moderator unmuted itself at once.
    @Test mutating func aModeratorsMuteHoldsUntilAModeratorLiftsIt() {
        _ = join(1, Self.token("alice"))
        _ = join(2, Self.token("mod", role: .moderator))
        _ = registry.received(2, text: ClientMessage.muteParticipant("alice").json, now: 1, epochSeconds: Self.now)
        let unmute = registry.received(1, text: ClientMessage.unmuteMic.json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(unmute, to: 1) == .notAllowed)
        #expect(!unmute.contains(.media(.setMuted(room: "room", participant: "alice", muted: false))))
        #expect(registry.room("room")?.participant("alice")?.info.micMuted == true)
        // Only a moderator lifts it; then the participant's microphone is live again.
        let byAlice = registry.received(1, text: ClientMessage.unmuteParticipant("alice").json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(byAlice, to: 1) == .notAllowed)
        let lifted = registry.received(2, text: ClientMessage.unmuteParticipant("alice").json, now: 1, epochSeconds: Self.now)
        #expect(Self.messages(lifted, to: 1) == [.micMuted("alice", muted: false, by: "mod")])
        #expect(lifted.contains(.media(.setMuted(room: "room", participant: "alice", muted: false))))
        // After that the participant mutes and unmutes itself as before.
        _ = registry.received(1, text: ClientMessage.muteMic.json, now: 1, epochSeconds: Self.now)
        let again = registry.received(1, text: ClientMessage.unmuteMic.json, now: 1, epochSeconds: Self.now)
        #expect(again.contains(.media(.setMuted(room: "room", participant: "alice", muted: false))))
        // A moderator cannot unmute someone who muted themselves.
        _ = registry.received(1, text: ClientMessage.muteMic.json, now: 1, epochSeconds: Self.now)
        let forced = registry.received(2, text: ClientMessage.unmuteParticipant("alice").json, now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(forced, to: 2) == .notAllowed)
    }

    /// Hardening item 8: a removed participant rejoined at once with the same token.
    @Test mutating func aRemovedParticipantWaitsOrNeedsANewToken() {
        let token = Self.token("alice")
        _ = join(1, token)
        _ = join(2, Self.token("mod", role: .moderator))
        _ = registry.received(2, text: ClientMessage.removeParticipant("alice").json, now: 1, epochSeconds: Self.now)
        let rejoin = join(3, token)
        #expect(Self.errorCode(rejoin, to: 3) == .removed)
        #expect(registry.room("room")?.participant("alice") == nil)
        // A token issued after the removal admits at once.
        let fresh = AccessToken(room: "room", participantID: "alice", role: .publisher, issuedAt: Self.now + 1, expiresAt: Self.now + 60)
        #expect(Self.errorCode(join(4, fresh.signed(with: Self.secret)), to: 4) == nil)
        #expect(registry.room("room")?.participant("alice") != nil)
    }

    @Test mutating func theRejoinBanEnds() {
        registry = RoomRegistry(settings: RoomRegistry.Settings(secret: Self.secret, rtp: Self.rtp, clientTimeout: 10, rejoinBan: 60))
        _ = try? registry.createRoom(id: "room", maxParticipants: 3)
        let token = Self.token("alice", expires: Self.now + 3600)
        _ = join(1, token)
        _ = join(2, Self.token("mod", role: .moderator))
        _ = registry.received(2, text: ClientMessage.removeParticipant("alice").json, now: 1, epochSeconds: Self.now)
        registry.opened(3, room: "room", peerHost: "127.0.0.1", now: 0)
        let join = ClientMessage.join(token: token, mic: true, webcam: false, rtpPort: nil).json
        #expect(Self.errorCode(registry.received(3, text: join, now: 0, epochSeconds: Self.now + 59), to: 3) == .removed)
        registry.opened(4, room: "room", peerHost: "127.0.0.1", now: 0)
        #expect(Self.errorCode(registry.received(4, text: join, now: 0, epochSeconds: Self.now + 60), to: 4) == nil)
    }

    /// Hardening item 2: one participant's message flood closed every other member (their send queues
    /// filled); now the sender is closed when it passes its budget.
    @Test mutating func aFloodingSenderIsClosedNotItsListeners() {
        _ = join(1, Self.token("alice"))
        _ = join(2, Self.token("mallory", role: .subscriber))
        let big = ClientMessage.message(.text(String(repeating: "x", count: 60_000)), to: nil).json
        var effects: [Effect] = []
        var sent = 0
        // All at one instant: the byte burst (4 x 128 KiB) admits 8 such messages, then the budget is spent.
        while sent < 100, !effects.contains(.close(2, code: 1008)) {
            effects = registry.received(2, text: big, now: 1, epochSeconds: Self.now)
            sent += 1
        }
        #expect(sent == 9, "the ninth 60 KB message passes 512 KiB")
        #expect(Self.errorCode(effects, to: 2) == .rateLimited)
        #expect(Self.messages(effects, to: 1) == [.participantLeft("mallory", reason: .left)])
        #expect(!effects.contains { if case .close(1, _) = $0 { true } else { false } })
        #expect(registry.room("room")?.participants.map(\.info.id) == ["alice"])
    }

    @Test mutating func theMessageBudgetRefills() {
        _ = join(1, Self.token("alice"))
        // 100 pings at once spend the burst of 2 x 50 messages; 30 ms later one and a half more have accrued.
        for _ in 0..<100 {
            #expect(Self.errorCode(registry.received(1, text: ClientMessage.ping.json, now: 5, epochSeconds: Self.now), to: 1) == nil)
        }
        #expect(Self.errorCode(registry.received(1, text: ClientMessage.ping.json, now: 5.03, epochSeconds: Self.now), to: 1) == nil)
        #expect(Self.errorCode(registry.received(1, text: ClientMessage.ping.json, now: 5.03, epochSeconds: Self.now), to: 1) == .rateLimited)
    }

    @Test mutating func malformedMessagesCloseOnlyTheirConnection() {
        _ = join(1, Self.token("alice"))
        _ = join(2, Self.token("bob"))
        let effects = registry.received(1, text: "{not json", now: 1, epochSeconds: Self.now)
        #expect(Self.errorCode(effects, to: 1) == .malformedMessage)
        #expect(Self.closes(effects, 1) && !Self.closes(effects, 2))
        #expect(Self.messages(effects, to: 2) == [.participantLeft("alice", reason: .left)])
        #expect(registry.room("room")?.participants.map(\.info.id) == ["bob"])
    }

    @Test mutating func messagesBeforeJoinAreRefused() {
        registry.opened(1, room: "room", peerHost: "127.0.0.1", now: 0)
        #expect(Self.errorCode(registry.received(1, text: ClientMessage.muteMic.json, now: 0, epochSeconds: Self.now), to: 1) == .joinState)
        #expect(Self.messages(registry.received(1, text: ClientMessage.ping.json, now: 0, epochSeconds: Self.now), to: 1) == [.pong])
    }

    @Test mutating func silentClientsTimeOut() {
        _ = join(1, Self.token("alice"))
        _ = join(2, Self.token("bob"))
        _ = registry.received(2, text: ClientMessage.ping.json, now: 8, epochSeconds: Self.now)
        #expect(registry.sweep(now: 9).isEmpty)
        let effects = registry.sweep(now: 10.5)
        #expect(Self.errorCode(effects, to: 1) == .timedOut && Self.closes(effects, 1))
        #expect(Self.messages(effects, to: 2) == [.participantLeft("alice", reason: .timeout)])
        #expect(registry.room("room")?.participants.map(\.info.id) == ["bob"])
    }

    @Test mutating func messagesReachTheirAddressees() {
        _ = join(1, Self.token("alice"))
        _ = join(2, Self.token("bob"))
        _ = join(3, Self.token("carol"))
        let everyone = registry.received(1, text: ClientMessage.message(.text("hi"), to: nil).json, now: 1, epochSeconds: Self.now)
        #expect(Self.messages(everyone, to: 2) == [.message(.text("hi"), from: "alice", to: nil)])
        #expect(Self.messages(everyone, to: 3).count == 1 && Self.messages(everyone, to: 1).isEmpty)
        let direct = registry.received(1, text: ClientMessage.message(.data([1]), to: "carol").json, now: 1, epochSeconds: Self.now)
        #expect(Self.messages(direct, to: 3) == [.message(.data([1]), from: "alice", to: "carol")] && Self.messages(direct, to: 2).isEmpty)
    }

    @Test mutating func speakerChangesReachEveryoneAndAreRemembered() {
        _ = join(1, Self.token("alice"))
        let effects = registry.speakerChanged(room: "room", participant: "alice", time: 1.5)
        #expect(Self.messages(effects, to: 1) == [.speakerChanged("alice", time: 1.5)])
        guard case .joined(let room)? = Self.messages(join(2, Self.token("bob")), to: 2).first else {
            Issue.record("no joined")
            return
        }
        #expect(room.speakerID == "alice")
    }

    @Test mutating func apiTokensNeedTheRightScope() throws {
        let admin = AccessToken(room: "*", participantID: "admin", role: .moderator, issuedAt: 0, expiresAt: Self.now + 60).signed(with: Self.secret)
        _ = try registry.authorize(admin, room: nil, moderator: true, now: Self.now)
        #expect(throws: CallError.self) { try registry.authorize(Self.token("alice"), room: nil, moderator: true, now: Self.now) }
        #expect(throws: CallError.self) { try registry.authorize(Self.token("alice"), room: "room", moderator: true, now: Self.now) }
        _ = try registry.authorize(Self.token("alice"), room: "room", moderator: false, now: Self.now)
        #expect(throws: CallError.self) { try registry.authorize(nil, room: "room", moderator: false, now: Self.now) }
    }

    @Test mutating func deletingARoomDisconnectsItsMembers() throws {
        _ = join(1, Self.token("alice"))
        let effects = try registry.deleteRoom("room")
        #expect(Self.errorCode(effects, to: 1) == .roomClosed && Self.closes(effects, 1))
        #expect(effects.contains(.media(.closeRoom(room: "room"))))
        #expect(throws: CallError.self) { try registry.deleteRoom("room") }
    }

    @Test mutating func ingestBindsASourceAndSSRC() throws {
        _ = join(1, Self.token("alice"))
        let (info, effects) = try registry.addIngest(
            room: "room", participant: "gst", displayName: "GStreamer", source: MediaSource(host: "127.0.0.1", port: nil), ssrc: 42)
        #expect(info.ssrc == 42 && info.role == .publisher)
        #expect(Self.messages(effects, to: 1) == [.participantJoined(info)])
        #expect(throws: CallError.self) {
            try registry.addIngest(room: "room", participant: "other", displayName: nil, source: MediaSource(host: "127.0.0.1", port: nil), ssrc: 42)
        }
        _ = try registry.removeIngest(room: "room", participant: "gst")
        #expect(throws: CallError.self) { try registry.removeIngest(room: "room", participant: "alice") }
    }

    static func isJoined(_ effects: [Effect], _ connection: ConnectionID) -> Bool {
        if case .joined? = messages(effects, to: connection).first { true } else { false }
    }

    /// A member whose `rtpPort` is where the server's own RTP socket receives would make the server
    /// forward to itself: the join is refused (4007, closed, nothing for the media loop).
    @Test mutating func aJoinNamingTheServersOwnRTPAddressIsRefused() {
        for (number, role) in [(ConnectionID(1), Role.subscriber), (2, .publisher)] {
            let effects = join(number, Self.token("mallory\(number.rawValue)", role: role), rtpPort: 40000)
            #expect(Self.errorCode(effects, to: number) == .malformedMessage, "\(role)")
            #expect(Self.closes(effects, number))
            #expect(!effects.contains { if case .media = $0 { true } else { false } })
        }
        #expect(registry.room("room")?.participants.isEmpty == true)
        // Another port of the server's host, or the same port on another host, is someone else.
        #expect(Self.isJoined(join(3, Self.token("alice"), rtpPort: 40001), 3))
        #expect(Self.isJoined(join(4, Self.token("bob"), rtpPort: 40000, peerHost: "192.0.2.7"), 4))
    }

    /// Bound to the any-address, the RTP socket receives on every loopback address and on the host's
    /// interface addresses.
    @Test func withAWildcardBindEveryLocalAddressIsTheServers() throws {
        let rtp = UDPSocket.OwnAddresses(
            bound: SocketAddress(host: "0.0.0.0", port: 40000)!, interfaceHosts: [SocketAddress(host: "198.51.100.4", port: 0)!])
        var test = try Self()
        test.registry = RoomRegistry(settings: RoomRegistry.Settings(secret: Self.secret, rtp: rtp, clientTimeout: 10))
        _ = try test.registry.createRoom(id: "room", maxParticipants: 10)
        for (number, host) in [(ConnectionID(1), "127.0.0.1"), (2, "127.3.2.1"), (3, "198.51.100.4"), (4, "::1")] {
            #expect(Self.errorCode(test.join(number, Self.token("m\(number.rawValue)", role: .subscriber), rtpPort: 40000, peerHost: host), to: number) == .malformedMessage, "\(host)")
        }
        #expect(Self.isJoined(test.join(5, Self.token("remote"), rtpPort: 40000, peerHost: "192.0.2.7"), 5))
    }

    /// An ingest bound to the server's own RTP address could only ever match the server's own datagrams.
    @Test mutating func anIngestFromTheServersOwnRTPAddressIsRefused() throws {
        let error = #expect(throws: CallError.self) {
            try registry.addIngest(room: "room", participant: "self", displayName: nil, source: MediaSource(host: "127.0.0.1", port: 40000), ssrc: 7)
        }
        #expect(error?.code == .malformedMessage)
        // Without a port, a host's senders pick their own ports: the media loop drops the server's own datagrams.
        _ = try registry.addIngest(room: "room", participant: "lobby", displayName: nil, source: MediaSource(host: "127.0.0.1", port: nil), ssrc: 8)
    }
}

/// `observe`: watching a room without being in it (the dashboard).
@Suite struct ObserverTests {
    var test: RoomRegistryTests

    init() throws { test = try RoomRegistryTests() }

    mutating func observe(_ number: ConnectionID, _ token: String) -> [Effect] {
        test.registry.opened(number, room: "room", peerHost: "127.0.0.1", now: 0)
        return test.registry.received(number, text: ClientMessage.observe(token: token).json, now: 0, epochSeconds: RoomRegistryTests.now)
    }

    @Test mutating func anObserverSeesTheRoomAndNobodySeesIt() throws {
        _ = test.join(1, RoomRegistryTests.token("alice"))
        // The observer's token names alice too: observing is not joining, so no 4014.
        let effects = observe(9, RoomRegistryTests.token("alice", role: .subscriber))
        guard case .observing(let room)? = RoomRegistryTests.messages(effects, to: 9).first else {
            Issue.record("no observing: \(effects)")
            return
        }
        #expect(room.roomID == "room" && room.participants.map(\.id) == ["alice"] && room.speakerID == nil)
        #expect(effects.count == 1, "members hear nothing of an observer: \(effects)")
        #expect(test.registry.room("room")?.participants.count == 1)
        // It gets what the members get.
        let bob = test.join(2, RoomRegistryTests.token("bob"))
        #expect(RoomRegistryTests.messages(bob, to: 9).contains { if case .participantJoined(let p) = $0 { p.id == "bob" } else { false } })
        let floor = test.registry.speakerChanged(room: "room", participant: "bob", time: 1)
        #expect(RoomRegistryTests.messages(floor, to: 9) == [.speakerChanged("bob", time: 1)])
    }

    @Test mutating func anObserverOnlyWatches() {
        _ = test.join(1, RoomRegistryTests.token("alice"))
        _ = observe(9, RoomRegistryTests.token("admin", role: .moderator))
        for message in [ClientMessage.muteMic, .muteParticipant("alice"), .message(.text("hi"), to: nil)] {
            let effects = test.registry.received(9, text: message.json, now: 0, epochSeconds: RoomRegistryTests.now)
            #expect(RoomRegistryTests.errorCode(effects, to: 9) == .notAllowed, "\(message)")
            #expect(RoomRegistryTests.messages(effects, to: 1).isEmpty)
        }
        let again = test.registry.received(9, text: ClientMessage.join(token: RoomRegistryTests.token("admin"), mic: false, webcam: false, rtpPort: nil).json, now: 0, epochSeconds: RoomRegistryTests.now)
        #expect(RoomRegistryTests.errorCode(again, to: 9) == .joinState)
        #expect(test.registry.received(9, text: ClientMessage.ping.json, now: 0, epochSeconds: RoomRegistryTests.now) == [.send(9, .pong)])
    }

    @Test mutating func aGoneObserverGetsNothingMore() {
        _ = observe(9, RoomRegistryTests.token("viewer", role: .subscriber))
        _ = test.registry.closed(9)
        let bob = test.join(2, RoomRegistryTests.token("bob"))
        #expect(RoomRegistryTests.messages(bob, to: 9).isEmpty)
        // One that times out goes too.
        _ = observe(8, RoomRegistryTests.token("viewer", role: .subscriber))
        let swept = test.registry.sweep(now: 100)
        #expect(RoomRegistryTests.errorCode(swept, to: 8) == .timedOut && RoomRegistryTests.closes(swept, 8))
        #expect(test.registry.room("room")?.observers.isEmpty == true)
    }

    @Test mutating func aDeletedRoomClosesItsObservers() throws {
        _ = observe(9, RoomRegistryTests.token("viewer", role: .subscriber))
        let effects = try test.registry.deleteRoom("room")
        #expect(RoomRegistryTests.errorCode(effects, to: 9) == .roomClosed && RoomRegistryTests.closes(effects, 9))
    }

    /// Issue 29: one token took every observer slot of a room, and a moderator's dashboard then got 4004.
    @Test mutating func oneTokenHoldsAtMostFourObserverSlots() {
        let viewer = RoomRegistryTests.token("viewer", role: .subscriber)
        for number in 1...RoomRegistry.maximumObserversPerToken {
            #expect(RoomRegistryTests.errorCode(observe(ConnectionID(rawValue: 100 + number), viewer), to: ConnectionID(rawValue: 100 + number)) == nil)
        }
        let extra = observe(200, viewer)
        #expect(RoomRegistryTests.errorCode(extra, to: 200) == .roomFull && RoomRegistryTests.closes(extra, 200), "\(extra)")
        // Another token still finds a slot; one of the viewer's closing frees one for it.
        #expect(RoomRegistryTests.errorCode(observe(300, RoomRegistryTests.token("moderator", role: .moderator)), to: 300) == nil)
        _ = test.registry.closed(101)
        #expect(RoomRegistryTests.errorCode(observe(201, viewer), to: 201) == nil)
        #expect(test.registry.room("room")?.observers.count == RoomRegistry.maximumObserversPerToken + 1)
    }

    @Test mutating func badTokensAndOtherRoomsAreRefused() {
        #expect(RoomRegistryTests.errorCode(observe(9, "garbage"), to: 9) == .invalidToken)
        #expect(RoomRegistryTests.errorCode(observe(8, RoomRegistryTests.token("v", room: "elsewhere")), to: 8) == .wrongRoom)
    }
}

@testable import CallServer
import CallProtocol
import Dispatch
import Synchronization
import Testing
import TestSupport

/// Holds the opens of one room in `WebRTCSessions.openGate` until released.
private final class OpenGate: Sendable {
    let room: CallRoomID
    /// Opens of `room` that reached the gate.
    let arrived = Atomic<Int>(0)
    private let held = DispatchGroup()
    private let released = Atomic<Bool>(false)

    init(room: CallRoomID) {
        self.room = room
        held.enter()
    }

    func pass(_ room: CallRoomID) {
        guard room == self.room else { return }
        arrived.add(1, ordering: .relaxed)
        held.wait()
    }

    /// Lets every held open and every later one through. Idempotent.
    func release() {
        if !released.exchange(true, ordering: .relaxed) { held.leave() }
    }
}

/// Issue 29: one serial WebRTC queue for the whole server, never cancelled. Offers of connections that
/// closed were still answered, and they delayed other rooms' browsers.
@Suite(.serialized, .enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"))
struct WebRTCSessionsTests {
    static func answered(_ client: RawCallClient) -> Bool {
        client.messages.contains { if case .answer = $0 { true } else { false } }
    }

    @Test func closedConnectionsOffersAreCancelledATokenHasTwoInFlightAndOtherRoomsDoNotWait() throws {
        let server = try CallTestServer.server(rooms: ["a", "b"], iceHost: "127.0.0.1")
        defer { server.stop() }
        let gate = OpenGate(room: CallRoomID("a"))
        defer { gate.release() }
        server.webRTCSessions.openGate.withLock { $0 = { room, _ in gate.pass(room) } }

        // Two join/offer/close cycles of one token in room a, each offer held at the gate. A join with
        // the same token succeeds only once the room took the previous close (and with it the
        // session's close command).
        for cycle in 1...2 {
            let mallory = try RawCallClient(server, "mallory", withoutMedia: true, room: "a")
            try #require(Waiting.until { mallory.joined }, "cycle \(cycle): \(mallory.messages)")
            mallory.send(.offer(sdp: ChromiumOffer.audio))
            try #require(Waiting.until { gate.arrived.load(ordering: .relaxed) == cycle }, "cycle \(cycle): the open did not start")
            mallory.close()
        }
        let mallory = try RawCallClient(server, "mallory", withoutMedia: true, room: "a")
        try #require(Waiting.until { mallory.joined }, "\(mallory.messages)")
        mallory.send(.offer(sdp: ChromiumOffer.audio))
        let refused = try #require(Waiting.until { !mallory.errors.isEmpty } ? mallory.errors.first : nil, "\(mallory.messages)")
        #expect(refused.code == .rateLimited, "\(refused)")

        // Room b's browser is answered while room a's offers are held.
        let bob = try RawCallClient(server, "bob", withoutMedia: true, room: "b")
        try #require(Waiting.until { bob.joined })
        bob.send(.offer(sdp: ChromiumOffer.audio))
        #expect(Waiting.until { Self.answered(bob) }, "room b waited for room a: \(bob.messages)")
        #expect(gate.arrived.load(ordering: .relaxed) == 2 && !Self.answered(mallory))

        // Released, the closed connections' offers are cancelled: no peer is built for them.
        gate.release()
        #expect(Waiting.until { server.webRTCSessions.outcomes.withLock { $0.cancelled } == 2 })
        #expect(server.webRTCSessions.outcomes.withLock { $0.built } == 1)
        // The token's budget is back: its live connection's offer is answered.
        mallory.send(.offer(sdp: ChromiumOffer.audio))
        #expect(Waiting.until { Self.answered(mallory) }, "\(mallory.messages)")
        #expect(server.webRTCSessionCount == 2)
    }

    /// Issue 29: a client on the server's host joined room a with `rtpPort` set to a room-b browser's relay
    /// socket, and that browser heard room a. Through a real server: the join is refused.
    @Test func aJoinNamingABrowsersRelaySocketIsRefused() throws {
        let server = try CallTestServer.server(rooms: ["a", "b"], iceHost: "127.0.0.1")
        defer { server.stop() }
        let listener = try RawCallClient(server, "listener", role: .subscriber, withoutMedia: true, room: "b")
        try #require(Waiting.until { listener.joined })
        listener.send(.offer(sdp: ChromiumOffer.audio))
        try #require(Waiting.until { Self.answered(listener) }, "\(listener.messages)")
        let relay = try #require(server.webRTCSessions.relayEndpoints.first)
        let mallory = try RawCallClient(server, "mallory", rtpPort: relay.port, room: "a")
        #expect(Waiting.until { mallory.errorCode != nil }, "\(mallory.messages)")
        #expect(mallory.errorCode == .malformedMessage && !mallory.joined, "\(mallory.messages)")
        // The same client with its own port joins.
        let carol = try RawCallClient(server, "carol", room: "a")
        #expect(Waiting.until { carol.joined })
    }
}

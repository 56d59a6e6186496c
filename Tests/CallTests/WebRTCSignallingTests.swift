import CallProtocol
import CallServer
import CallWebRTC
import Foundation
import Testing
import TestSupport

/// Whether a WebRTC peer can be made here (GStreamer with webrtcbin, libnice, dtls, srtp).
enum WebRTCAvailable {
    static let peer: Bool = {
        guard let peer = try? WebRTCPeer(configuration: WebRTCConfiguration(), onCandidate: { _, _ in }, onPacket: { _ in }, onState: { _ in }) else {
            return false
        }
        peer.close()
        return true
    }()
}

/// `offer` and `ice-candidate` through a real room server, without a browser (Chromium's captured
/// offer): bad input gets an `error` and leaves the room as it was; a good offer is answered.
@Suite(.serialized, .enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"))
struct WebRTCSignallingTests {
    static let hostCandidate = ICECandidate(candidate: "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host", sdpMLineIndex: 0)

    /// Waits for the `count`-th error of `client` and returns it.
    static func error(_ count: Int, of client: RawCallClient) throws -> CallError {
        try #require(Waiting.until { client.errors.count >= count }, "no error \(count): \(client.messages)")
        return client.errors[count - 1]
    }

    @Test func badOffersAndCandidatesAreRefusedAndTheRoomStaysAsItWas() throws {
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        let alice = try RawCallClient(server, "alice", withoutMedia: true)
        let bob = try RawCallClient(server, "bob")
        try #require(Waiting.until { alice.joined && bob.joined })

        alice.send(.iceCandidate(Self.hostCandidate))
        #expect(try Self.error(1, of: alice).code == .joinState)
        alice.send(.offer(sdp: "v=0\r\nthis is not SDP\r\n"))
        let malformed = try Self.error(2, of: alice)
        #expect(malformed.code == .malformedMessage && malformed.message.contains("malformed SDP"), "\(malformed)")
        alice.send(.offer(sdp: ChromiumOffer.withoutFingerprint))
        let unsigned = try Self.error(3, of: alice)
        #expect(unsigned.code == .malformedMessage && unsigned.message.contains("fingerprint"), "\(unsigned)")
        alice.send(.offer(sdp: ChromiumOffer.videoOnly))
        let silent = try Self.error(4, of: alice)
        #expect(silent.code == .malformedMessage && silent.message.contains("no audio"), "\(silent)")
        alice.send(.offer(sdp: ChromiumOffer.withoutOpus))
        #expect(try Self.error(5, of: alice).code == .malformedMessage)

        // Nobody left, nobody else heard of it, both still answer.
        alice.ping()
        bob.ping()
        try #require(Waiting.until { alice.pongs == 1 && bob.pongs == 1 })
        #expect(bob.errors.isEmpty)
        #expect(!bob.messages.contains { if case .participantLeft = $0 { true } else { false } })
        #expect(server.webRTCSessionCount == 0)

        // The same connection's good offer is answered, and the server's candidates follow the answer.
        alice.send(.offer(sdp: ChromiumOffer.audio))
        try #require(Waiting.until { alice.messages.contains { if case .iceCandidate = $0 { true } else { false } } }, "\(alice.messages)")
        let messages = alice.messages
        let answerIndex = try #require(messages.firstIndex { if case .answer = $0 { true } else { false } })
        let firstCandidate = try #require(messages.firstIndex { if case .iceCandidate = $0 { true } else { false } })
        #expect(answerIndex < firstCandidate)
        guard case .answer(let sdp) = messages[answerIndex], case .iceCandidate(let candidate) = messages[firstCandidate] else { return }
        #expect(sdp.lowercased().contains("a=rtpmap:111 opus/48000/2"), "\(sdp)")
        #expect(candidate.candidate.contains("127.0.0.1"), "\(candidate)")
        #expect(server.webRTCSessionCount == 1)

        // Its bad candidates are refused one by one; a second offer too.
        alice.send(.iceCandidate(ICECandidate(candidate: "candidate:garbage", sdpMLineIndex: 0)))
        #expect(try Self.error(6, of: alice).code == .malformedMessage)
        alice.send(.iceCandidate(ICECandidate(candidate: Self.hostCandidate.candidate, sdpMLineIndex: 7)))
        #expect(try Self.error(7, of: alice).code == .malformedMessage)
        alice.send(.iceCandidate(Self.hostCandidate))
        alice.send(.offer(sdp: ChromiumOffer.audio))
        #expect(try Self.error(8, of: alice).code == .joinState)
        #expect(alice.errors.count == 8, "a good candidate was refused: \(alice.errors)")

        // Leaving closes the session.
        alice.send(.leave)
        #expect(Waiting.until { server.webRTCSessionCount == 0 })
        #expect(bob.errors.isEmpty)
    }

    /// Issue 29: `a=extmap:/ …` (or `//`) killed the process in `OfferSummary`; offers with many m-lines
    /// made webrtcbin build a transport (threads, sockets) per m-line. Each is refused with 4007, from a
    /// subscriber as from a publisher, and the room carries on.
    @Test func offersThatTrappedOrFloodedTheServerAreRefused() throws {
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        let viewer = try RawCallClient(server, "viewer", role: .subscriber, withoutMedia: true)
        let alice = try RawCallClient(server, "alice", withoutMedia: true)
        try #require(Waiting.until { viewer.joined && alice.joined })
        let offers: [(client: RawCallClient, sdp: String, reason: String)] = [
            (viewer, ChromiumOffer.withExtmap("extmap:/ urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:/ "),
            (alice, ChromiumOffer.withExtmap("extmap:// urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:// "),
            (alice, ChromiumOffer.audioMLines(2), "2 m-lines"),
            (viewer, ChromiumOffer.audioMLines(30), "30 m-lines"),
        ]
        for (client, sdp, reason) in offers {
            let before = client.errors.count
            client.send(.offer(sdp: sdp))
            let error = try Self.error(before + 1, of: client)
            #expect(error.code == .malformedMessage && error.message.contains(reason), "\(error)")
        }
        #expect(server.webRTCSessionCount == 0)
        // Both still in the room, and their good offers are answered.
        viewer.ping()
        alice.ping()
        try #require(Waiting.until { viewer.pongs == 1 && alice.pongs == 1 })
        viewer.send(.offer(sdp: ChromiumOffer.audio))
        alice.send(.offer(sdp: ChromiumOffer.audio))
        let answered = Waiting.until {
            [viewer, alice].allSatisfy { client in client.messages.contains { if case .answer = $0 { true } else { false } } }
        }
        #expect(answered, "\(viewer.messages) \(alice.messages)")
        #expect(server.webRTCSessionCount == 2)
    }

    @Test func aTokenOfAnotherRoomAndAPlainRTPParticipantCannotOffer() throws {
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        let eve = try RawCallClient(server, "eve", withoutMedia: true, token: CallTestServer.token("eve", room: "elsewhere"))
        #expect(try Self.error(1, of: eve).code == .wrongRoom)
        eve.send(.offer(sdp: ChromiumOffer.audio))
        let carol = try RawCallClient(server, "carol")
        try #require(Waiting.until { carol.joined })
        carol.send(.offer(sdp: ChromiumOffer.audio))
        #expect(try Self.error(1, of: carol).code == .joinState)
        // An offer on a connection that never joined.
        let mallory = try RawCallClient(server, "mallory", withoutMedia: true, token: "not-a-token")
        #expect(try Self.error(1, of: mallory).code == .invalidToken)
        carol.ping()
        try #require(Waiting.until { carol.pongs == 1 })
        #expect(server.webRTCSessionCount == 0)
        #expect(eve.errors.count == 1)
    }

    /// A subscriber's offer is answered (it only listens), and its session ends with its connection.
    @Test func aSubscriberListensAndItsSessionEndsWithItsConnection() throws {
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        let viewer = try RawCallClient(server, "viewer", role: .subscriber, withoutMedia: true)
        try #require(Waiting.until { viewer.joined })
        viewer.send(.offer(sdp: ChromiumOffer.audio))
        try #require(Waiting.until { viewer.messages.contains { if case .answer = $0 { true } else { false } } }, "\(viewer.messages)")
        #expect(server.webRTCSessionCount == 1)
        viewer.close()
        #expect(Waiting.until { server.webRTCSessionCount == 0 })
    }
}

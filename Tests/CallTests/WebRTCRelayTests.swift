@testable import CallServer
import CallProtocol
import CallWebRTC
import SpeakerRTP
import Testing
import TestSupport

/// The relay between a browser's peer and the media loop, without a media loop: the test's socket
/// stands in for it.
@Suite(.enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"))
struct WebRTCRelayTests {
    static func packet(ssrc: UInt32, sequence: UInt16) -> [UInt8] {
        [0x80, 111, UInt8(sequence >> 8), UInt8(sequence & 0xFF), 0, 0, 0, 1]
            + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: ssrc >> $0) } + [0xFC, 1, 2, 3]
    }

    /// Issue 29: the relay took anything from the media loop's address, so a member of another room
    /// whose `rtpPort` named the relay's socket had its room's audio forwarded into this browser.
    @Test func theRelayPassesOnlyItsMixSSRC() throws {
        let mediaLoop = try UDPSocket(address: "127.0.0.1:0")
        var configuration = WebRTCConfiguration()
        configuration.iceHost = "127.0.0.1"
        let relay = try WebRTCRelay(
            configuration: configuration, host: "127.0.0.1", mediaLoop: mediaLoop.localAddress, ssrc: nil,
            onCandidate: { _, _ in }, onState: { _ in })
        defer { relay.close() }
        let target = try #require(SocketAddress(host: relay.endpoint.host, port: relay.endpoint.port))
        for sequence in 0..<10 {
            // Room a's publisher, forwarded, then the relay's own mix.
            let bytes = Self.packet(ssrc: sequence.isMultiple(of: 2) ? 1001 : relay.mixSSRC.rawValue, sequence: UInt16(sequence))
            #expect(bytes.withUnsafeBytes { mediaLoop.send($0, to: target) })
        }
        #expect(Waiting.until { relay.relayed.load(ordering: .relaxed) + relay.refused.load(ordering: .relaxed) == 10 })
        #expect(relay.relayed.load(ordering: .relaxed) == 5 && relay.refused.load(ordering: .relaxed) == 5)
    }
}

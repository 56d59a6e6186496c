import CallProtocol
internal import CallWebRTC
import Foundation
import SpeakerRTP
import Synchronization

/// One browser's WebRTC session in a room: its `WebRTCPeer` and a UDP socket of its own on the
/// loopback (or the RTP socket's host), through which the session takes part in the media loop as an
/// ordinary RTP member would.
///
/// - In: each packet the browser sends (`onPacket`, decrypted) gets the participant's SSRC and is sent
///   from the relay's socket to the media loop's RTP port. The registry binds that socket's address and
///   the SSRC to the participant, so the media loop accepts, drops (muted, over budget) and counts
///   these packets like any publisher's, decodes them for the engine and forwards them. A subscriber
///   (no SSRC) sends nothing.
/// - Out: the media loop sends the relay's socket one stream, the room's other publishers mixed
///   (`WebRTCMix`) under `mixSSRC`, which the relay chose; the relay passes on nothing else (issue 29: a
///   member of another room that named the relay's socket as its `rtpPort` had its room's audio
///   forwarded into this browser). Should the loop have no mix for the member (libopus refused an
///   encoder), it forwards the others' packets, which the relay drops: the browser hears nothing. The
///   relay's thread takes the datagrams that come from the media loop's address with the mix's SSRC
///   (others are dropped and counted in `refused`), lets `ForwardedSourceSelector` pass one source at a
///   time (the mix is the only one), and hands its packets to `peer.send(rtp:)` (which gives them the
///   session's own SSRC and sequence).
///
/// Threads: `onPacket` runs on webrtcbin's receive thread; the relay thread (`activespeaker-webrtc-relay`)
/// waits on the socket; `close()` must come from neither (it waits for both), nor from a WebRTC
/// callback (`WebRTCPeer.close()`'s precondition): `WebRTCSessions` calls it on its own queue.
final class WebRTCRelay: Sendable {
    let peer: WebRTCPeer
    /// Where the relay's socket is bound: the media binding's sender and receiver.
    let endpoint: MediaEndpoint
    /// The SSRC of the mix the media loop sends this relay: the only one passed to the browser.
    let mixSSRC = SSRC(UInt32.random(in: 1...UInt32.max))
    /// Datagrams from the media loop's address passed to the peer, and dropped for another SSRC (or not RTP).
    let relayed = Atomic<Int>(0), refused = Atomic<Int>(0)
    private let socket: UDPSocket
    private let stopFlag = Atomic<Bool>(false)
    private let running = DispatchGroup()

    /// Opens the socket and the peer (not yet answered) and starts the relay thread.
    /// - Parameters:
    ///   - host: Numeric host to bind the relay's socket on, of the media loop's family.
    ///   - mediaLoop: The media loop's RTP address, as reachable from `host`.
    ///   - ssrc: The participant's SSRC; nil for a subscriber, whose packets are not relayed.
    ///   - onCandidate: The peer's local candidates (`candidate:…`, m-line index), from webrtcbin's threads.
    ///   - onState: The peer's connection state, from webrtcbin's threads.
    /// - Throws: `WebRTCError.pipeline` when the socket or the peer cannot be made.
    init(
        configuration: WebRTCConfiguration, host: String, mediaLoop: SocketAddress, ssrc: SSRC?,
        onCandidate: @escaping @Sendable (String, Int) -> Void, onState: @escaping @Sendable (Bool) -> Void
    ) throws(WebRTCError) {
        let socket: UDPSocket
        do {
            socket = try UDPSocket(address: host.contains(":") ? "[\(host)]:0" : "\(host):0")
        } catch {
            throw .pipeline("relay socket on \(host): \(error)")
        }
        self.socket = socket
        endpoint = MediaEndpoint(host: host, port: socket.port)
        peer = try WebRTCPeer(
            configuration: configuration, onCandidate: onCandidate,
            onPacket: { packet in
                guard let ssrc else { return }
                Self.relay(packet, as: ssrc, from: socket, to: mediaLoop)
            },
            onState: onState)
        running.enter()
        // The thread holds the relay until `close()` ends it.
        let thread = Thread { [self] in
            forward(mediaLoop: mediaLoop)
            running.leave()
        }
        thread.name = "activespeaker-webrtc-relay"
        thread.start()
    }

    /// Stops the relay thread and closes the peer (its streaming threads end before this returns).
    /// Idempotent. Never from a WebRTC callback or the relay's own thread.
    func close() {
        stopFlag.store(true, ordering: .releasing)
        running.wait()
        peer.close()
    }

    /// A browser's packet, as the participant's, to the media loop. RTP only (version 2, 12 bytes or more).
    private static func relay(_ packet: [UInt8], as ssrc: SSRC, from socket: UDPSocket, to mediaLoop: SocketAddress) {
        guard packet.count >= 12, packet[0] >> 6 == 2 else { return }
        var bytes = packet
        let value = ssrc.rawValue
        bytes[8] = UInt8(truncatingIfNeeded: value >> 24)
        bytes[9] = UInt8(truncatingIfNeeded: value >> 16)
        bytes[10] = UInt8(truncatingIfNeeded: value >> 8)
        bytes[11] = UInt8(truncatingIfNeeded: value)
        bytes.withUnsafeBytes { _ = socket.send($0, to: mediaLoop) }
    }

    /// The relay thread: the media loop's mix (or, without one, its forwarded packets, one source at a
    /// time) to the browser.
    private func forward(mediaLoop: SocketAddress) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var selector = ForwardedSourceSelector()
        var source = SocketAddress(host: "0.0.0.0", port: 0)!
        while !stopFlag.load(ordering: .acquiring) {
            guard UDPSocket.wait([socket], timeout: 0.1) else { continue }
            while let count = socket.receive(into: buffer, from: &source) {
                guard source.unmapped == mediaLoop.unmapped else { continue }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                guard case .packet(let packet) = RTPPacket.parse(bytes, audioLevelID: 1), packet.ssrc == mixSSRC.rawValue else {
                    refused.add(1, ordering: .relaxed)
                    continue
                }
                let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
                guard selector.admits(ssrc: packet.ssrc, dBov: packet.audioLevel.map { Double($0.dBov) }, now: now) else { continue }
                relayed.add(1, ordering: .relaxed)
                peer.send(rtp: Array(bytes))
            }
        }
    }
}

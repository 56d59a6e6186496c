import Dispatch
import SpeakerRTP
import Synchronization

/// Counts the forwarded RTP packets that reach a meeting's UDP socket, per SSRC.
///
/// Driven by the socket: a `DispatchSourceRead` on a private serial queue runs when datagrams are
/// waiting and reads them all (the socket does not block). No thread of its own, no polling. It holds
/// no reference to the `Meeting`, so a meeting is never deinitialised on its queue.
///
/// `@unchecked Sendable`: the stored properties never change; a dispatch source may be cancelled from
/// any thread; the counts are behind a `Mutex`.
final class ForwardedPacketCounter: @unchecked Sendable {
    /// A box for the counts, shared with the read handler.
    private final class Counts: Sendable {
        let bySSRC = Mutex<[UInt32: Int]>([:])
        /// Where datagrams go to be played, if anywhere.
        let player = Mutex<MeetingPlayer?>(nil)
    }

    private let counts = Counts()
    private let source: any DispatchSourceRead

    /// Starts counting what arrives on `socket`, and hands each datagram to `player` when there is one.
    init(socket: UDPSocket, player: MeetingPlayer? = nil) {
        counts.player.withLock { $0 = player }
        source = DispatchSource.makeReadSource(fileDescriptor: socket.descriptor, queue: DispatchQueue(label: "activespeaker.meeting.receive"))
        source.setEventHandler { [counts] in
            var buffer = [UInt8](repeating: 0, count: 2048)
            buffer.withUnsafeMutableBytes { bytes in
                while let count = socket.receive(into: bytes) {
                    let datagram = UnsafeRawBufferPointer(rebasing: bytes[..<count])
                    if case .packet(let packet) = RTPPacket.parse(datagram) {
                        counts.bySSRC.withLock { $0[packet.ssrc, default: 0] += 1 }
                        counts.player.withLock { $0 }?.insert(datagram)
                    }
                }
            }
        }
        // The socket (its descriptor) stays open until the source has let go of it.
        source.setCancelHandler { withExtendedLifetime(socket) {} }
        source.resume()
    }

    /// Hands every datagram from now on to `player` too (a player opened after joining).
    func play(to player: MeetingPlayer) {
        counts.player.withLock { $0 = player }
    }

    /// The packets counted so far, per SSRC.
    var bySSRC: [UInt32: Int] { counts.bySSRC.withLock { $0 } }

    /// Stops counting; the counts stay. Idempotent; never waits for the queue.
    func stop() {
        source.cancel()
    }
}

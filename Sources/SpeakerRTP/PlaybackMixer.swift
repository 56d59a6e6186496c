import SpeakerBase
/// What a participant hears: the call's forwarded RTP streams (Opus), each through its own jitter
/// buffer and decoder, summed into one 16 kHz mono signal, 10 ms at a time.
///
/// A stream is created on its SSRC's first packet and forgotten by `removeStream`. The mix is the plain
/// sum, limited to −1…1 (two loud talkers at once clip; a call rarely has more than one).
/// One thread owns a mixer (`insert` and `pull` on it); nothing allocates after a stream's creation.
///
/// ```swift
/// let mixer = PlaybackMixer()
/// _ = mixer.insert(datagram: bytes, tick: tick)          // as datagrams arrive
/// mixer.pull(tick: tick, into: hop); try speaker.write(…) // every 10 ms
/// ```
public final class PlaybackMixer {
    /// The jitter buffer of each stream.
    public let configuration: JitterBufferConfiguration
    /// Streams mixed at most; packets of further SSRCs are refused.
    public let maximumStreams: Int

    private var streams: [UInt32: RTPStreamReceiver] = [:]
    private var order: [UInt32] = []
    private let scratch = UnsafeMutableBufferPointer<Float>.allocate(capacity: PlaybackMixer.hopSize)

    /// Samples in one tick's hop: 10 ms at 16 kHz, as the jitter buffers play.
    public static let hopSize = AnalysisFormat.hopSize

    public init(configuration: JitterBufferConfiguration = JitterBufferConfiguration(), maximumStreams: Int = 32) {
        self.configuration = configuration
        self.maximumStreams = maximumStreams
    }

    deinit { scratch.deallocate() }

    /// The SSRCs being mixed, in the order they first sent.
    public var ssrcs: [UInt32] { order }

    /// Takes one datagram that arrived during tick `tick`.
    /// - Returns: What the stream's jitter buffer did with it; nil for a datagram that is not RTP
    ///   (or is RTCP), or a new SSRC beyond `maximumStreams`.
    public func insert(datagram: UnsafeRawBufferPointer, tick: Int) -> RTPStreamReceiver.Insertion? {
        guard !RTPPacket.isRTCP(datagram), case .packet(let packet) = RTPPacket.parse(datagram) else { return nil }
        if streams[packet.ssrc] == nil {
            guard streams.count < maximumStreams,
                let stream = try? RTPStreamReceiver(ssrc: packet.ssrc, mode: .decode, configuration: configuration, startTick: tick)
            else { return nil }
            // A stream joins the mix at the current tick; its first pull is this tick's.
            streams[packet.ssrc] = stream
            order.append(packet.ssrc)
        }
        return streams[packet.ssrc]!.insert(packet, datagram: datagram)
    }

    /// Forgets a stream (its participant left).
    public func removeStream(ssrc: UInt32) {
        streams[ssrc] = nil
        order.removeAll { $0 == ssrc }
    }

    /// Writes tick `tick`'s 10 ms of the mix (160 samples) into `hop`: each stream's decoded or
    /// concealed audio, or nothing where it is silent. Call once per tick, in order.
    public func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) {
        precondition(hop.count == Self.hopSize, "a hop is \(Self.hopSize) samples")
        hop.update(repeating: 0)
        for ssrc in order {
            guard case .audio = streams[ssrc]!.pull(tick: tick, into: scratch) else { continue }
            for index in 0..<hop.count { hop[index] += scratch[index] }
        }
        for index in 0..<hop.count { hop[index] = max(-1, min(1, hop[index])) }
    }
}

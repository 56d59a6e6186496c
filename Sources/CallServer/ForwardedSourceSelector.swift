/// Which of a room's forwarded streams a WebRTC session passes on to its browser.
///
/// The server answers a browser with one audio track (webrtcbin's one send transceiver, no
/// renegotiation). The media loop normally sends it one stream, the mix (`WebRTCMix`), which this
/// selector passes; only when a member has no mix (libopus refused an encoder) does it forward every
/// publisher's packets, and then of several members sending at once the browser hears one at a time.
/// The selector keeps the stream it has (no switching mid-word) until another is clearly louder or it
/// stops:
/// - each source's loudness is the RFC 6464 level of its packets (dBov), smoothed per packet
///   (`smoothing`: about 10 packets, 200 ms of Opus at 20 ms); a packet without a level counts as −127;
/// - another source takes over when its smoothed loudness exceeds the current one's by `margin` dB,
///   or when the current source has sent nothing for `silence` seconds (it left, was muted, paused).
///
/// A plain value owned by one relay thread.
struct ForwardedSourceSelector {
    /// Seconds without a packet after which the current source is given up.
    static let silence = 0.2
    /// dB by which another source must be louder (smoothed) to take over.
    static let margin = 6.0
    /// Weight of each new packet's level in its source's smoothed loudness.
    static let smoothing = 0.1
    /// Sources remembered at most; beyond that only the current one is kept.
    static let maximumSources = 64

    /// The SSRC whose packets pass; nil before the first packet.
    private(set) var current: UInt32?
    private var lastFromCurrent = -Double.infinity
    /// Smoothed loudness per SSRC, dBov (−127…0).
    private var loudness: [UInt32: Double] = [:]

    /// Whether a forwarded packet of `ssrc`, with RFC 6464 level `dBov` (nil: none), arriving at `now`
    /// (seconds, any monotonic origin) goes to the browser.
    /// - Complexity: O(1) amortised.
    mutating func admits(ssrc: UInt32, dBov: Double?, now: Double) -> Bool {
        let level = max(-127, min(0, dBov ?? -127))
        let smoothed = loudness[ssrc].map { $0 + Self.smoothing * (level - $0) } ?? level
        if loudness[ssrc] == nil, loudness.count >= Self.maximumSources {
            loudness = current.flatMap { id in loudness[id].map { [id: $0] } } ?? [:]
        }
        loudness[ssrc] = smoothed
        if let holder = current, holder != ssrc {
            let stopped = now - lastFromCurrent > Self.silence
            let louder = smoothed > (loudness[holder] ?? -127) + Self.margin
            if stopped || louder { current = ssrc }
        } else if current == nil {
            current = ssrc
        }
        guard current == ssrc else { return false }
        lastFromCurrent = now
        return true
    }
}

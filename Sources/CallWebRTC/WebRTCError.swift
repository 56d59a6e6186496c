/// Why a `WebRTCPeer` call failed. Each case carries what failed.
public enum WebRTCError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The offer is not an SDP offer this peer can use; the text says why.
    case malformedSDP(String)
    /// The offer has no audio m-line offering Opus at 48 kHz.
    case noAudio
    /// A remote ICE candidate was refused; the text says which and why.
    case candidate(String)
    /// webrtcbin did not answer within the time allowed; the text names the step.
    case timeout(String)
    /// GStreamer could not be started or built, or the peer was used out of order; the text says what.
    case pipeline(String)

    public var description: String {
        switch self {
        case .malformedSDP(let why): "malformed SDP offer: \(why)"
        case .noAudio: "the offer has no audio m-line with Opus/48000/2"
        case .candidate(let why): "bad ICE candidate: \(why)"
        case .timeout(let step): "webrtcbin did not finish \(step) in time"
        case .pipeline(let why): "WebRTC pipeline: \(why)"
        }
    }
}

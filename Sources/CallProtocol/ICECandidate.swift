/// One ICE candidate of a browser's WebRTC session, as `RTCIceCandidate` has it: `candidate` is the
/// SDP attribute's value (`candidate:…`, without `a=`; empty: the end of the candidates) and
/// `sdpMLineIndex` the offer's m-line it belongs to (0 for the audio of the meeting page).
/// The `ice-candidate` message carries one, in both directions (docs/call.md).
public struct ICECandidate: Codable, Sendable, Hashable {
    public var candidate: String
    /// 0-based index of the m-line in the offer.
    public var sdpMLineIndex: Int
    /// The m-line's `a=mid`, when the sender knows it; informational (the index decides).
    public var sdpMid: String?

    public init(candidate: String, sdpMLineIndex: Int, sdpMid: String? = nil) {
        self.candidate = candidate
        self.sdpMLineIndex = sdpMLineIndex
        self.sdpMid = sdpMid
    }

    /// The longest candidate accepted (RFC 8839 lines are far shorter).
    public static let maximumLength = 1024
}

/// How a `WebRTCPeer` gathers its ICE candidates.
public struct WebRTCConfiguration: Sendable, Equatable {
    /// A STUN server, `stun://host:port`, for a server-reflexive candidate; nil: host candidates only.
    public var stunServer: String?
    /// The one local address to gather host candidates on (`127.0.0.1` in tests); nil: every interface.
    public var iceHost: String?
    /// Milliseconds webrtcbin's jitter buffer holds packets from the browser before `onPacket` sees them
    /// (0…1000). Small: the room server has its own jitter buffer.
    public var receiveLatency: Int = 20

    public init() {}
}

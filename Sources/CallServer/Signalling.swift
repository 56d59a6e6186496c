import CallProtocol

/// A signalling connection, as the registry knows it: an opaque number given by the transport.
public typealias ConnectionNumber = Int

/// Something the registry asks the transport or the media loop to do.
enum Effect: Equatable, Sendable {
    /// Send a message on a connection.
    case send(ConnectionNumber, ServerMessage)
    /// Close a connection (after what was sent before) with a WebSocket close code: 1000 normal,
    /// 1008 policy violation (a client over its message budget).
    case close(ConnectionNumber, code: UInt16 = 1000)
    /// Change the media plane.
    case media(MediaCommand)
}

/// What the media loop must know of the rooms: who may send, from where, and who receives.
enum MediaCommand: Equatable, Sendable {
    /// A room appears: the engine gets a room for it.
    case openRoom(room: String)
    /// A room goes: its streams and members go with it.
    case closeRoom(room: String)
    /// A member that receives forwarded audio on `receiver` (nil: receives none), and, when
    /// `sender` is set, publishes with `ssrc` from that address.
    case addMember(room: String, participant: String, ssrc: UInt32?, sender: MediaSource?, receiver: MediaEndpoint?)
    case removeMember(room: String, participant: String)
    /// A publisher's packets are dropped while muted (its audio stream disabled counts as muted).
    case setMuted(room: String, participant: String, muted: Bool)
}

/// Where a publisher's RTP must come from: a host, and a port unless any port of the host is accepted
/// (plain-RTP ingest without a port).
struct MediaSource: Hashable, Sendable {
    var host: String
    var port: Int?
}

/// Where forwarded RTP is sent.
struct MediaEndpoint: Hashable, Sendable {
    var host: String
    var port: Int
}

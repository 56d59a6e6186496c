import CallProtocol

/// A live node, as it registers itself on every heartbeat.
struct NodeRecord: Codable, Sendable, Hashable {
    var id: String
    /// A random id of the process, so that a second process started with the same `--node-id` is told apart.
    var instance: String
    /// The cluster protocol this node speaks; nodes of another version refuse to join.
    var protocolVersion: Int
    /// `http://HOST:PORT` (or https) of the HTTP API.
    var http: String
    /// `ws://HOST:PORT/v1/signal` (or wss) of the signalling WebSocket.
    var signal: String
    var rtpHost: String
    var rtpPort: Int
    var rooms: Int
    var participants: Int
    /// Share of one core this process used over the last heartbeat interval.
    var cpu: Double
    /// Milliseconds since 1970 of this record.
    var updated: Int

    /// Lower is less loaded: participants first, then rooms.
    var load: (Int, Int) { (participants, rooms) }
}

/// A room of the cluster, hosted or not: what a node needs to host it.
struct RoomRecord: Codable, Sendable, Hashable {
    var roomId: CallRoomID
    var maxParticipants: Int
    /// Created level-only (`POST /v1/rooms` with `levelsOnly`); absent: decoded.
    var levelsOnly: Bool? = nil
}

/// A room as its host last published it (answers `GET /v1/rooms/{id}` and the room list on any node).
struct RoomState: Codable, Sendable, Hashable {
    var roomId: CallRoomID
    var maxParticipants: Int
    var participants: [ParticipantInfo]
    var speakerId: ParticipantID?
    var node: String
}

/// A message between nodes on their inbox channels: a request (an HTTP API call relayed to the node that
/// hosts its room, or "host this room"), or the answer to one.
struct RelayMessage: Codable, Sendable {
    enum Kind: String, Codable, Sendable {
        /// An HTTP API call, answered by the receiving node as if it had been made there.
        case http
        /// "Claim and open this room" (`room`): placement of a new room on the least-loaded node.
        case host
        case answer
    }
    var kind: Kind
    /// Matches an answer to its request.
    var id: String
    /// The node that asks, whose inbox gets the answer.
    var from: String
    var method: String?
    var path: String?
    var query: [String: String]?
    var authorization: String?
    /// Base64 of the request's or answer's body.
    var body: String?
    var room: RoomRecord?
    var status: Int?
    var contentType: String?
}

/// Where a room lives, as a node resolves it before serving a request for it.
enum RoomLocation: Equatable, Sendable {
    /// Open on this node (claimed by it, or claimed just now).
    case here
    /// Hosted by another live node.
    case node(NodeRecord)
    /// The cluster has no such room.
    case absent
    /// Redis cannot be reached (or the claim kept changing hands); the room is not here.
    case unavailable(String)
}

/// The node that gets a new room: the least loaded of the live ones (participants, then rooms), this
/// node on a tie so that a lone node keeps its rooms, then by id so that every node picks the same.
func leastLoaded(_ nodes: [NodeRecord], preferring own: String) -> NodeRecord? {
    nodes.min { a, b in
        if a.load != b.load { return a.load < b.load }
        if (a.id == own) != (b.id == own) { return a.id == own }
        return a.id < b.id
    }
}

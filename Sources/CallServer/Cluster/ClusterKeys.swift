import CallProtocol

/// Every Redis key and channel of the cluster, in one place (docs/call.md, "Redis keys and channels").
enum ClusterKeys {
    static let prefix = "activespeaker:"
    /// Set of the node ids that registered; a member whose record expired is dead (and is pruned).
    static let nodes = prefix + "nodes"
    /// Hash: room id → `RoomRecord` (JSON). The cluster's rooms, hosted or not; no expiry.
    static let rooms = prefix + "rooms"

    /// String: a node's `NodeRecord` (JSON), expiring after the node timeout unless refreshed.
    static func node(_ id: String) -> String { prefix + "node:" + id }
    /// Channel: requests to a node (relayed API calls, room placement) and the answers to its own.
    static func inbox(_ node: String) -> String { prefix + "node:" + node + ":inbox" }
    /// String: the id of the node hosting a room, expiring like the node's record unless refreshed.
    static func host(_ room: CallRoomID) -> String { prefix + "room:" + room.rawValue + ":node" }
    /// String: the room as its host last saw it (`RoomState`, JSON), expiring like the claim.
    static func state(_ room: CallRoomID) -> String { prefix + "room:" + room.rawValue + ":state" }
    /// Channel: the room's events, as `serve` logs them (one JSON line each).
    static func events(_ room: CallRoomID) -> String { prefix + "room:" + room.rawValue + ":events" }
}

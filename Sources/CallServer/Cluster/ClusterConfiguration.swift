import CallProtocol
internal import Redis

/// How a `RoomServer` takes part in a cluster of nodes coordinated through Redis (`serve --redis`;
/// docs/call.md, "Several nodes"). Without one (`RoomServerConfiguration.cluster` nil) the server is
/// a single process with its rooms in memory.
public struct ClusterConfiguration: Sendable {
    /// Where Redis is; its password, if any, is never logged (`redisDescription` hides it).
    let redis: RedisURL
    /// The Redis URL as logs show it: the password, if any, hidden.
    public var redisDescription: String { redis.description }
    /// This node's id, unique in the cluster (`AccessToken.idRule`).
    public var nodeID: String
    /// The host other nodes, clients and senders reach this node at: in redirects, the node list and
    /// MEDIA's `host`.
    public var advertiseHost: String
    /// Seconds between heartbeats (the node record, the claims of its rooms, their state).
    public var heartbeatInterval: Double = 0.5
    /// A node whose record is this old (seconds) is dead for the others, and its rooms can be claimed.
    public var nodeTimeout: Double = 2
    /// Seconds a request relayed to another node (an API call on a room it hosts) waits for the answer.
    public var relayTimeout: Double = 2

    /// - Parameter redis: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` (docs/call.md, "Several nodes").
    /// - Throws: `CallError` (`.malformedMessage`) naming what is wrong with `redis`.
    public init(redis: String, nodeID: String, advertiseHost: String) throws(CallError) {
        do {
            self.redis = try RedisURL(redis)
        } catch {
            throw CallError(.malformedMessage, error.message)
        }
        self.nodeID = nodeID
        self.advertiseHost = advertiseHost
    }
}

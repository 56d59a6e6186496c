import CallProtocol
import Foundation
internal import Redis

/// Publishes a room's events (its `serve` log lines) on the room's Redis channel,
/// `activespeaker:room:<room>:events`, in the order handed over: with several nodes each node publishes its
/// rooms' events (`ClusterNode`), and one process can publish without joining a cluster (`serve
/// --events-redis`, the sidecar's way to Redis). Never blocks the caller: a queue of its own waits for
/// Redis, and while Redis does not answer, events are dropped (a subscriber misses them, as Redis pub/sub
/// does for one that is not connected).
final class RedisEventPublisher: Sendable {
    private let connection: RedisConnection
    private let queue = DispatchQueue(label: "activespeaker.redis.publish")

    init(url: RedisURL, timeout: Double) {
        connection = RedisConnection(url: url, timeout: timeout)
    }

    /// Publishes one of `room`'s events, after those handed over before.
    func publish(room: CallRoomID, line: String) {
        queue.async { [connection] in
            _ = try? connection.command(["PUBLISH", ClusterKeys.events(room), line])
        }
    }

    /// Returns once everything handed over has been published (or dropped), then closes the connection.
    func close() {
        queue.sync {}
        connection.close()
    }
}

import Foundation
import Redis
import Synchronization
import Testing
import TestSupport

/// What a subscriber reported, in order.
final class SubscriberRecord: Sendable {
    struct Message: Equatable, Sendable {
        let channel: String
        let payload: String
    }

    private let record = Mutex<(messages: [Message], states: [Bool])>(([], []))

    var messages: [Message] { record.withLock { $0.messages } }
    var states: [Bool] { record.withLock { $0.states } }

    func subscriber(_ url: String, channels: [String], patterns: [String] = []) throws -> RedisSubscriber {
        RedisSubscriber(
            url: try RedisURL(url), channels: channels, patterns: patterns,
            onMessage: { channel, payload in self.record.withLock { $0.messages.append(Message(channel: channel, payload: payload)) } },
            onState: { connected in self.record.withLock { $0.states.append(connected) } })
    }
}

@Suite(.enabled(if: RedisServer.isAvailable, "needs redis-server and redis-cli: bash tools/install-deps.sh"))
struct RedisSubscriberTests {
    @Test func channelsAndPatterns() throws {
        let server = try RedisServer(password: "pubsub-password")
        let redis = RedisConnection(url: try RedisURL(server.url), timeout: 5)
        let record = SubscriberRecord()
        let subscriber = try record.subscriber(server.url, channels: ["room.1", "room.2"], patterns: ["node.*"])
        subscriber.start()
        defer { subscriber.stop() }
        try #require(Waiting.until { record.states == [true] })

        // onState(true) comes after Redis confirmed every subscription: each publish reaches it now.
        let payload = "{\"speaker\": \"ana\",\n \"level\": -23.5} ü 🎤"
        #expect(try redis.command(["PUBLISH", "room.1", payload]) == .integer(1))
        #expect(try redis.command(["PUBLISH", "other", "not for us"]) == .integer(0))
        #expect(try redis.command(["PUBLISH", "node.b", "hello b"]) == .integer(1))
        #expect(try redis.command(["PUBLISH", "room.2", ""]) == .integer(1))
        let expected: [SubscriberRecord.Message] = [
            .init(channel: "room.1", payload: payload), .init(channel: "node.b", payload: "hello b"),
            .init(channel: "room.2", payload: ""),
        ]
        #expect(Waiting.until { record.messages.count >= expected.count })
        #expect(record.messages == expected)
    }

    @Test func stopEndsTheThreadAndStartAgainResubscribes() throws {
        let server = try RedisServer()
        let redis = RedisConnection(url: try RedisURL(server.url), timeout: 5)
        let record = SubscriberRecord()
        let subscriber = try record.subscriber(server.url, channels: ["news"])
        subscriber.start()
        subscriber.start()  // already running: nothing more
        try #require(Waiting.until { record.states == [true] })
        #expect(try redis.command(["PUBSUB", "NUMSUB", "news"]) == .array([.string("news"), .integer(1)]))

        subscriber.stop()
        // stop() has joined the thread, which closed its connection; Redis sees that shortly after.
        #expect(Waiting.until { (try? redis.command(["PUBSUB", "NUMSUB", "news"])) == .array([.string("news"), .integer(0)]) })
        #expect(record.states == [true])  // a deliberate stop is not reported
        subscriber.stop()  // not running: nothing

        subscriber.start()
        try #require(Waiting.until { record.states == [true, true] })
        #expect(try redis.command(["PUBLISH", "news", "again"]) == .integer(1))
        #expect(Waiting.until { record.messages == [.init(channel: "news", payload: "again")] })
        subscriber.stop()
    }

    /// Redis killed and restarted on the same port: commands fail fast meanwhile, then work again; the
    /// subscriber reports the loss, reconnects, resubscribes, reports it and receives again.
    @Test func redisKilledAndRestarted() throws {
        let server = try RedisServer()
        let redis = RedisConnection(url: try RedisURL(server.url), timeout: 0.5, retryInterval: 0.25)
        let record = SubscriberRecord()
        let subscriber = try record.subscriber(server.url, channels: ["events"], patterns: ["room.*"])
        subscriber.start()
        defer { subscriber.stop() }
        try #require(Waiting.until { record.states == [true] })
        #expect(try redis.command(["PUBLISH", "events", "before"]) == .integer(1))
        #expect(Waiting.until { record.messages.count == 1 })

        server.kill()
        for _ in 0..<3 {
            let started = ContinuousClock.now
            let error = #expect(throws: RedisError.self) { try redis.command(["PUBLISH", "events", "lost"]) }
            #expect(error?.kind == .connection)
            #expect(ContinuousClock.now - started < .seconds(3))
        }
        #expect(Waiting.until { record.states == [true, false] })

        try server.restart()
        #expect(Waiting.until { (try? redis.command(["PING"])) == .status("PONG") })
        #expect(Waiting.until { record.states == [true, false, true] })
        #expect(try redis.command(["PUBLISH", "room.9", "after"]) == .integer(1))
        #expect(try redis.command(["PUBLISH", "events", "after too"]) == .integer(1))
        #expect(Waiting.until { record.messages.count == 3 })
        #expect(record.messages == [
            .init(channel: "events", payload: "before"), .init(channel: "room.9", payload: "after"),
            .init(channel: "events", payload: "after too"),
        ])
    }
}

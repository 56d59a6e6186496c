import Foundation
import Redis
import Testing
import TestSupport

@Suite(.enabled(if: RedisServer.isAvailable, "needs redis-server and redis-cli: bash tools/install-deps.sh"))
struct RedisConnectionTests {
    /// A fresh server and a connection to it; timeouts generous for a loaded machine.
    static func connect(password: String? = nil) throws -> (RedisServer, RedisConnection) {
        let server = try RedisServer(password: password)
        return (server, RedisConnection(url: try RedisURL(server.url), timeout: 5))
    }

    @Test func stringsAndCounters() throws {
        let (server, redis) = try Self.connect()
        #expect(!redis.isConnected)
        #expect(try redis.command(["SET", "greeting", "hello"]) == .status("OK"))
        #expect(redis.isConnected)
        #expect(try redis.command(["GET", "greeting"]) == .string("hello"))
        #expect(try redis.command(["GET", "missing"]) == .null)
        #expect(try redis.command(["INCR", "count"]) == .integer(1))
        #expect(try redis.command(["INCR", "count"]).integer == 2)
        #expect(try redis.command(["DEL", "greeting", "count", "missing"]) == .integer(2))
        #expect(try redis.command(["GET", "greeting"]) == .null)
        redis.close()
        #expect(!redis.isConnected)
        #expect(try redis.command(["PING"]).string == "PONG")
        _ = server
    }

    /// An error reply is a value; the connection stays usable.
    @Test func errorRepliesAreValues() throws {
        let (server, redis) = try Self.connect()
        _ = try redis.command(["SET", "text", "abc"])
        let reply = try redis.command(["INCR", "text"])
        guard case .error(let message) = reply else {
            Issue.record("expected an error reply, got \(reply)")
            return
        }
        #expect(message.hasPrefix("ERR"))
        #expect(try redis.command(["NOSUCHCOMMAND"]).string == nil)
        #expect(try redis.command(["GET", "text"]) == .string("abc"))
        _ = server
    }

    /// A lock as the room server takes one: NX with a lifetime in milliseconds; EXPIRE on another key.
    @Test func setIfAbsentWithExpiry() throws {
        let (server, redis) = try Self.connect()
        #expect(try redis.command(["SET", "lock", "node-a", "NX", "PX", "60000"]) == .status("OK"))
        #expect(try redis.command(["SET", "lock", "node-b", "NX", "PX", "60000"]) == .null)
        #expect(try redis.command(["GET", "lock"]) == .string("node-a"))
        let remaining = try #require(try redis.command(["PTTL", "lock"]).integer)
        #expect(remaining > 0 && remaining <= 60000)

        _ = try redis.command(["SET", "session", "x"])
        #expect(try redis.command(["TTL", "session"]) == .integer(-1))
        #expect(try redis.command(["EXPIRE", "session", "100"]) == .integer(1))
        let ttl = try #require(try redis.command(["TTL", "session"]).integer)
        #expect(ttl > 0 && ttl <= 100)
        #expect(try redis.command(["EXPIRE", "missing", "100"]) == .integer(0))
        _ = server
    }

    @Test func hashes() throws {
        let (server, redis) = try Self.connect()
        #expect(try redis.command(["HSET", "room:1", "node", "a", "members", "3"]) == .integer(2))
        let reply = try #require(try redis.command(["HGETALL", "room:1"]).array)
        // HGETALL is field, value, field, value… in no promised order.
        var fields: [String: String] = [:]
        for index in stride(from: 0, to: reply.count, by: 2) {
            let field = try #require(reply[index].string), value = try #require(reply[index + 1].string)
            fields[field] = value
        }
        #expect(fields == ["node": "a", "members": "3"])
        #expect(try redis.command(["HGETALL", "missing"]) == .array([]))
        _ = server
    }

    @Test func nestedArrays() throws {
        let (server, redis) = try Self.connect()
        let reply = try redis.command(["EVAL", "return {1, {'a', {2, 'b'}, {}}, 'c', redis.status_reply('fine')}", "0"])
        #expect(reply == .array([
            .integer(1), .array([.string("a"), .array([.integer(2), .string("b")]), .array([])]), .string("c"), .status("fine"),
        ]))
        _ = server
    }

    /// Keys and values with spaces, line breaks, quotes, a NUL byte and non-ASCII text arrive unchanged.
    @Test func binarySafe() throws {
        let (server, redis) = try Self.connect()
        let key = "key with spaces\r\n\"quoted\" 'single'"
        let value = "line one\r\nline two\n\"$3\r\nnot a command\"\u{0}after NUL — ünïcødé 🎤 日本語 \\ %s %d"
        #expect(try redis.command(["SET", key, value]) == .status("OK"))
        #expect(try redis.command(["GET", key]) == .string(value))
        #expect(try redis.command(["STRLEN", key]) == .integer(value.utf8.count))
        #expect(try redis.command(["SET", "empty", ""]) == .status("OK"))
        #expect(try redis.command(["GET", "empty"]) == .string(""))
        _ = server
    }

    @Test func pipelineOfAHundred() throws {
        let (server, redis) = try Self.connect()
        let commands = (0..<100).map { index in index % 2 == 0 ? ["INCR", "counter"] : ["SET", "key\(index)", "value \(index)"] }
        let replies = try redis.pipeline(commands)
        #expect(replies.count == 100)
        for (index, reply) in replies.enumerated() {
            #expect(reply == (index % 2 == 0 ? .integer(index / 2 + 1) : .status("OK")))
        }
        let reads = try redis.pipeline((0..<50).map { ["GET", "key\(2 * $0 + 1)"] })
        #expect(reads == (0..<50).map { .string("value \(2 * $0 + 1)") })
        #expect(try redis.pipeline([]) == [])
        _ = server
    }

    /// One connection shared by several threads: each caller gets its own reply.
    @Test func sharedBetweenThreads() throws {
        let (server, redis) = try Self.connect()
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for step in 0..<25 {
                let value = "worker \(worker) step \(step)"
                #expect((try? redis.command(["SET", "w\(worker)", value])) == .status("OK"))
                #expect((try? redis.command(["GET", "w\(worker)"])) == .string(value))
            }
        }
        _ = server
    }

    @Test func database() throws {
        let server = try RedisServer()
        let three = RedisConnection(url: try RedisURL(server.url + "/3"), timeout: 5)
        let zero = RedisConnection(url: try RedisURL(server.url), timeout: 5)
        _ = try three.command(["SET", "where", "three"])
        #expect(try three.command(["GET", "where"]) == .string("three"))
        #expect(try zero.command(["GET", "where"]) == .null)
        let missing = RedisConnection(url: try RedisURL(server.url + "/999"), timeout: 5)
        let error = #expect(throws: RedisError.self) { try missing.command(["PING"]) }
        #expect(error?.kind == .reply)
        #expect(error?.message.contains("SELECT 999") == true)
    }

    @Test func password() throws {
        let (server, redis) = try Self.connect(password: "right-horse-battery")
        #expect(try redis.command(["PING"]) == .status("PONG"))

        let anonymous = RedisConnection(url: try RedisURL("redis://127.0.0.1:\(server.port)"), timeout: 5)
        #expect(try anonymous.command(["GET", "x"]).string == nil)  // NOAUTH: an error reply

        let wrong = RedisConnection(url: try RedisURL("redis://:wrong-staple@127.0.0.1:\(server.port)"), timeout: 5)
        let error = try #require(#expect(throws: RedisError.self) { try wrong.command(["PING"]) })
        #expect(error.kind == .reply)
        #expect(error.message.contains("authentication failed"))
        #expect(error.message.contains("redis://:***@127.0.0.1"))
        #expect(!error.message.contains("wrong-staple") && !error.message.contains("right-horse"))
        #expect(!wrong.isConnected)

        let user = RedisConnection(url: try RedisURL("redis://default:right-horse-battery@127.0.0.1:\(server.port)"), timeout: 5)
        #expect(try user.command(["PING"]) == .status("PONG"))
    }

    /// A reply that does not come within the timeout fails the call, and the next command does not read
    /// the late reply: the connection was dropped and made again.
    @Test func slowReplyTimesOut() throws {
        let server = try RedisServer()
        let redis = RedisConnection(url: try RedisURL(server.url), timeout: 0.3, retryInterval: 0)
        _ = try redis.command(["DEL", "queue"])
        let started = ContinuousClock.now
        let error = #expect(throws: RedisError.self) { try redis.command(["BLPOP", "queue", "5"]) }
        #expect(ContinuousClock.now - started < .seconds(3))
        #expect(error?.kind == .timeout)
        #expect(!redis.isConnected)
        _ = try redis.command(["SET", "after", "yes"])
        #expect(try redis.command(["GET", "after"]) == .string("yes"))
    }

    /// Redis killed: calls fail fast, connect attempts are spaced by the retry interval, and once it is
    /// back the next command after the interval works.
    @Test func serverKilledAndRestarted() throws {
        let server = try RedisServer()
        let redis = RedisConnection(url: try RedisURL(server.url), timeout: 5, retryInterval: 3600)
        #expect(try redis.command(["PING"]) == .status("PONG"))
        server.kill()

        // The open connection finds the server gone, then a connect attempt is refused.
        var started = ContinuousClock.now
        let lost = #expect(throws: RedisError.self) { try redis.command(["PING"]) }
        #expect(lost?.kind == .connection)
        let refused = #expect(throws: RedisError.self) { try redis.command(["PING"]) }
        #expect(refused?.kind == .connection)
        #expect(ContinuousClock.now - started < .seconds(3))

        // Back, but within the retry interval: no attempt, the last failure again at once.
        try server.restart()
        started = ContinuousClock.now
        let throttled = #expect(throws: RedisError.self) { try redis.command(["PING"]) }
        #expect(throttled?.message.contains("next attempt after") == true)
        #expect(ContinuousClock.now - started < .seconds(3))

        // A connection with a short interval reconnects on its own.
        let quick = RedisConnection(url: try RedisURL(server.url), timeout: 5, retryInterval: 0.05)
        #expect(try quick.command(["PING"]) == .status("PONG"))
        server.kill()
        #expect(throws: RedisError.self) { try quick.command(["PING"]) }
        try server.restart()
        #expect(Waiting.until { (try? quick.command(["PING"])) == .status("PONG") })
        #expect(try quick.command(["INCR", "n"]) == .integer(1))
    }
}

import Foundation
import Testing
import TestSupport

/// Three `serve` nodes and `join` clients as processes around a real `redis-server`: the node hosting
/// a room is killed with -9 mid-call (docs/call.md, "Several nodes").
@Suite(
    "several nodes: a node killed mid-call", .serialized, .realTime,
    .enabled(if: RedisServer.isAvailable, "needs redis-server (tools/install-deps.sh)"))
struct ClusterCLITests {
    static let secret = CallCLITests.secret

    /// Starts a node and returns it with its HTTP port.
    static func node(_ id: String, redis: RedisServer, rooms: [String]) throws -> (LiveRunner.Running, http: Int) {
        let arguments = ["serve", "--listen", "127.0.0.1:0", "--secret", secret, "--redis", redis.url, "--node-id", id]
            + rooms.flatMap { ["--room", $0] }
        let node = try LiveRunner.Running(arguments)
        try #require(node.waitForOutput("\"cluster-joined\"", timeout: 20), "node \(id) did not start: \(node.stdout) \(node.stderr)")
        let line = try #require(node.stdout.split(separator: "\n").first { $0.contains("\"listening\"") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return (node, try #require(object["http"] as? Int))
    }

    @Test func clientsOfAKilledNodeAreBackInTheirRoomOnAnotherNode() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try ListenTests.turns(in: directory)
        // n1 hosts "calm"; n2, less loaded when it adds "hot", hosts that one; n3 hosts nothing.
        let (n1, port1) = try Self.node("n1", redis: redis, rooms: ["calm"])
        let (n2, port2) = try Self.node("n2", redis: redis, rooms: ["hot"])
        let (n3, port3) = try Self.node("n3", redis: redis, rooms: [])
        defer { for node in [n1, n3] { node.interrupt(); _ = try? node.finish(timeout: 10) } }
        #expect(n2.stdout.contains(#"{"type":"room-opened","room":"hot"}"#), "\(n2.stdout)")
        #expect(n1.stdout.contains(#"{"type":"room-opened","room":"calm"}"#), "\(n1.stdout)")

        // Everyone connects to a node that does not host the room, with the other nodes as fallbacks.
        func join(_ name: String, room: String, servers: [Int]) throws -> LiveRunner.Running {
            try LiveRunner.Running([
                "join", "--room", room, "--token", try CallCLITests.token(name, room: room), "--mic", files[name]!, "--loop",
                "--duration", "60",
            ] + servers.flatMap { ["--server", "ws://127.0.0.1:\($0)"] })
        }
        let alice = try join("alice", room: "hot", servers: [port1, port3, port2])
        let bob = try join("bob", room: "hot", servers: [port3, port1, port2])
        let carol = try join("carol", room: "calm", servers: [port3, port2, port1])
        let clients = [("alice", alice), ("bob", bob), ("carol", carol)]
        defer { for (_, client) in clients where client.process.isRunning { client.process.terminate() } }
        for (name, client) in clients {
            try #require(client.waitForOutput(#""type":"joined""#, timeout: 20), "\(name): \(client.stdout) \(client.stderr)")
        }
        // The call runs: the room's node names a speaker (bob speaks second in the files: wait for him).
        #expect(alice.waitForOutput(#""type":"speaker-changed","participant":"bob""#, timeout: 30), "\(alice.stdout)")

        kill(n2.process.processIdentifier, SIGKILL)
        for (name, client) in clients.prefix(2) {
            #expect(client.waitForOutput(#""type":"reconnected""#, timeout: 30), "\(name): \(client.stdout) \(client.stderr)")
        }
        // Back within 5 s of noticing the loss, and the speaker changes go on after it.
        for (name, client) in clients.prefix(2) {
            let events = CallCLITests.events(client.stdout)
            let lost = try #require(events.first { $0["type"] as? String == "reconnecting" }?["t"] as? Double)
            let back = try #require(events.first { $0["type"] as? String == "reconnected" }?["t"] as? Double)
            #expect(back - lost < 5, "\(name): lost at \(lost) s, back at \(back) s")
            let named = Waiting.until(timeout: 30) {
                CallCLITests.events(client.stdout).contains { event in
                    event["type"] as? String == "speaker-changed" && (event["t"] as? Double ?? 0) > back && event["participant"] is String
                }
            }
            #expect(named, "\(name): no speaker after the failover: \(client.stdout)")
        }
        // The room was claimed again by one of the live nodes, once.
        let reopened = [n1, n3].filter { $0.stdout.contains(#"{"type":"room-opened","room":"hot"}"#) }.count
        #expect(reopened == 1, "\(n1.stdout)\n\(n3.stdout)")
        // carol's room lives on n1: she noticed nothing.
        #expect(!carol.stdout.contains("reconnecting"), "\(carol.stdout)")
        for (name, client) in clients {
            client.interrupt()
            let result = try client.finish(timeout: 20)
            #expect(result.status == 0, "\(name): \(result.stderr)")
        }
    }
}

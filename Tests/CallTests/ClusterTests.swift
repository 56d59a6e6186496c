import CallClient
import CallProtocol
import CallTransport
import Foundation
import Redis
import SpeakerRTP
import Synchronization
import TestSupport
import Testing

@testable import CallServer

/// Several nodes in the test process, coordinated through a real `redis-server` on a free port
/// (docs/call.md, "Several nodes"). Processes killed with -9 are in ClusterCLITests.
@Suite("several nodes through Redis", .enabled(if: RedisServer.isAvailable, "needs redis-server (tools/install-deps.sh)"))
struct ClusterTests {
    @Test func roomsSpreadOverTheNodesAndEveryNodeAnswersForEveryRoom() throws {
        let cluster = try TestCluster(nodes: 3)
        defer { cluster.stop() }
        var placed: [String: String] = [:]
        for room in ["r1", "r2", "r3"] {
            let answer = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"\#(room)"}"#)
            #expect(answer.status == 201, "\(answer.text)")
            placed[room] = try #require(answer.object["node"] as? String)
        }
        // Three empty nodes, three rooms: one each.
        #expect(Set(placed.values) == ["n1", "n2", "n3"], "\(placed)")
        #expect(cluster.api(1, "POST", "/v1/rooms", body: #"{"roomId":"r1"}"#).status == 409)
        for node in 0..<3 {
            // The room list of any node is the cluster's, with each room's node.
            let list = cluster.api(node, "GET", "/v1/rooms")
            let rooms = try #require(list.object["rooms"] as? [[String: Any]])
            #expect(Dictionary(uniqueKeysWithValues: rooms.map { ($0["roomId"] as! String, $0["node"] as? String ?? "-") }) == placed)
            for room in placed.keys {
                let answer = cluster.api(node, "GET", "/v1/rooms/\(room)")
                #expect(answer.status == 200 && answer.object["roomId"] as? String == room, "node \(node) room \(room): \(answer.text)")
            }
            #expect(cluster.api(node, "GET", "/metrics").text.contains("\nactivespeaker_cluster_nodes 3\n"))
            let health = try #require(cluster.api(node, "GET", "/v1/health").object["cluster"] as? [String: Any])
            #expect(health["redis"] as? String == "connected")
            #expect((health["nodes"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["n1", "n2", "n3"])
        }
        // Each room was opened once, on its node (every line logged so far written first).
        for server in cluster.servers { server.flushLog() }
        for (room, node) in placed {
            for index in 0..<3 {
                let opened = cluster.log(index).filter { $0.contains(#""room-opened","room":"\#(room)""#) }.count
                #expect(opened == (cluster.nodeIDs[index] == node ? 1 : 0), "\(room) on node \(index)")
            }
        }
    }

    @Test func aClientOfAnotherNodeIsRedirectedToTheRoomsNode() throws {
        let cluster = try TestCluster(nodes: 2)
        defer { cluster.stop() }
        let created = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"standup"}"#)
        let host = try #require(cluster.nodeIDs.firstIndex(of: created.object["node"] as? String ?? "-"))
        let other = 1 - host
        let wrong = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[other].port)/v1/signal?room=standup")
        wrong.send(.join(token: cluster.token("standup", "alice"), mic: false, webcam: false, rtpPort: nil))
        #expect(Waiting.until { wrong.closed })
        let redirect = try #require(wrong.messages.compactMap { if case .redirect(let r) = $0 { r } else { nil } }.first)
        #expect(redirect.nodeId == cluster.nodeIDs[host] && redirect.roomId == "standup")
        #expect(redirect.url == "ws://127.0.0.1:\(cluster.servers[host].port)/v1/signal?room=standup")
        #expect(!wrong.messages.contains { if case .joined = $0 { true } else { false } })
        let right = try SignalClient(url: redirect.url)
        defer { right.close() }
        right.send(.join(token: cluster.token("standup", "alice"), mic: true, webcam: false, rtpPort: try TestCluster.udpPort()))
        #expect(Waiting.until { right.joined != nil })
        // MEDIA names the hosting node's RTP port and advertised host.
        #expect(right.joined?.media?.rtpPort == cluster.servers[host].rtpPort)
        #expect(right.joined?.media?.host == "127.0.0.1")
        // An observer (a dashboard) is redirected the same way.
        let watcher = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[other].port)/v1/signal?room=standup")
        watcher.send(.observe(token: cluster.token("standup", "viewer")))
        #expect(Waiting.until { watcher.closed })
        #expect(watcher.messages.contains { if case .redirect = $0 { true } else { false } })
        // A room the cluster does not have is not found, on any node.
        let lost = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[other].port)/v1/signal?room=nowhere")
        lost.send(.join(token: cluster.token("nowhere", "alice"), mic: false, webcam: false, rtpPort: nil))
        #expect(Waiting.until { lost.closed })
        #expect(lost.errorCode == .roomNotFound)
    }

    @Test func roomEventsArePublishedOnTheRoomsChannelAndModeratorsActFromAnyNode() throws {
        let cluster = try TestCluster(nodes: 2)
        defer { cluster.stop() }
        let lines = Locked<[String]>([])
        let subscribed = Locked(false)
        let subscriber = RedisSubscriber(
            url: try RedisURL(cluster.redis.url), channels: ["activespeaker:room:townhall:events"],
            onMessage: { _, payload in lines.withLock { $0.append(payload) } }, onState: { up in subscribed.withLock { $0 = up } })
        subscriber.start()
        defer { subscriber.stop() }
        #expect(Waiting.until { subscribed.withLock { $0 } })
        let created = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"townhall"}"#)
        let host = try #require(cluster.nodeIDs.firstIndex(of: created.object["node"] as? String ?? "-"))
        let other = 1 - host

        let alice = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[host].port)/v1/signal?room=townhall")
        defer { alice.close() }
        alice.send(.join(token: cluster.token("townhall", "alice"), mic: true, webcam: false, rtpPort: try TestCluster.udpPort()))
        #expect(Waiting.until { alice.joined != nil })
        // From the node that does not host the room: a moderator's mute, then the removal.
        #expect(cluster.api(other, "POST", "/v1/rooms/townhall/participants/alice/mute").status == 204)
        #expect(Waiting.until { alice.messages.contains(.micMuted("alice", muted: true, by: "admin")) })
        #expect(cluster.api(other, "POST", "/v1/rooms/townhall/participants/nobody/mute").status == 404)
        #expect(cluster.api(other, "DELETE", "/v1/rooms/townhall/participants/alice").status == 204)
        #expect(Waiting.until { alice.closed })
        #expect(alice.errorCode == .removed)
        // Ingest through the other node; then the room is deleted from it.
        let ingest = cluster.api(other, "POST", "/v1/rooms/townhall/ingest", body: #"{"participantId":"cam","source":"127.0.0.1:5004"}"#)
        #expect(ingest.status == 201, "\(ingest.text)")
        #expect((ingest.object["media"] as? [String: Any])?["rtpPort"] as? Int == cluster.servers[host].rtpPort)
        #expect(cluster.api(other, "DELETE", "/v1/rooms/townhall").status == 204)
        #expect(cluster.api(host, "GET", "/v1/rooms/townhall").status == 404)
        #expect(Waiting.until { lines.withLock { $0.contains(#"{"type":"room-closed","room":"townhall"}"#) } })
        let types = lines.withLock { $0 }.compactMap { JSON.decode(EventLine.self, from: Array($0.utf8))?.type }
        #expect(types == ["room-opened", "participant-joined", "mic-muted", "participant-left", "participant-joined", "room-closed"], "\(types)")
    }

    @Test func aStoppedNodeHandsItsRoomsOverAtOnce() throws {
        let cluster = try TestCluster(nodes: 2)
        defer { cluster.stop() }
        let created = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"handover","maxParticipants":7}"#)
        let host = try #require(cluster.nodeIDs.firstIndex(of: created.object["node"] as? String ?? "-"))
        let other = 1 - host
        cluster.servers[host].stop()
        // The claim was released: the other node takes the room on the first request, without waiting
        // for the claim to expire, and keeps its limit.
        let answer = cluster.api(other, "GET", "/v1/rooms/handover")
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.object["maxParticipants"] as? Int == 7)
        #expect(Waiting.until { cluster.log(other).contains { $0.contains(#""room-opened","room":"handover""#) } })
    }

    @Test func aRedisOutageDropsNoCall() throws {
        let cluster = try TestCluster(nodes: 2)
        defer { cluster.stop() }
        let created = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"steady"}"#)
        let host = try #require(cluster.nodeIDs.firstIndex(of: created.object["node"] as? String ?? "-"))
        let alice = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[host].port)/v1/signal?room=steady")
        defer { alice.close() }
        alice.send(.join(token: cluster.token("steady", "alice"), mic: true, webcam: false, rtpPort: try TestCluster.udpPort()))
        #expect(Waiting.until { alice.joined != nil })

        cluster.redis.kill()
        #expect(Waiting.until { (cluster.api(host, "GET", "/v1/health").object["cluster"] as? [String: Any])?["redis"] as? String == "lost" })
        #expect(Waiting.until { cluster.log(host).contains { $0.contains(#""type":"redis-lost""#) } })
        #expect(cluster.api(host, "GET", "/metrics").text.contains("\nactivespeaker_cluster_redis_connected 0\n"))
        // The call goes on: the client is answered, a second client joins the room it hosts.
        alice.send(.ping)
        #expect(Waiting.until { alice.messages.contains(.pong) })
        let bob = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[host].port)/v1/signal?room=steady")
        defer { bob.close() }
        bob.send(.join(token: cluster.token("steady", "bob"), mic: true, webcam: false, rtpPort: try TestCluster.udpPort()))
        #expect(Waiting.until { bob.joined != nil })
        // What needs Redis says so.
        #expect(cluster.api(host, "POST", "/v1/rooms", body: #"{"roomId":"later"}"#).status == 503)

        try cluster.redis.restart()
        #expect(Waiting.until { cluster.log(host).contains { $0.contains(#""type":"redis-restored""#) } })
        // Redis came back empty: the heartbeat wrote the room and its claim again.
        #expect(Waiting.until {
            (cluster.api(1 - host, "GET", "/v1/rooms").object["rooms"] as? [[String: Any]])?.first?["node"] as? String
                == cluster.nodeIDs[host]
        })
        #expect(!alice.closed && !bob.closed)
        #expect(alice.errorCode == nil && bob.errorCode == nil)
    }

    /// Issue 29: six API calls about a room on another node, made while Redis is stalled, wait for
    /// Redis (each up to its 0.5 s timeout), but the node's signalling answers meanwhile: before, the
    /// transport thread waited in each call and a ping in an unrelated room took 1.5-3 s.
    @Test func aStalledRedisHoldsUpOnlyTheCallsThatWaitForIt() throws {
        let cluster = try TestCluster(nodes: 2)
        defer {
            cluster.redis.resume()
            cluster.stop()
        }
        let near = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"near"}"#)
        let far = cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"far"}"#)
        let host = try #require(cluster.nodeIDs.firstIndex(of: near.object["node"] as? String ?? "-"))
        #expect(far.object["node"] as? String == cluster.nodeIDs[1 - host], "one room on each node")
        let alice = try SignalClient(url: "ws://127.0.0.1:\(cluster.servers[host].port)/v1/signal?room=near")
        defer { alice.close() }
        alice.send(.join(token: cluster.token("near", "alice"), mic: true, webcam: false, rtpPort: try TestCluster.udpPort()))
        #expect(Waiting.until { alice.joined != nil })

        cluster.redis.pause()
        let admin = cluster.token(AccessToken.anyRoom, "admin", role: .moderator)
        let calls = try (0..<6).map { _ in
            try PendingHTTPCall(port: cluster.servers[host].port, path: "/v1/rooms/far", headers: ["Authorization": "Bearer \(admin)"])
        }
        // The calls are in the node's sockets; its signalling answers while they wait for Redis.
        for count in 1...3 {
            alice.send(.ping)
            #expect(Waiting.until { alice.messages.filter { $0 == .pong }.count == count })
        }
        #expect(calls.allSatisfy { $0.status == nil }, "an API call was answered before the pings: \(calls.map(\.status))")
        cluster.redis.resume()
        // Each is answered: the room (Redis answered in time) or 503 (it did not).
        for call in calls {
            let status = call.wait()
            #expect(status == 200 || status == 503, "\(String(describing: status))")
        }
        #expect(!alice.closed)
    }

    @Test func aNodeRefusesAClusterOfAnotherProtocolOrItsOwnIdInUse() throws {
        let cluster = try TestCluster(nodes: 1)
        defer { cluster.stop() }
        // The same node id as a live node.
        #expect {
            _ = try cluster.makeServer(nodeID: "n1")
        } throws: { ($0 as? CallError)?.code == .unavailable && "\($0)".contains("node id n1 is in use") }
        // A live node of another cluster protocol.
        let redis = RedisConnection(url: try RedisURL(cluster.redis.url))
        let record = #"{"id":"old","instance":"x","protocolVersion":99,"http":"http://127.0.0.1:1","signal":"ws://127.0.0.1:1/v1/signal","rtpHost":"127.0.0.1","rtpPort":1,"rooms":0,"participants":0,"cpu":0,"updated":0}"#
        _ = try redis.pipeline([["SET", "activespeaker:node:old", record, "PX", "60000"], ["SADD", "activespeaker:nodes", "old"]])
        #expect {
            _ = try cluster.makeServer(nodeID: "n9")
        } throws: { "\($0)".contains("node old speaks cluster protocol 99") }
        // A node restarted at once after a crash: its old record is still fresh, but no process listens
        // on its inbox any more, so the new process may take the id.
        _ = try redis.command(["DEL", "activespeaker:node:old"])
        let crashed = record.replacingOccurrences(of: #""id":"old""#, with: #""id":"n7""#)
            .replacingOccurrences(of: #""protocolVersion":99"#, with: #""protocolVersion":1"#)
        _ = try redis.pipeline([["SET", "activespeaker:node:n7", crashed, "PX", "60000"], ["SADD", "activespeaker:nodes", "n7"]])
        let restarted = try cluster.makeServer(nodeID: "n7")
        restarted.stop()
        redis.close()
    }

    @Test func theRedisPasswordIsUsedAndNeverLogged() throws {
        let cluster = try TestCluster(nodes: 1, password: "hunter2-secret-pass")
        defer { cluster.stop() }
        cluster.servers[0].flushLog()
        let joinedLine = try #require(cluster.log(0).first { $0.contains("cluster-joined") })
        #expect(!joinedLine.contains("hunter2") && joinedLine.contains("***"), "\(joinedLine)")
        #expect(cluster.api(0, "POST", "/v1/rooms", body: #"{"roomId":"private"}"#).status == 201)
        // A wrong password: the node does not start, and does not print it either.
        #expect {
            _ = try cluster.makeServer(nodeID: "n2", redis: "redis://:wrong-password-here@127.0.0.1:\(cluster.redis.port)")
        } throws: { !"\($0)".contains("wrong-password-here") }
    }

    @Test func aNodeWithoutRedisDoesNotStart() throws {
        let port = try LoopbackPort.free()
        var configuration = RoomServerConfiguration()
        configuration.secret = TestCluster.secret
        configuration.cluster = try ClusterConfiguration(redis: "redis://127.0.0.1:\(port)", nodeID: "alone", advertiseHost: "127.0.0.1")
        #expect { _ = try RoomServer(configuration: configuration) } throws: { ($0 as? CallError)?.code == .unavailable }
        // Several nodes need one secret.
        configuration.secret = nil
        #expect { _ = try RoomServer(configuration: configuration) } throws: { "\($0)".contains("shared by every node") }
    }
}

/// SDK clients of one room, each connecting to a different node of three: each is redirected to the
/// room's node, and all see the same speaker sequence and hear each other.
@Suite("several nodes: SDK clients", .realTime, .enabled(if: RedisServer.isAvailable, "needs redis-server (tools/install-deps.sh)"))
struct ClusterMeetingTests {
    @Test func meetingsConnectingToEveryNodeShareOneRoom() async throws {
        let cluster = try TestCluster(nodes: 3)
        defer { cluster.stop() }
        let created = cluster.api(1, "POST", "/v1/rooms", body: #"{"roomId":"room"}"#)
        #expect(created.status == 201)
        let plan: [(String, [ClosedRange<Double>])] = [("bob", [0.8...3.3]), ("alice", [4.3...6.8]), ("carol", [7.8...10.3])]
        var meetings: [Meeting] = []
        var logs: [CallEndToEndTests.SpeakerLog] = []
        for (index, (name, turns)) in plan.enumerated() {
            var configuration = MeetingConfiguration(
                server: "ws://127.0.0.1:\(cluster.servers[index].port)", roomId: "room", token: cluster.token("room", name))
            configuration.speaker = .none  // no sound card on the test machines
            configuration.microphone = .custom(try CallEndToEndTests.track(turns: turns, length: 11.5))
            let meeting = Meeting(configuration: configuration)
            let log = CallEndToEndTests.SpeakerLog()
            meeting.addEventListener(log)
            meetings.append(meeting)
            logs.append(log)
        }
        try await CallEndToEndTests.joinTogether(meetings)
        for (meeting, log) in zip(meetings, logs) {
            #expect(await log.waitUntilOver(after: "carol"), "\(meeting.localParticipant?.id ?? "?"): \(log.changes.withLock { $0 })")
        }
        for (meeting, log) in zip(meetings, logs) {
            #expect(log.sequence == ["bob", "alice", "carol"], "\(meeting.localParticipant?.id ?? "?"): \(log.changes.withLock { $0 })")
            #expect(meeting.receivedPackets.count == 2 && meeting.receivedPackets.values.allSatisfy { $0 > 100 }, "\(meeting.receivedPackets)")
        }
        for meeting in meetings { meeting.leave() }
        // The room lived on one node: that node opened it, and its media loop took every packet.
        let host = try #require(cluster.nodeIDs.firstIndex(of: created.object["node"] as? String ?? "-"))
        for index in 0..<3 where index != host {
            #expect(cluster.servers[index].mediaStatistics.accepted == 0)
        }
        #expect(cluster.servers[host].mediaStatistics.accepted > 1000)
    }
}

/// Just the `type` of an event line.
private struct EventLine: Decodable { var type: String }

/// A Redis and `nodes` room servers in the test process, nodes n1, n2, …, each logging to its own list.
final class TestCluster: @unchecked Sendable {
    static let secret = TokenSecret("cluster-test-secret-0123")!
    let redis: RedisServer
    private(set) var servers: [RoomServer] = []
    private(set) var nodeIDs: [String] = []
    private let logs = Locked<[[String]]>([])
    private let redisURL: String

    init(nodes: Int, password: String? = nil) throws {
        let redis = try RedisServer(password: password)
        self.redis = redis
        redisURL = password.map { "redis://:\($0)@127.0.0.1:\(redis.port)" } ?? redis.url
        for index in 1...nodes {
            let server = try makeServer(nodeID: "n\(index)")
            server.start()
            servers.append(server)
            nodeIDs.append("n\(index)")
        }
        // Every node listens on its inbox (the subscription is made on a thread of its own: a node that
        // does not listen yet looks crashed to a node checking its id, and cannot take relayed calls).
        let probe = RedisConnection(url: try RedisURL(redisURL))
        _ = Waiting.until { self.nodeIDs.allSatisfy { node in
            let reply = try? probe.command(["PUBSUB", "NUMSUB", "activespeaker:node:\(node):inbox"])
            return reply?.array.flatMap { $0.count == 2 ? $0[1].integer : nil } == 1
        } }
        // Every node has seen every other's record (one heartbeat), so placement sees them all.
        _ = Waiting.until { self.servers.allSatisfy { server in
            let body = server.handle(HTTPRequest(method: "GET", path: "/v1/health"), from: PeerAddress(host: "127.0.0.1", port: 1)).body
            return ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any])
                .flatMap { $0["cluster"] as? [String: Any] }.flatMap { $0["nodes"] as? [Any] }?.count == nodes
        } }
    }

    /// A node (not started) of this cluster; its log lines go to `log(index)` when it is one of `servers`.
    func makeServer(nodeID: String, redis url: String? = nil) throws -> RoomServer {
        var configuration = RoomServerConfiguration()
        configuration.secret = Self.secret
        configuration.cluster = try ClusterConfiguration(redis: url ?? redisURL, nodeID: nodeID, advertiseHost: "127.0.0.1")
        let index = logs.withLock { logs in
            logs.append([])
            return logs.count - 1
        }
        return try RoomServer(configuration: configuration) { [logs] line in logs.withLock { $0[index].append(line) } }
    }

    /// The log lines of the `index`-th node.
    func log(_ index: Int) -> [String] { logs.withLock { $0[index] } }

    func stop() {
        for server in servers { server.stop() }
        redis.stop()
    }

    func token(_ room: String, _ participant: String, role: Role = .publisher) -> String {
        let now = Int(Date().timeIntervalSince1970)
        return AccessToken(room: room, participantID: participant, role: role, issuedAt: now, expiresAt: now + 600).signed(with: Self.secret)
    }

    struct Answer {
        var status: Int
        var text: String
        var object: [String: Any]
    }

    /// An HTTP API call on node `index` as a server-wide moderator.
    func api(_ index: Int, _ method: String, _ path: String, body: String = "") -> Answer {
        let now = Int(Date().timeIntervalSince1970)
        let admin = AccessToken(room: AccessToken.anyRoom, participantID: "admin", role: .moderator, issuedAt: now, expiresAt: now + 600)
        let request = HTTPRequest(
            method: method, path: path, headers: ["authorization": "Bearer \(admin.signed(with: Self.secret))"], body: Array(body.utf8))
        let response = servers[index].handle(request, from: PeerAddress(host: "127.0.0.1", port: 50000))
        let object = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any] ?? [:]
        return Answer(status: response.status, text: String(decoding: response.body, as: UTF8.self), object: object)
    }

    /// The port of a UDP socket bound now, as a client announces it (kept open for the test's length, so
    /// that no server socket can be given the same port).
    static func udpPort() throws -> Int {
        let socket = try UDPSocket(address: "127.0.0.1:0")
        openSockets.withLock { $0.append(socket) }
        return socket.port
    }
    private static let openSockets = Mutex<[UDPSocket]>([])

}

/// A signalling WebSocket without the SDK: what it received, and whether the server closed it.
final class SignalClient: Sendable {
    private let webSocket: WebSocketClient
    private let received = Locked<[ServerMessage]>([])
    private let isClosed = Locked(false)

    init(url: String) throws {
        webSocket = try WebSocketClient(url: url)
        webSocket.setHandler(
            message: { [received] text in
                guard let message = try? ServerMessage(json: text) else { return }
                received.withLock { $0.append(message) }
            },
            closed: { [isClosed] _, _ in isClosed.withLock { $0 = true } })
        try webSocket.connect(timeout: 10)
    }

    func send(_ message: ClientMessage) { webSocket.send(message.json) }
    var messages: [ServerMessage] { received.withLock { $0 } }
    var closed: Bool { isClosed.withLock { $0 } }
    var joined: JoinedRoom? {
        for case .joined(let room) in messages { return room }
        return nil
    }
    var errorCode: CallErrorCode? {
        for case .error(let error) in messages { return error.code }
        return nil
    }
    func close() { webSocket.close() }
}

/// A value behind a lock that closures can share.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<T>(_ body: (inout Value) -> T) -> T { mutex.withLock { body(&$0) } }
}

import CallProtocol
internal import CallTransport
import Foundation
internal import Redis
import Synchronization

/// What a `ClusterNode` asks of the server it belongs to. Called on the cluster's threads.
protocol ClusterHost: AnyObject, Sendable {
    /// The rooms this node hosts, as published, and its participant count (for the heartbeat).
    func hostedRooms() -> (rooms: [RoomState], participants: Int)
    /// Whether the room is open on this node.
    func hosts(_ room: CallRoomID) -> Bool
    /// Opens a room this node has just claimed (nothing if it is open already).
    func openClaimed(_ record: RoomRecord)
    /// Answers an HTTP API call relayed from another node, from this node's rooms only.
    func answerRelayed(_ request: HTTPRequest) -> HTTPResponse
    /// A cluster event for the server's log (Redis lost or back, a claim taken by another node).
    func clusterLogged(_ event: ServerEvent)
}

/// This node's side of the cluster: it registers the node and the claims of its rooms in Redis on
/// every heartbeat, resolves where a room lives (claiming it when no live node hosts it), places new
/// rooms on the least-loaded node, relays API calls to a room's node, and publishes room events.
///
/// Threads: a heartbeat thread, a subscriber thread (its inbox), a serial queue for publishing events,
/// and the callers' threads for `resolve`, `create` and `relay` (each Redis call bounded by the
/// connection's timeout). Nothing here holds the server's registry lock.
final class ClusterNode: @unchecked Sendable {
    // @unchecked Sendable: the connections and the subscriber are set in `init` and are thread-safe;
    // mutable state is in `state` (a Mutex).

    /// The cluster protocol: nodes of another version refuse to join each other's cluster.
    static let protocolVersion = 1

    let configuration: ClusterConfiguration
    let instance = UUID().uuidString
    private let requests: RedisConnection
    private let beats: RedisConnection
    private let publisher: RedisEventPublisher
    private var subscriber: RedisSubscriber?
    private weak var host: (any ClusterHost)?
    private let wake = DispatchSemaphore(value: 0)
    private var heartbeatThread: Thread?

    private struct State {
        var nodes: [NodeRecord] = []
        var record: NodeRecord
        var redisUp = true
        var pending: [String: PendingAnswer] = [:]
        var stopping = false
        var conflicts: Set<CallRoomID> = []
        var cpuMark: (wall: Double, cpu: Double)
        /// Rooms this node placed on other nodes (node id, when): counted on top of those nodes' records
        /// until their own heartbeats have surely counted them, since a heartbeat here may read a record
        /// written before the placement.
        var placements: [(node: String, at: Double)] = []
    }
    private let state: Mutex<State>

    /// - Parameters: `http`/`signal`: this node's URLs as others reach it; `rtpPort`: its RTP port.
    init(configuration: ClusterConfiguration, http: String, signal: String, rtpPort: Int, host: any ClusterHost) {
        self.configuration = configuration
        let timeout = 0.5
        requests = RedisConnection(url: configuration.redis, timeout: timeout)
        beats = RedisConnection(url: configuration.redis, timeout: timeout)
        publisher = RedisEventPublisher(url: configuration.redis, timeout: timeout)
        self.host = host
        let record = NodeRecord(
            id: configuration.nodeID, instance: instance, protocolVersion: Self.protocolVersion, http: http, signal: signal,
            rtpHost: configuration.advertiseHost, rtpPort: rtpPort, rooms: 0, participants: 0, cpu: 0, updated: Self.milliseconds)
        state = Mutex(State(record: record, cpuMark: (Self.monotonic, Self.cpuSeconds)))
    }

    var nodeID: String { configuration.nodeID }

    // MARK: Joining and leaving

    /// Checks the cluster and registers this node: fails when Redis cannot be reached, when a live node
    /// speaks another cluster protocol, or when another live process already uses this node id.
    func join() throws(CallError) {
        let nodes: [NodeRecord]
        do {
            nodes = try readNodes(on: requests)
        } catch {
            throw CallError(.unavailable, "cannot reach Redis at \(configuration.redis): \(error.message)")
        }
        if let other = nodes.first(where: { $0.protocolVersion != Self.protocolVersion }) {
            throw CallError(
                .unavailable,
                "node \(other.id) speaks cluster protocol \(other.protocolVersion), this node \(Self.protocolVersion): refusing to join")
        }
        if let same = nodes.first(where: { $0.id == nodeID && $0.instance != instance }) {
            // A record of this id from another process: refused while that process lives (it listens on
            // its inbox); a crashed one's record only waits for its expiry, so a restart goes ahead.
            let listening = (try? requests.command(["PUBSUB", "NUMSUB", ClusterKeys.inbox(nodeID)]))?.array
                .flatMap { $0.count == 2 ? $0[1].integer : nil } ?? 1
            if listening > 0 {
                throw CallError(.unavailable, "node id \(nodeID) is in use by a live node at \(same.http): choose another --node-id")
            }
        }
        do {
            try register(on: requests, rooms: [], participants: 0)
        } catch {
            throw CallError(.unavailable, "cannot register in Redis at \(configuration.redis): \(error.message)")
        }
        state.withLock { $0.nodes = nodes.filter { $0.id != nodeID } }
    }

    /// Starts the heartbeat and the inbox.
    func start() {
        let subscriber = RedisSubscriber(
            url: configuration.redis, channels: [ClusterKeys.inbox(nodeID)],
            onMessage: { [weak self] _, payload in self?.received(payload) },
            onState: { _ in })
        self.subscriber = subscriber
        subscriber.start()
        let thread = Thread { [weak self] in self?.heartbeatLoop() }
        thread.name = "cluster heartbeat"
        heartbeatThread = thread
        thread.start()
    }

    /// Leaves the cluster: the node's record and its rooms' claims go, so that returning clients get the
    /// rooms claimed on another node at once rather than after the node timeout.
    func stop() {
        let already = state.withLock { state in
            defer { state.stopping = true }
            return state.stopping
        }
        guard !already else { return }
        wake.signal()
        while heartbeatThread?.isFinished == false { Thread.sleep(forTimeInterval: 0.01) }
        subscriber?.stop()
        let rooms = host?.hostedRooms().rooms ?? []
        var commands: [[String]] = [["DEL", ClusterKeys.node(nodeID)], ["SREM", ClusterKeys.nodes, nodeID]]
        for room in rooms {
            commands.append(["EVAL", Self.releaseScript, "1", ClusterKeys.host(room.roomId), nodeID])
            commands.append(["DEL", ClusterKeys.state(room.roomId)])
        }
        _ = try? requests.pipeline(commands)
        requests.close()
        beats.close()
        publisher.close()
    }

    // MARK: Heartbeat

    private func heartbeatLoop() {
        while !state.withLock({ $0.stopping }) {
            let began = Self.monotonic
            beat()
            let rest = configuration.heartbeatInterval - (Self.monotonic - began)
            if rest > 0 { _ = wake.wait(timeout: .now() + rest) }
        }
    }

    /// One heartbeat: the node's record, each hosted room's claim, record and state; then the list of
    /// live nodes. Logs the moments Redis is lost and back.
    private func beat() {
        guard let host else { return }
        let (rooms, participants) = host.hostedRooms()
        do {
            let claims = try register(on: beats, rooms: rooms, participants: participants)
            let nodes = try readNodes(on: beats)
            var lost: [CallRoomID] = []
            let back = state.withLock { state in
                defer { state.redisUp = true }
                state.nodes = nodes.filter { $0.id != nodeID }
                for (room, held) in zip(rooms, claims) {
                    if !held, state.conflicts.insert(room.roomId).inserted { lost.append(room.roomId) }
                    if held { state.conflicts.remove(room.roomId) }
                }
                return !state.redisUp
            }
            if back { host.clusterLogged(.redisRestored) }
            for room in lost { host.clusterLogged(.claimLost(room: room)) }
        } catch {
            let wasUp = state.withLock { state in
                defer { state.redisUp = false }
                return state.redisUp
            }
            if wasUp { host.clusterLogged(.redisLost(reason: error.message)) }
        }
    }

    /// Writes the node's record and the claims, records and states of its rooms; returns, per room,
    /// whether this node still holds its claim.
    @discardableResult
    private func register(on connection: RedisConnection, rooms: [RoomState], participants: Int) throws(RedisError) -> [Bool] {
        let ttl = String(Int(configuration.nodeTimeout * 1000))
        let record = state.withLock { state in
            let now = Self.monotonic, cpu = Self.cpuSeconds
            let wall = now - state.cpuMark.wall
            if wall > 0.1 {
                state.record.cpu = ((cpu - state.cpuMark.cpu) / wall * 1000).rounded() / 1000
                state.cpuMark = (now, cpu)
            }
            state.record.rooms = rooms.count
            state.record.participants = participants
            state.record.updated = Self.milliseconds
            return state.record
        }
        var commands: [[String]] = [
            ["SET", ClusterKeys.node(nodeID), JSON.text(record), "PX", ttl],
            ["SADD", ClusterKeys.nodes, nodeID],
        ]
        for room in rooms {
            commands.append(["EVAL", Self.claimScript, "1", ClusterKeys.host(room.roomId), nodeID, ttl, ClusterKeys.prefix + "node:"])
            commands.append(["HSETNX", ClusterKeys.rooms, room.roomId.rawValue,
                             JSON.text(RoomRecord(roomId: room.roomId, maxParticipants: room.maxParticipants))])
            commands.append(["SET", ClusterKeys.state(room.roomId), JSON.text(room), "PX", ttl])
        }
        let replies = try connection.pipeline(commands)
        if let failed = replies.first(where: { if case .error = $0 { true } else { false } }), case .error(let why) = failed {
            throw RedisError(.reply, why)
        }
        return rooms.indices.map { replies[2 + 3 * $0].integer == 1 }
    }

    /// The live nodes (this one included), pruning ids whose record expired.
    private func readNodes(on connection: RedisConnection) throws(RedisError) -> [NodeRecord] {
        let ids = try connection.command(["SMEMBERS", ClusterKeys.nodes]).array?.compactMap(\.string) ?? []
        guard !ids.isEmpty else { return [] }
        let values = try connection.command(["MGET"] + ids.map(ClusterKeys.node)).array ?? []
        var nodes: [NodeRecord] = []
        var dead: [String] = []
        for (id, value) in zip(ids, values) {
            if let text = value.string, let record = JSON.decode(NodeRecord.self, from: Array(text.utf8)) {
                nodes.append(record)
            } else {
                dead.append(id)
            }
        }
        if !dead.isEmpty { _ = try? connection.command(["SREM", ClusterKeys.nodes] + dead) }
        return nodes.sorted { $0.id < $1.id }
    }

    /// "Take the claim unless a live other node holds it": claims a room for ARGV[1] (or renews its
    /// claim) when the claim is free, already ours, or held by a node whose record has expired.
    static let claimScript = """
        local owner = redis.call('GET', KEYS[1])
        if owner and owner ~= ARGV[1] and redis.call('EXISTS', ARGV[3] .. owner) == 1 then return 0 end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """

    /// Takes a claim held by ARGV[3], a node found dead, or a free one.
    static let takeOverScript = """
        local owner = redis.call('GET', KEYS[1])
        if owner and owner ~= ARGV[3] and owner ~= ARGV[1] then return 0 end
        redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
        return 1
        """

    /// Drops a claim only if it is still ours.
    static let releaseScript = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """

    // MARK: Where rooms live

    /// This node and the live others, as of the last heartbeat.
    var nodes: [NodeRecord] {
        state.withLock { [$0.record] + $0.nodes }.sorted { $0.id < $1.id }
    }

    /// Whether Redis answered the last heartbeat.
    var redisConnected: Bool { state.withLock { $0.redisUp } }

    /// Where `room` lives. A room that no live node hosts is claimed by this node and opened here.
    func resolve(_ room: CallRoomID) -> RoomLocation {
        if host?.hosts(room) == true { return .here }
        let ttl = String(Int(configuration.nodeTimeout * 1000))
        do throws(RedisError) {
            for _ in 0..<3 {
                let replies = try requests.pipeline([["HGET", ClusterKeys.rooms, room.rawValue], ["GET", ClusterKeys.host(room)]])
                guard let text = replies[0].string, let record = JSON.decode(RoomRecord.self, from: Array(text.utf8)) else {
                    return .absent
                }
                var claim = ["EVAL", Self.claimScript, "1", ClusterKeys.host(room), nodeID, ttl, ClusterKeys.prefix + "node:"]
                if let owner = replies[1].string, owner != nodeID {
                    let state = try requests.pipeline([["GET", ClusterKeys.node(owner)], ["PUBSUB", "NUMSUB", ClusterKeys.inbox(owner)]])
                    let listening = state[1].array.flatMap { $0.count == 2 ? $0[1].integer : nil } ?? 0
                    if let nodeText = state[0].string, let node = JSON.decode(NodeRecord.self, from: Array(nodeText.utf8)), listening > 0 {
                        return .node(node)
                    }
                    // The holder's record expired, or it no longer listens on its inbox: its process is
                    // gone (Redis drops a dead process's subscription at once, long before its record
                    // expires). Take the claim over, if it is still that node's.
                    claim = ["EVAL", Self.takeOverScript, "1", ClusterKeys.host(room), nodeID, ttl, owner]
                }
                let claimed = try requests.command(claim)
                if claimed.integer == 1 {
                    host?.openClaimed(record)
                    return .here
                }
            }
            return .unavailable("the claim of room \(room) kept changing hands")
        } catch {
            return .unavailable("Redis: \(error.message)")
        }
    }

    /// Adds a room to the cluster and places it on the least-loaded live node; returns that node's id.
    /// - Throws: `.joinState` if the id is taken, `.unavailable` without Redis.
    func create(_ record: RoomRecord) throws(CallError) -> String {
        let added: RedisReply
        do {
            added = try requests.command(["HSETNX", ClusterKeys.rooms, record.roomId.rawValue, JSON.text(record)])
        } catch {
            throw CallError(.unavailable, "cannot reach Redis: \(error.message)")
        }
        guard added.integer == 1 else { throw CallError(.joinState, "room \(record.roomId) already exists") }
        // This node's load as it is now; the others' as of their last heartbeat, plus what was placed
        // on them since (so that rooms created in a burst spread).
        var candidates = nodes
        if let own = host?.hostedRooms(), let index = candidates.firstIndex(where: { $0.id == nodeID }) {
            candidates[index].rooms = own.rooms.count
            candidates[index].participants = own.participants
        }
        // For a node timeout: by then the target's heartbeat has counted the room, however late it ran
        // (meanwhile it may be counted twice, which only steers the next rooms elsewhere).
        let recent = Self.monotonic - configuration.nodeTimeout
        let placed = state.withLock { state in
            state.placements.removeAll { $0.at < recent }
            return state.placements.map(\.node)
        }
        for node in placed {
            if let index = candidates.firstIndex(where: { $0.id == node }) { candidates[index].rooms += 1 }
        }
        let target = leastLoaded(candidates, preferring: nodeID)
        if let target, target.id != nodeID {
            let message = RelayMessage(kind: .host, id: UUID().uuidString, from: nodeID, room: record)
            if let answer = ask(target.id, message), answer.status == 200 {
                state.withLock { $0.placements.append((target.id, Self.monotonic)) }
                return target.id
            }
        }
        // This node is the least loaded, or the chosen one did not answer.
        switch resolve(record.roomId) {
        case .here: return nodeID
        case .node(let node): return node.id
        case .absent: throw CallError(.roomNotFound, "room \(record.roomId) was deleted while it was created")
        case .unavailable(let why): throw CallError(.unavailable, why)
        }
    }

    /// Removes a room from the cluster (its record, claim and state). Called by the node that deletes it.
    func forget(_ room: CallRoomID) {
        _ = try? requests.pipeline([
            ["HDEL", ClusterKeys.rooms, room.rawValue], ["DEL", ClusterKeys.host(room)], ["DEL", ClusterKeys.state(room)],
        ])
    }

    /// Every room of the cluster with the node that holds its claim and the state it last published
    /// (nil while no live node hosts it).
    func rooms() throws(CallError) -> [(record: RoomRecord, node: String?, state: RoomState?)] {
        do {
            let all = try requests.command(["HGETALL", ClusterKeys.rooms]).array ?? []
            var records: [RoomRecord] = []
            var index = 0
            while index + 1 < all.count {
                if let text = all[index + 1].string, let record = JSON.decode(RoomRecord.self, from: Array(text.utf8)) {
                    records.append(record)
                }
                index += 2
            }
            records.sort { $0.roomId.rawValue < $1.roomId.rawValue }
            guard !records.isEmpty else { return [] }
            let replies = try requests.pipeline([
                ["MGET"] + records.map { ClusterKeys.host($0.roomId) }, ["MGET"] + records.map { ClusterKeys.state($0.roomId) },
            ])
            let hosts = replies[0].array ?? [], states = replies[1].array ?? []
            return records.indices.map { index in
                let state = index < states.count ? states[index].string.flatMap { JSON.decode(RoomState.self, from: Array($0.utf8)) } : nil
                return (records[index], index < hosts.count ? hosts[index].string : nil, state)
            }
        } catch {
            throw CallError(.unavailable, "cannot reach Redis: \(error.message)")
        }
    }

    /// The state of a room hosted elsewhere, as its host last published it.
    func state(of room: CallRoomID) -> RoomState? {
        guard let text = try? requests.command(["GET", ClusterKeys.state(room)]).string else { return nil }
        return JSON.decode(RoomState.self, from: Array(text.utf8))
    }

    // MARK: Events

    /// Publishes one of a room's events (a `serve` log line) on the room's channel, in order.
    func publish(room: CallRoomID, line: String) {
        publisher.publish(room: room, line: line)
    }

    // MARK: Relaying

    /// Relays an HTTP API call to the node hosting its room and returns that node's answer (503 when
    /// it does not answer within the relay timeout).
    func relay(_ request: HTTPRequest, to node: NodeRecord) -> HTTPResponse {
        let message = RelayMessage(
            kind: .http, id: UUID().uuidString, from: nodeID, method: request.method, path: request.path, query: request.query,
            authorization: request.headers["authorization"], body: Data(request.body).base64EncodedString())
        guard let answer = ask(node.id, message), let status = answer.status else {
            let error = CallError(.unavailable, "node \(node.id), which hosts the room, did not answer")
            return .json(status: 503, #"{"error":{"code":\#(error.code.rawValue),"message":\#(JSON.quoted(error.message))}}"#)
        }
        let body = answer.body.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } ?? []
        return HTTPResponse(status: status, contentType: answer.contentType ?? "application/json", body: body)
    }

    /// Sends a request to a node's inbox and waits for its answer (nil: nobody listens, or no answer in time).
    private func ask(_ node: String, _ message: RelayMessage) -> RelayMessage? {
        let pending = PendingAnswer()
        state.withLock { $0.pending[message.id] = pending }
        defer { _ = state.withLock { $0.pending.removeValue(forKey: message.id) } }
        guard let listeners = try? requests.command(["PUBLISH", ClusterKeys.inbox(node), JSON.text(message)]).integer,
            listeners > 0
        else { return nil }
        guard pending.done.wait(timeout: .now() + configuration.relayTimeout) == .success else { return nil }
        return pending.answer.withLock { $0 }
    }

    /// A message on this node's inbox (subscriber thread): requests are answered on another thread.
    private func received(_ payload: String) {
        guard let message = JSON.decode(RelayMessage.self, from: Array(payload.utf8)) else { return }
        switch message.kind {
        case .answer:
            guard let pending = state.withLock({ $0.pending[message.id] }) else { return }
            pending.answer.withLock { $0 = message }
            pending.done.signal()
        case .http:
            BlockingWork.start("activespeaker-cluster-inbox") { [weak self] in self?.answerHTTP(message) }
        case .host:
            BlockingWork.start("activespeaker-cluster-inbox") { [weak self] in self?.answerHost(message) }
        }
    }

    private func answerHTTP(_ message: RelayMessage) {
        guard let host, let method = message.method, let path = message.path else { return }
        var headers: [String: String] = [:]
        if let authorization = message.authorization { headers["authorization"] = authorization }
        let body = message.body.flatMap { Data(base64Encoded: $0) }.map { [UInt8]($0) } ?? []
        let response = host.answerRelayed(HTTPRequest(method: method, path: path, query: message.query ?? [:], headers: headers, body: body))
        answer(message, RelayMessage(
            kind: .answer, id: message.id, from: nodeID, body: Data(response.body).base64EncodedString(), status: response.status,
            contentType: response.contentType))
    }

    private func answerHost(_ message: RelayMessage) {
        guard let record = message.room else { return }
        let status = resolve(record.roomId) == .here ? 200 : 409
        answer(message, RelayMessage(kind: .answer, id: message.id, from: nodeID, status: status))
    }

    private func answer(_ request: RelayMessage, _ answer: RelayMessage) {
        _ = try? requests.command(["PUBLISH", ClusterKeys.inbox(request.from), JSON.text(answer)])
    }

    // MARK: Clocks

    private static var milliseconds: Int { Int(Date().timeIntervalSince1970 * 1000) }
    private static var monotonic: Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
    /// CPU seconds (user and system) this process has used.
    private static var cpuSeconds: Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 + Double(usage.ru_stime.tv_sec)
            + Double(usage.ru_stime.tv_usec) / 1e6
    }
}

/// A relayed request's answer slot.
private final class PendingAnswer: Sendable {
    let done = DispatchSemaphore(value: 0)
    let answer = Mutex<RelayMessage?>(nil)
}

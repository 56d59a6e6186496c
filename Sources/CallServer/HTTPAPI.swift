import CallProtocol
internal import CallTransport

/// The HTTP API of a `RoomServer` (docs/call.md, "HTTP API"): reads the `Route`, checks the token,
/// decides through the server's registry, and answers; a `CallError` becomes the documented error body.
///
/// With several nodes, a call about a room this node does not host is relayed to the node that does
/// (or the room is claimed here when no live node hosts it), so every node answers for every room.
struct HTTPAPI {
    let server: RoomServer
    /// A call relayed from another node: answered from this node's rooms only, never relayed again.
    let relayed: Bool

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        do throws(CallError) {
            return try answer(Route(method: request.method, path: request.path), request)
        } catch {
            var answer = HTTPResponse.json(status: error.code.httpStatus, JSON.text(ErrorAnswer(error)))
            if error.code == .methodNotAllowed {
                answer.headers.append(("Allow", Route.methods(path: request.path).joined(separator: ", ")))
            }
            return answer
        }
    }

    private func answer(_ route: Route, _ request: HTTPRequest) throws(CallError) -> HTTPResponse {
        let epoch = RoomServer.epochSeconds
        let token = request.bearerToken
        if let room = route.roomID, let cluster = server.cluster, !relayed, !server.hosts(room) {
            // Checked here too, so that a call without a valid token for the room moves nothing.
            _ = try server.read { registry throws(CallError) in try registry.authorize(token, room: room, moderator: false, now: epoch) }
            switch cluster.resolve(room) {
            case .here: break
            case .node(let node): return cluster.relay(request, to: node)
            case .absent: throw CallError(.roomNotFound, "room \(room) not found")
            case .unavailable(let why): throw CallError(.unavailable, why)
            }
        }
        switch route {
        case .health:
            let (rooms, participants) = try server.read { ($0.rooms.count, $0.participantCount) }
            var health = Health(participants: participants, rooms: rooms)
            if let cluster = server.cluster {
                health.node = cluster.nodeID
                health.cluster = ClusterHealth(
                    redis: cluster.redisConnected ? "connected" : "lost",
                    nodes: cluster.nodes.map {
                        ClusterHealth.Node(id: $0.id, http: $0.http, rooms: $0.rooms, participants: $0.participants, cpu: $0.cpu)
                    })
            }
            return .json(JSON.text(health))
        case .ready:
            let behind = server.mediaLoopBehind
            let body = Readiness(ready: behind < 1, mediaBehindSeconds: behind.isFinite ? (behind * 1000).rounded() / 1000 : nil)
            return .json(status: body.ready ? 200 : 503, JSON.text(body))
        case .metrics:
            let (rooms, participants, connections) = try server.read { ($0.rooms.count, $0.participantCount, $0.connectionCount) }
            let metrics = Metrics(
                rooms: rooms, participants: participants, connections: connections, media: server.mediaStatistics,
                droppedRecordingHops: server.droppedRecordingHops,
                cluster: server.cluster.map { ($0.redisConnected, $0.nodes.count) }, webhooks: server.webhooks?.statistics)
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(metrics.text.utf8))
        case .createRoom:
            let body = try Self.decode(RoomRequest.self, request.body, empty: RoomRequest())
            if let cluster = server.cluster {
                let record = try server.read { registry throws(CallError) in
                    _ = try registry.authorize(token, room: nil, moderator: true, now: epoch)
                    return try registry.newRoom(id: body.roomId, maxParticipants: body.maxParticipants, levelsOnly: body.levelsOnly ?? false)
                }
                let node = try cluster.create(
                    RoomRecord(roomId: record.id, maxParticipants: record.maxParticipants, levelsOnly: record.levelsOnly ? true : nil))
                return .json(status: 201, JSON.text(RoomCreated(roomId: record.id, node: node)))
            }
            let id = try server.decide { registry throws(CallError) in
                _ = try registry.authorize(token, room: nil, moderator: true, now: epoch)
                return try registry.createRoom(id: body.roomId, maxParticipants: body.maxParticipants, levelsOnly: body.levelsOnly ?? false)
            }
            return .json(status: 201, JSON.text(RoomCreated(roomId: id)))
        case .rooms:
            _ = try server.read { registry throws(CallError) in try registry.authorize(token, room: nil, moderator: false, now: epoch) }
            return .json(JSON.text(RoomList(rooms: try roomList())))
        case .room(let room):
            return try server.read { registry throws(CallError) in
                _ = try registry.authorize(token, room: room, moderator: false, now: epoch)
                guard let state = registry.room(room) else { throw CallError(.roomNotFound, "room \(room) not found") }
                return .json(JSON.text(RoomSnapshot(state)))
            }
        case .deleteRoom(let room):
            try server.decide { registry throws(CallError) in
                _ = try registry.authorize(token, room: room, moderator: true, now: epoch)
                return ((), try registry.deleteRoom(room))
            }
            server.cluster?.forget(room)
            return .empty()
        case .addIngest(let room):
            let body = try Self.decode(IngestRequest.self, request.body, empty: nil)
            let info = try server.decide { registry throws(CallError) in
                _ = try registry.authorize(token, room: room, moderator: true, now: epoch)
                let source = try MediaSource(ingest: body.source, rtp: registry.settings.rtp, audioLevelID: body.audioLevelId ?? 1)
                return try registry.addIngest(room: room, participant: body.participantId, displayName: body.displayName, source: source, ssrc: body.ssrc)
            }
            let media = MediaDescription(rtpPort: server.rtpPort, ssrc: info.ssrc!, host: server.configuration.cluster?.advertiseHost)
            return .json(status: 201, JSON.text(IngestAnswer(participantId: info.id, ssrc: info.ssrc!, media: media)))
        case .removeIngest(let room, let participant):
            try server.decide { registry throws(CallError) in
                _ = try registry.authorize(token, room: room, moderator: true, now: epoch)
                return ((), try registry.removeIngest(room: room, participant: participant))
            }
            return .empty()
        case .moderate(let room, let participant, let action):
            try server.decide { registry throws(CallError) in
                let claims = try registry.authorize(token, room: room, moderator: true, now: epoch)
                return ((), try registry.moderate(action, participant, in: room, by: ParticipantID(claims.participantID), epochSeconds: epoch))
            }
            return .empty()
        case .index:
            let token = request.query["token"] ?? token
            _ = try server.read { registry throws(CallError) in try registry.authorize(token, room: nil, moderator: false, now: epoch) }
            let rooms = try roomList().map { ($0.roomId.rawValue, $0.participants) }
            return .html(Dashboard.index(rooms: rooms, token: token ?? ""))
        case .dashboard(let room):
            _ = try server.read { registry throws(CallError) in
                try registry.authorize(request.query["token"], room: room, moderator: false, now: epoch)
            }
            if !server.hosts(room) {
                // Any node serves the page; its WebSocket is redirected to the room's node.
                switch server.cluster?.resolve(room) ?? .absent {
                case .here, .node: break
                case .absent: throw CallError(.roomNotFound, "room \(room) not found")
                case .unavailable(let why): throw CallError(.unavailable, why)
                }
            }
            return .html(Dashboard.page(room: room.rawValue))
        }
    }

    /// Every room: this node's, or with several nodes the cluster's (with each room's node).
    private func roomList() throws(CallError) -> [RoomList.Room] {
        if let cluster = server.cluster {
            return try cluster.rooms().map { record, node, state in
                RoomList.Room(
                    roomId: record.roomId, maxParticipants: record.maxParticipants, participants: state?.participants.count ?? 0,
                    speakerId: state?.speakerId, node: node)
            }
        }
        return try server.read { registry in
            registry.rooms.values.map {
                RoomList.Room(
                    roomId: $0.id, maxParticipants: $0.maxParticipants, participants: $0.participants.count, speakerId: $0.speaker,
                    node: nil)
            }.sorted { $0.roomId.rawValue < $1.roomId.rawValue }
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], empty: T?) throws(CallError) -> T {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }), let empty { return empty }
        guard let value = JSON.decode(type, from: body) else {
            throw CallError(.malformedMessage, "the request body is not the JSON this call takes (see docs/call.md)")
        }
        return value
    }
}

/// `GET /v1/health` answer; with several nodes, also this node's id and the cluster as it sees it.
private struct Health: Encodable {
    var participants: Int
    var rooms: Int
    var status = "ok"
    var node: String?
    var cluster: ClusterHealth?
}

private struct ClusterHealth: Encodable {
    struct Node: Encodable {
        var id: String
        var http: String
        var rooms: Int
        var participants: Int
        /// Share of one core over the last heartbeat.
        var cpu: Double
    }
    /// `connected`, or `lost` while Redis does not answer (the node keeps serving its rooms).
    var redis: String
    /// The live nodes (this one included) as of the last heartbeat.
    var nodes: [Node]
}

/// `GET /v1/rooms` answer.
private struct RoomList: Encodable {
    struct Room: Encodable {
        var roomId: CallRoomID
        var maxParticipants: Int
        var participants: Int
        var speakerId: ParticipantID?
        /// Several nodes: the node hosting the room, null while none does.
        var node: String?
    }
    var rooms: [Room]
}

/// `GET /v1/ready` answer.
private struct Readiness: Encodable {
    var ready: Bool
    /// How far the media loop's clock is behind the wall clock; null when the loop is not running.
    var mediaBehindSeconds: Double?

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(ready, forKey: .ready)
        try c.encode(mediaBehindSeconds, forKey: .mediaBehindSeconds)
    }

    enum CodingKeys: String, CodingKey { case ready, mediaBehindSeconds }
}

/// `POST /v1/rooms` answer.
private struct RoomCreated: Encodable {
    var roomId: CallRoomID
    /// Several nodes: the node the room was placed on.
    var node: String?
}

/// The body of every error answer.
private struct ErrorAnswer: Encodable {
    struct Body: Encodable {
        var code: Int
        var message: String
    }
    var error: Body

    init(_ error: CallError) { self.error = Body(code: error.code.rawValue, message: error.message) }
}

/// `POST /v1/rooms` body.
private struct RoomRequest: Decodable {
    var roomId: CallRoomID?
    var maxParticipants: Int?
    /// The room's publishers are heard by their RFC 6464 levels; nothing of it is decoded (no browsers).
    var levelsOnly: Bool?
}

/// `POST /v1/rooms/{id}/ingest` body.
private struct IngestRequest: Decodable {
    var participantId: ParticipantID
    var displayName: String?
    var source: String
    var ssrc: SSRC?
    /// The sender's extension id of the RFC 6464 audio level (1 by default; Chrome's is 1, others differ).
    var audioLevelId: Int?
}

private struct IngestAnswer: Encodable {
    var participantId: String
    var ssrc: UInt32
    var media: MediaDescription
}

/// `GET /v1/rooms/{id}` answer.
private struct RoomSnapshot: Encodable {
    var roomId: CallRoomID
    var maxParticipants: Int
    var participants: [ParticipantInfo]
    var speakerId: ParticipantID?
    var levelsOnly: Bool

    init(_ room: RoomRegistry.Room) {
        roomId = room.id
        maxParticipants = room.maxParticipants
        participants = room.participants.map(\.info)
        speakerId = room.speaker
        levelsOnly = room.levelsOnly
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(roomId, forKey: .roomId)
        try c.encode(maxParticipants, forKey: .maxParticipants)
        try c.encode(participants, forKey: .participants)
        try c.encode(speakerId, forKey: .speakerId)
        try c.encode(levelsOnly, forKey: .levelsOnly)
    }

    enum CodingKeys: String, CodingKey { case roomId, maxParticipants, participants, speakerId, levelsOnly }
}

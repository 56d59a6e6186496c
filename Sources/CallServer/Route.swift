import CallProtocol

/// One call of the HTTP API (docs/call.md, "HTTP API"), read from a request's method and path.
enum Route: Equatable, Sendable {
    /// `GET /v1/health`: the process answers (liveness).
    case health
    /// `GET /v1/ready`: 200 while the media loop keeps its clock, 503 otherwise (readiness).
    case ready
    /// `GET /metrics`: Prometheus text format.
    case metrics
    /// `POST /v1/rooms`
    case createRoom
    /// `GET /v1/rooms/{id}`
    case room(CallRoomID)
    /// `DELETE /v1/rooms/{id}`
    case deleteRoom(CallRoomID)
    /// `POST /v1/rooms/{id}/ingest`
    case addIngest(room: CallRoomID)
    /// `DELETE /v1/rooms/{id}/ingest/{participantId}`
    case removeIngest(room: CallRoomID, participant: ParticipantID)
    /// `GET /v1/rooms`: every room (of the cluster, with several nodes).
    case rooms
    /// `POST /v1/rooms/{id}/participants/{participantId}/mute` or `…/unmute`, `DELETE
    /// /v1/rooms/{id}/participants/{participantId}`: a moderator's action from the API.
    case moderate(room: CallRoomID, participant: ParticipantID, action: RoomRegistry.Moderation)
    /// `GET /?token=…`: the rooms, each a link to its dashboard (a server-wide token).
    case index
    /// `GET /rooms/{id}?token=…`: the dashboard page.
    case dashboard(room: CallRoomID)

    /// The call `method` and `path` name; `HEAD` is `GET` without the body (RFC 9110 §9.3.2: the
    /// transport leaves the body out).
    /// - Throws: `.noSuchCall` (404) for a path no call has, `.methodNotAllowed` (405) for a path whose
    ///   calls take other methods.
    init(method: String, path: String) throws(CallError) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (method == "HEAD" ? "GET" : method, parts.first, parts.dropFirst().first, parts.count) {
        case ("GET", nil, nil, 0): self = .index
        case ("GET", "v1", "health", 2): self = .health
        case ("GET", "v1", "ready", 2): self = .ready
        case ("GET", "metrics", nil, 1): self = .metrics
        case ("POST", "v1", "rooms", 2): self = .createRoom
        case ("GET", "v1", "rooms", 2): self = .rooms
        case ("POST", "v1", "rooms", 6) where parts[3] == "participants" && (parts[5] == "mute" || parts[5] == "unmute"):
            self = .moderate(room: CallRoomID(parts[2]), participant: ParticipantID(parts[4]), action: parts[5] == "mute" ? .mute : .unmute)
        case ("DELETE", "v1", "rooms", 5) where parts[3] == "participants":
            self = .moderate(room: CallRoomID(parts[2]), participant: ParticipantID(parts[4]), action: .remove)
        case ("GET", "v1", "rooms", 3): self = .room(CallRoomID(parts[2]))
        case ("DELETE", "v1", "rooms", 3): self = .deleteRoom(CallRoomID(parts[2]))
        case ("POST", "v1", "rooms", 4) where parts[3] == "ingest": self = .addIngest(room: CallRoomID(parts[2]))
        case ("DELETE", "v1", "rooms", 5) where parts[3] == "ingest":
            self = .removeIngest(room: CallRoomID(parts[2]), participant: ParticipantID(parts[4]))
        case ("GET", "rooms", _, 2): self = .dashboard(room: CallRoomID(parts[1]))
        default:
            let allowed = Self.methods(path: path)
            guard !allowed.isEmpty else { throw CallError(.noSuchCall, "no such API call: \(method) \(path)") }
            throw CallError(.methodNotAllowed, "\(path) takes \(allowed.joined(separator: ", ")), not \(method)")
        }
    }

    /// The methods some call takes at `path` (`GET` with `HEAD`); empty when no call has that path.
    static func methods(path: String) -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let get = ["GET", "HEAD"]
        switch (parts.first, parts.dropFirst().first, parts.count) {
        case (nil, nil, 0): return get
        case ("v1", "health", 2), ("v1", "ready", 2), ("metrics", nil, 1), ("rooms", _, 2): return get
        case ("v1", "rooms", 2): return get + ["POST"]
        case ("v1", "rooms", 3): return get + ["DELETE"]
        case ("v1", "rooms", 4) where parts[3] == "ingest": return ["POST"]
        case ("v1", "rooms", 5) where parts[3] == "ingest" || parts[3] == "participants": return ["DELETE"]
        case ("v1", "rooms", 6) where parts[3] == "participants" && (parts[5] == "mute" || parts[5] == "unmute"): return ["POST"]
        default: return []
        }
    }

    /// The room the call is about, if any: with several nodes, the room's node answers it.
    var roomID: CallRoomID? {
        switch self {
        case .room(let room), .deleteRoom(let room), .addIngest(let room), .removeIngest(let room, _), .moderate(let room, _, _):
            room
        case .health, .ready, .metrics, .createRoom, .rooms, .index, .dashboard: nil
        }
    }
}

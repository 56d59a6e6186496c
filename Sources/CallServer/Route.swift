import CallProtocol

/// One call of the HTTP API (docs/call.md, "HTTP API"), read from a request's method and path.
enum Route: Equatable, Sendable {
    /// `GET /v1/health`
    case health
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
    /// `GET /rooms/{id}?token=…`: the dashboard page.
    case dashboard(room: CallRoomID)

    /// The call `method` and `path` name; `HEAD` is `GET` without the body (RFC 9110 §9.3.2: the
    /// transport leaves the body out).
    /// - Throws: `.malformedMessage` for a method and path that name no call.
    init(method: String, path: String) throws(CallError) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        switch (method == "HEAD" ? "GET" : method, parts.first, parts.dropFirst().first, parts.count) {
        case ("GET", "v1", "health", 2): self = .health
        case ("POST", "v1", "rooms", 2): self = .createRoom
        case ("GET", "v1", "rooms", 3): self = .room(CallRoomID(parts[2]))
        case ("DELETE", "v1", "rooms", 3): self = .deleteRoom(CallRoomID(parts[2]))
        case ("POST", "v1", "rooms", 4) where parts[3] == "ingest": self = .addIngest(room: CallRoomID(parts[2]))
        case ("DELETE", "v1", "rooms", 5) where parts[3] == "ingest":
            self = .removeIngest(room: CallRoomID(parts[2]), participant: ParticipantID(parts[4]))
        case ("GET", "rooms", _, 2): self = .dashboard(room: CallRoomID(parts[1]))
        default: throw CallError(.malformedMessage, "no such API call: \(method) \(path)")
        }
    }
}

import CallProtocol

/// A plain-RTP publisher of a room, as `RoomServer.ingestPublishers()` lists it.
public struct IngestPublisher: Sendable, Hashable {
    public var room: String
    public var participant: String
    public var ssrc: UInt32

    public init(room: String, participant: String, ssrc: UInt32) {
        self.room = room
        self.participant = participant
        self.ssrc = ssrc
    }
}

/// The rooms and plain-RTP publishers of a server, for what runs beside it in the same process (an SFU's
/// adapter, `SFUSidecar`): the calls of the HTTP API without tokens, which only the process itself can
/// make. One process only: with several nodes (`--redis`) these act on this node's rooms.
extension RoomServer {
    /// Makes room `id` unless it exists.
    /// - Returns: True if it was made now.
    /// - Throws: `.malformedMessage` for an id that breaks `AccessToken.idRule`.
    @discardableResult
    public func openRoomIfMissing(_ id: String) throws(CallError) -> Bool {
        try decide { registry throws(CallError) in
            guard registry.room(CallRoomID(id)) == nil else { return (false, []) }
            let (_, effects) = try registry.createRoom(id: CallRoomID(id), maxParticipants: nil)
            return (true, effects)
        }
    }

    /// Deletes room `id` if it exists (its members are disconnected, as by `DELETE /v1/rooms/{id}`).
    public func closeRoomIfPresent(_ id: String) {
        _ = try? decide { registry throws(CallError) in
            guard registry.room(CallRoomID(id)) != nil else { return ((), []) }
            return ((), try registry.deleteRoom(CallRoomID(id)))
        }
    }

    /// Adds a plain-RTP publisher, as `POST /v1/rooms/{id}/ingest` does.
    /// - Parameters:
    ///   - source: `HOST` (any port of it) or `HOST:PORT`, numeric.
    ///   - ssrc: The SSRC it will send with; nil: the server picks one.
    ///   - audioLevelID: The extension id of its RFC 6464 audio level, 1–255.
    /// - Returns: Its SSRC.
    /// - Throws: `CallError` as the API call answers (no such room, a taken id or SSRC, a bad source).
    public func addIngest(
        room: String, participant: String, displayName: String?, source: String, ssrc: UInt32? = nil, audioLevelID: Int = 1
    ) throws(CallError) -> UInt32 {
        try decide { registry throws(CallError) in
            let media = try MediaSource(ingest: source, rtp: registry.settings.rtp, audioLevelID: audioLevelID)
            let (info, effects) = try registry.addIngest(
                room: CallRoomID(room), participant: ParticipantID(participant), displayName: displayName, source: media,
                ssrc: ssrc.map { SSRC($0) })
            return (info.ssrc!, effects)
        }
    }

    /// Removes a plain-RTP publisher, as `DELETE /v1/rooms/{id}/ingest/{participantId}` does: its utterance ends
    /// now, and if it held the floor the room's next `speaker-changed` says who holds it.
    /// - Throws: `.roomNotFound`, `.noSuchParticipant`.
    public func removeIngest(room: String, participant: String) throws(CallError) {
        try decide { registry throws(CallError) in
            ((), try registry.removeIngest(room: CallRoomID(room), participant: ParticipantID(participant)))
        }
    }

    /// Every plain-RTP publisher of every room.
    public func ingestPublishers() -> [IngestPublisher] {
        (try? read { registry in
            registry.rooms.values.flatMap { room in
                room.participants.compactMap { participant -> IngestPublisher? in
                    guard participant.connection == nil, let ssrc = participant.info.ssrc else { return nil }
                    return IngestPublisher(room: room.id.rawValue, participant: participant.info.id, ssrc: ssrc)
                }
            }
        }) ?? []
    }

    /// The rooms' ids.
    public func roomIDs() -> [String] {
        (try? read { registry in registry.rooms.keys.map(\.rawValue) }) ?? []
    }
}

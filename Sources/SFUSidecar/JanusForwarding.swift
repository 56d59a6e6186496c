public import CallServer

/// The rules that keep the room server's rooms equal to Janus's: every VideoRoom publisher is a plain-RTP
/// publisher of the room with the same id, named by its Janus id, and Janus forwards its audio to the
/// server's RTP address with that publisher's SSRC; nothing else is forwarded there. A value: it reads what
/// both sides hold and returns the actions that make them agree (the adapter carries them out), so the
/// same rules serve the start, the periodic check, each event, and the restart of either side.
public enum JanusForwarding {
    /// Where Janus sends a publisher's audio: the room server's RTP address as Janus reaches it.
    public struct Target: Sendable, Hashable {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// One Janus room as a snapshot saw it.
    public struct Room: Sendable {
        public var id: JanusID
        public var publishers: [JanusPublisher]
        public var forwarders: [JanusForwarder]

        public init(id: JanusID, publishers: [JanusPublisher], forwarders: [JanusForwarder]) {
            self.id = id
            self.publishers = publishers
            self.forwarders = forwarders
        }
    }

    public enum Action: Sendable, Equatable {
        /// Add the publisher to the room (made first if missing; the server picks its SSRC), then forward
        /// its audio with that SSRC.
        case publish(room: JanusID, publisher: JanusPublisher)
        /// The publisher is in the room but nothing forwards its audio with its SSRC: forward it.
        case forward(room: JanusID, publisher: JanusID, ssrc: UInt32)
        /// A forwarder to the server's RTP address that no publisher of ours matches (left by an earlier
        /// run of the sidecar, or a duplicate): stop it.
        case stopForward(room: JanusID, publisher: JanusID, stream: UInt64)
        /// The publisher is gone from Janus: remove it (its utterance ends now).
        case remove(room: String, participant: String)
        /// The room is gone from Janus: close it.
        case closeRoom(String)
    }

    /// What to do so that the server matches a full snapshot of Janus.
    /// - Parameters:
    ///   - janus: Every VideoRoom room with its publishers and forwarders.
    ///   - ingests: The server's plain-RTP publishers.
    ///   - mirrored: The server's rooms that mirror a Janus room (made by the adapter); those Janus no longer
    ///     has are closed. Other rooms of the server are left alone.
    /// - Complexity: O(publishers + forwarders + ingests).
    public static func plan(janus: [Room], ingests: [IngestPublisher], mirrored: Set<String>, target: Target) -> [Action] {
        var actions: [Action] = []
        var ingestsByRoom: [String: [String: UInt32]] = [:]
        for ingest in ingests { ingestsByRoom[ingest.room, default: [:]][ingest.participant] = ingest.ssrc }
        for room in janus {
            let roomID = room.id.description
            let ours = ingestsByRoom[roomID] ?? [:]
            // The forwarders to us that carry each publisher's audio with its SSRC; the first of each is kept.
            var kept: Set<JanusID> = []
            for forwarder in room.forwarders where forwarder.host == target.host && forwarder.port == target.port {
                if let ssrc = ours[forwarder.publisher.description], forwarder.ssrc == ssrc, forwarder.type == "audio",
                    !kept.contains(forwarder.publisher), room.publishers.contains(where: { $0.id == forwarder.publisher })
                {
                    kept.insert(forwarder.publisher)
                } else {
                    actions.append(.stopForward(room: room.id, publisher: forwarder.publisher, stream: forwarder.stream))
                }
            }
            for publisher in room.publishers {
                if let ssrc = ours[publisher.id.description] {
                    if !kept.contains(publisher.id) { actions.append(.forward(room: room.id, publisher: publisher.id, ssrc: ssrc)) }
                } else {
                    actions.append(.publish(room: room.id, publisher: publisher))
                }
            }
            let present = Set(room.publishers.map(\.id.description))
            for participant in ours.keys.sorted() where !present.contains(participant) {
                actions.append(.remove(room: roomID, participant: participant))
            }
        }
        let janusRooms = Set(janus.map(\.id.description))
        for room in mirrored.sorted() where !janusRooms.contains(room) { actions.append(.closeRoom(room)) }
        return actions
    }

    /// What to do for one event, before the next snapshot confirms it.
    public static func plan(event: JanusEvent, ingests: [IngestPublisher]) -> [Action] {
        switch event {
        case .published(let room, let publisher):
            let known = ingests.contains { $0.room == room.description && $0.participant == publisher.id.description }
            return known ? [] : [.publish(room: room, publisher: publisher)]
        case .gone(let room, let publisher):
            let known = ingests.contains { $0.room == room.description && $0.participant == publisher.description }
            return known ? [.remove(room: room.description, participant: publisher.description)] : []
        case .destroyed(let room):
            return [.closeRoom(room.description)]
        }
    }
}

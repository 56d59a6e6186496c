/// A participant as the protocol describes it (PARTICIPANT in docs/call.md).
public struct ParticipantInfo: Codable, Sendable, Hashable {
    public var id: String
    public var displayName: String
    public var role: Role
    public var micMuted: Bool
    /// Whether the audio stream is enabled (publishing).
    public var audio: Bool
    /// Whether the video stream is enabled (signalled state only).
    public var video: Bool
    /// The SSRC of the participant's audio, absent for subscribers.
    public var ssrc: UInt32?

    public init(id: String, displayName: String, role: Role, micMuted: Bool, audio: Bool, video: Bool, ssrc: UInt32?) {
        self.id = id
        self.displayName = displayName
        self.role = role
        self.micMuted = micMuted
        self.audio = audio
        self.video = video
        self.ssrc = ssrc
    }
}

/// Where and how a publisher sends its audio (MEDIA in docs/call.md).
public struct MediaDescription: Codable, Sendable, Hashable {
    /// The server's RTP port.
    public var rtpPort: Int
    /// The host to send RTP to (a node's `--advertise` address); nil: the signalling connection's host.
    public var host: String?
    /// The SSRC the publisher must use.
    public var ssrc: UInt32
    public var payloadType: Int
    public var clockRate: Int
    /// The RFC 8285 one-byte extension id of the RFC 6464 audio level.
    public var audioLevelId: Int

    public init(
        rtpPort: Int, ssrc: UInt32, payloadType: Int = 111, clockRate: Int = 48000, audioLevelId: Int = 1, host: String? = nil
    ) {
        self.rtpPort = rtpPort
        self.host = host
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.clockRate = clockRate
        self.audioLevelId = audioLevelId
    }
}

/// `redirect` (several nodes): where the room lives.
public struct Redirect: Codable, Sendable, Hashable {
    /// The hosting node's signalling URL, with the room: `ws://HOST:PORT/v1/signal?room=ID`.
    public var url: String
    /// The hosting node's id (`serve --node-id`).
    public var nodeId: String
    public var roomId: String

    public init(url: String, nodeId: String, roomId: String) {
        self.url = url
        self.nodeId = nodeId
        self.roomId = roomId
    }
}

/// The two kinds of stream a participant signals.
public enum StreamKind: String, Codable, Sendable, Hashable, CaseIterable {
    case audio
    case video
}

/// Why a participant left.
public enum LeaveReason: String, Codable, Sendable, Hashable, CaseIterable {
    /// It said `leave` or closed its connection.
    case left
    /// A moderator removed it.
    case removed
    /// It stopped sending (no message within the client timeout).
    case timeout
    /// The room was deleted.
    case closed
}

/// The content of a `message`: text, or bytes (base64 on the wire).
public enum MessageBody: Sendable, Hashable {
    case text(String)
    case data([UInt8])
}

/// What `observing` tells an observer.
public struct ObservedRoom: Sendable, Hashable {
    public var roomID: String
    /// Everyone in the room.
    public var participants: [ParticipantInfo]
    /// The current dominant speaker, nil if nobody speaks.
    public var speakerID: String?

    public init(roomID: String, participants: [ParticipantInfo], speakerID: String?) {
        self.roomID = roomID
        self.participants = participants
        self.speakerID = speakerID
    }
}

/// What `joined` tells a new participant.
public struct JoinedRoom: Sendable, Hashable {
    public var roomID: String
    public var participantID: String
    /// Everyone in the room, the new participant included.
    public var participants: [ParticipantInfo]
    /// The current dominant speaker, nil if nobody speaks.
    public var speakerID: String?
    /// Where to send audio; nil for subscribers and clients that announced no RTP port.
    public var media: MediaDescription?

    public init(roomID: String, participantID: String, participants: [ParticipantInfo], speakerID: String?, media: MediaDescription?) {
        self.roomID = roomID
        self.participantID = participantID
        self.participants = participants
        self.speakerID = speakerID
        self.media = media
    }
}

extension ParticipantInfo {
    /// `id` as the server's typed id.
    public var participantID: ParticipantID { ParticipantID(id) }
}

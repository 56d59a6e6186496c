/// The `type` of every message a client sends: the one place its name on the wire is written.
public enum ClientMessageType: String, Sendable, Hashable, CaseIterable, Codable {
    case join
    case observe
    case leave
    case muteMic = "mute-mic"
    case unmuteMic = "unmute-mic"
    case enableStream = "enable-stream"
    case disableStream = "disable-stream"
    case message
    case muteParticipant = "mute-participant"
    case unmuteParticipant = "unmute-participant"
    case removeParticipant = "remove-participant"
    case ping
    case offer
    case iceCandidate = "ice-candidate"
}

/// The `type` of every message the server sends: the one place its name on the wire is written.
public enum ServerMessageType: String, Sendable, Hashable, CaseIterable, Codable {
    case joined
    case observing
    case participantJoined = "participant-joined"
    case participantLeft = "participant-left"
    case streamEnabled = "stream-enabled"
    case streamDisabled = "stream-disabled"
    case micMuted = "mic-muted"
    case speakerChanged = "speaker-changed"
    case audioLevels = "audio-levels"
    case message
    case error
    case pong
    case redirect
    case answer
    case iceCandidate = "ice-candidate"
}

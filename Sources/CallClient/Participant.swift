import CallProtocol

/// A participant of the meeting, local or remote, as last signalled.
public struct Participant: Sendable, Hashable, Identifiable {
    public var id: String
    public var displayName: String
    /// True for this client's own participant.
    public var isLocal: Bool
    public var role: Role
    public var micMuted: Bool
    /// Whether its audio stream is enabled.
    public var audioEnabled: Bool
    /// Whether its video stream is enabled (signalled state only).
    public var videoEnabled: Bool
    /// The SSRC of its audio (forwarded RTP carries it); nil for subscribers.
    public var ssrc: UInt32?

    init(_ info: ParticipantInfo, isLocal: Bool) {
        id = info.id
        displayName = info.displayName
        self.isLocal = isLocal
        role = info.role
        micMuted = info.micMuted
        audioEnabled = info.audio
        videoEnabled = info.video
        ssrc = info.ssrc
    }
}

/// Something that happened in the meeting. The same events reach `MeetingEventListener`s.
public enum MeetingEvent: Sendable, Hashable {
    /// Joined; everyone in the room at that moment, the local participant included.
    case meetingJoined(participants: [Participant])
    /// `reason` is nil after `leave()`, otherwise the error that ended the meeting.
    case meetingLeft(reason: MeetingError?)
    case participantJoined(Participant)
    case participantLeft(Participant, reason: LeaveReason)
    /// The dominant speaker; nil when nobody speaks.
    case speakerChanged(participantId: String?)
    case streamEnabled(participantId: String, kind: StreamKind)
    case streamDisabled(participantId: String, kind: StreamKind)
    /// `by`: the moderator who muted the participant, nil when it muted itself.
    case micMuted(participantId: String, muted: Bool, by: String?)
    /// dBov per participant (−127…0), every 200 ms.
    case audioLevels([String: Double])
    case message(from: String, body: MessageBody)
    /// The local user talks while the microphone is muted (from the local engine, at most every 3 s).
    case speakingWhileMuted
    case error(MeetingError)
}

/// Receives meeting events, with the names app developers know from video-call SDKs. Every method has
/// an empty default, so a listener implements only what it needs. Called on the meeting's serial
/// event queue, one event at a time, in the order of `Meeting.events`; nothing after `onMeetingLeft`.
public protocol MeetingEventListener: AnyObject, Sendable {
    func onMeetingJoined()
    func onMeetingLeft()
    func onParticipantJoined(_ participant: Participant)
    func onParticipantLeft(_ participant: Participant)
    func onSpeakerChanged(participantId: String?)
    func onStreamEnabled(participantId: String, kind: StreamKind)
    func onStreamDisabled(participantId: String, kind: StreamKind)
    func onMicMuted(participantId: String, muted: Bool)
    func onAudioLevels(_ levels: [String: Double])
    func onMessage(from participantId: String, body: MessageBody)
    func onSpeakingWhileMuted()
    func onError(_ error: MeetingError)
}

extension MeetingEventListener {
    public func onMeetingJoined() {}
    public func onMeetingLeft() {}
    public func onParticipantJoined(_ participant: Participant) {}
    public func onParticipantLeft(_ participant: Participant) {}
    public func onSpeakerChanged(participantId: String?) {}
    public func onStreamEnabled(participantId: String, kind: StreamKind) {}
    public func onStreamDisabled(participantId: String, kind: StreamKind) {}
    public func onMicMuted(participantId: String, muted: Bool) {}
    public func onAudioLevels(_ levels: [String: Double]) {}
    public func onMessage(from participantId: String, body: MessageBody) {}
    public func onSpeakingWhileMuted() {}
    public func onError(_ error: MeetingError) {}
}

extension MeetingEvent {
    /// Calls the listener method of this event.
    func deliver(to listener: any MeetingEventListener) {
        switch self {
        case .meetingJoined: listener.onMeetingJoined()
        case .meetingLeft: listener.onMeetingLeft()
        case .participantJoined(let participant): listener.onParticipantJoined(participant)
        case .participantLeft(let participant, _): listener.onParticipantLeft(participant)
        case .speakerChanged(let id): listener.onSpeakerChanged(participantId: id)
        case .streamEnabled(let id, let kind): listener.onStreamEnabled(participantId: id, kind: kind)
        case .streamDisabled(let id, let kind): listener.onStreamDisabled(participantId: id, kind: kind)
        case .micMuted(let id, let muted, _): listener.onMicMuted(participantId: id, muted: muted)
        case .audioLevels(let levels): listener.onAudioLevels(levels)
        case .message(let from, let body): listener.onMessage(from: from, body: body)
        case .speakingWhileMuted: listener.onSpeakingWhileMuted()
        case .error(let error): listener.onError(error)
        }
    }
}

import CallProtocol
import Synchronization

/// A participant of the meeting, local or remote, as last signalled.
///
/// A value: the meeting's `participants` and its events give copies as they were at that moment.
/// `addEventListener` registers a listener for this participant's own events, whichever copy it is
/// called on; two copies are equal when their signalled state is.
public struct Participant: Sendable, Hashable, Identifiable {
    /// The participant id (the token's `sub`), unique in the room.
    public var id: String
    /// The name others see: the token's signed name, the configured `displayName`, or the id.
    public var displayName: String
    /// True for this client's own participant.
    public var isLocal: Bool
    /// Subscriber, publisher or moderator, from the token.
    public var role: Role
    /// Whether its microphone is muted (by itself or by a moderator).
    public var micMuted: Bool
    /// Whether its audio stream is enabled.
    public var audioEnabled: Bool
    /// Whether its video stream is enabled (signalled state only).
    public var videoEnabled: Bool
    /// The SSRC of its audio (forwarded RTP carries it); nil for subscribers.
    public var ssrc: UInt32?
    /// The meeting's per-participant listeners; not part of the value's identity.
    let listeners: ParticipantListeners?

    init(_ info: ParticipantInfo, isLocal: Bool, listeners: ParticipantListeners?) {
        id = info.id
        displayName = info.displayName
        self.isLocal = isLocal
        role = info.role
        micMuted = info.micMuted
        audioEnabled = info.audio
        videoEnabled = info.video
        ssrc = info.ssrc
        self.listeners = listeners
    }

    /// Adds a listener for this participant's own events (its streams, microphone, level, speaking,
    /// leaving). It hears them on the meeting's event queue, right after the meeting's listeners hear
    /// the same event, from the events delivered after this call; after `onLeft` it is dropped.
    public func addEventListener(_ listener: any ParticipantEventListener) {
        listeners?.add(listener, for: id)
    }

    /// Removes a listener; an event being delivered at that moment may still reach it.
    public func removeEventListener(_ listener: any ParticipantEventListener) {
        listeners?.remove(listener, for: id)
    }

    /// Equal when the signalled state is (the listener registry is not part of the value).
    public static func == (a: Participant, b: Participant) -> Bool {
        (a.id, a.displayName, a.isLocal, a.role) == (b.id, b.displayName, b.isLocal, b.role)
            && (a.micMuted, a.audioEnabled, a.videoEnabled, a.ssrc) == (b.micMuted, b.audioEnabled, b.videoEnabled, b.ssrc)
    }

    /// Hashes the signalled state, as `==` compares it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(displayName)
        hasher.combine(isLocal)
        hasher.combine(role)
        hasher.combine(micMuted)
        hasher.combine(audioEnabled)
        hasher.combine(videoEnabled)
        hasher.combine(ssrc)
    }
}

/// Why a participant left the meeting: the local one (`onMeetingLeft(reason:)`) or another
/// (`participantLeft(_:reason:)`, a participant's `onLeft(reason:)`). The SDK's one leave reason.
public enum MeetingLeaveReason: String, Sendable, Hashable, CaseIterable {
    /// The app called `leave()` (or dropped the meeting); another participant left or closed its connection.
    case left
    /// A moderator removed the participant (for the local one, the server's 4011).
    case removed
    /// The room was closed (4013).
    case roomClosed = "room-closed"
    /// The server heard nothing from the participant for its client timeout (4012); with
    /// `MeetingConfiguration.reconnect` on, the local meeting reconnects instead.
    case timedOut = "timed-out"
    /// The local participant only: the connection to the server was lost and not re-established within
    /// `reconnectTimeout` (or `reconnect` is off) (3001).
    case connectionLost = "connection-lost"

    /// The reason the server gave for another participant's leaving.
    init(_ reason: LeaveReason) {
        switch reason {
        case .left: self = .left
        case .removed: self = .removed
        case .timeout: self = .timedOut
        case .closed: self = .roomClosed
        }
    }
}

/// A change of the participant list (PlanetKit's peer-list update): who joined, who left, whose
/// signalled state (microphone, streams) changed, and the list after the change.
public struct ParticipantListUpdate: Sendable, Hashable {
    /// Joined with this change.
    public var added: [Participant]
    /// Left with this change, as they were last signalled.
    public var removed: [Participant]
    /// Still in the room, with a changed state (as they are now).
    public var updated: [Participant]
    /// Everyone in the room after the change, in joining order, the local participant included.
    public var participants: [Participant]

    /// A list update: who was added, removed and updated, and everyone after the change.
    public init(added: [Participant] = [], removed: [Participant] = [], updated: [Participant] = [], participants: [Participant]) {
        self.added = added
        self.removed = removed
        self.updated = updated
        self.participants = participants
    }
}

/// Something that happened in the meeting. The same events reach `MeetingEventListener`s.
public enum MeetingEvent: Sendable, Hashable {
    /// Joined; everyone in the room at that moment, the local participant included. A
    /// `participantJoined` follows for each remote participant among them.
    case meetingJoined(participants: [Participant])
    /// Left: why, and the error that ended the meeting (nil after `leave()`): the server's 4011,
    /// 4012 or 4013 for a removal, a timeout or a closed room, 3001 for a lost connection (after
    /// reconnecting failed), or the server's error that refused a re-join.
    case meetingLeft(reason: MeetingLeaveReason, error: MeetingError?)
    /// A remote participant joined, or (right after `meetingJoined`) was in the room already.
    case participantJoined(Participant)
    /// A remote participant left, and why.
    case participantLeft(Participant, reason: MeetingLeaveReason)
    /// The participant list changed: after each `participantJoined` and `participantLeft`, and when
    /// a participant's microphone or streams change (after `micMuted`, `streamEnabled`, `streamDisabled`).
    case participantsChanged(ParticipantListUpdate)
    /// The dominant speaker; nil when nobody speaks.
    case speakerChanged(participantId: String?)
    /// A participant's audio or video stream was turned on.
    case streamEnabled(participantId: String, kind: StreamKind)
    /// A participant's audio or video stream was turned off.
    case streamDisabled(participantId: String, kind: StreamKind)
    /// `by`: the moderator who muted the participant, nil when it muted itself.
    case micMuted(participantId: String, muted: Bool, by: String?)
    /// dBov per participant (−127…0), every 200 ms.
    case audioLevels([String: Double])
    /// A text or data message from another participant (to everyone or to this one).
    case message(from: String, body: MessageBody)
    /// The local user talks while the microphone is muted (from the local engine, at most every 3 s).
    case speakingWhileMuted
    /// Something failed: a call, a device, the server's answer (`MeetingError`, with its code).
    case error(MeetingError)
    /// The connection to the server was lost while joined (or the server redirected the meeting to
    /// another node); the meeting is connecting again (`MeetingConfiguration.reconnect`). The
    /// participants stay as they were; the microphone sends nothing until `reconnected`.
    case reconnecting
    /// Joined again after `reconnecting`: everyone in the room now, the local participant included.
    /// The changes to the list came just before, as `participantLeft`/`participantJoined`/
    /// `participantsChanged` (and `speakerChanged`).
    case reconnected(participants: [Participant])
}

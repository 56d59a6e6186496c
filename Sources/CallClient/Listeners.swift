import CallProtocol
import Synchronization

/// Receives meeting events, with the names app developers know from video-call SDKs. Every method has
/// an empty default, so a listener implements only what it needs.
///
/// Main-actor isolated: a class that conforms (a view controller, a view model, a class with `var`s) is
/// `@MainActor` itself and may touch UI state in every method. The meeting holds listeners weakly
/// (`Meeting.addEventListener`) and calls them on the main actor, one event at a time, in the order of
/// `Meeting.events`; nothing after `onMeetingLeft`. The main actor must run: an app's main loop, an
/// `async` `main`, or `dispatchMain()`. Code that wants the events elsewhere reads `Meeting.events`
/// from any task instead.
@MainActor public protocol MeetingEventListener: AnyObject, Sendable {
    /// Joined. The participants already in the room follow, each as `onParticipantJoined`.
    func onMeetingJoined()
    /// Joined; everyone in the room at that moment, the local participant included. Its default calls
    /// `onMeetingJoined()`.
    func onMeetingJoined(participants: [Participant])
    /// Left the meeting. `onMeetingLeft(reason:)` says why; its default calls this.
    func onMeetingLeft()
    /// Left, and why. Its default calls `onMeetingLeft()`.
    func onMeetingLeft(reason: MeetingLeaveReason)
    /// A remote participant is in the room: one who joined, and, right after `onMeetingJoined`, each
    /// one who was there already.
    func onParticipantJoined(_ participant: Participant)
    /// A remote participant left the room.
    func onParticipantLeft(_ participant: Participant)
    /// The participant list changed (PlanetKit's peer-list update).
    func onParticipantsChanged(_ update: ParticipantListUpdate)
    /// The dominant speaker changed: its participant id, or nil when nobody speaks.
    func onSpeakerChanged(participantId: String?)
    /// A participant's stream of `kind` started.
    func onStreamEnabled(participantId: String, kind: StreamKind)
    /// A participant's stream of `kind` stopped.
    func onStreamDisabled(participantId: String, kind: StreamKind)
    /// A participant's microphone was muted (true) or unmuted (false).
    func onMicMuted(participantId: String, muted: Bool)
    /// dBov per participant (−127…0), every 200 ms.
    func onAudioLevels(_ levels: [String: Double])
    /// A message another participant sent with `send(_:to:)`.
    func onMessage(from participantId: String, body: MessageBody)
    /// The local user talks while the microphone is muted (at most every 3 s).
    func onSpeakingWhileMuted()
    /// Something failed without ending the meeting (a device, a refused action); also thrown where an API call caused it.
    func onError(_ error: MeetingError)
    /// The connection was lost; the meeting is reconnecting (`MeetingEvent.reconnecting`).
    func onReconnecting()
    /// Joined again (`MeetingEvent.reconnected`).
    func onReconnected()
}

extension MeetingEventListener {
    public func onMeetingJoined() {}
    public func onMeetingJoined(participants: [Participant]) { onMeetingJoined() }
    public func onMeetingLeft() {}
    public func onMeetingLeft(reason: MeetingLeaveReason) { onMeetingLeft() }
    public func onParticipantJoined(_ participant: Participant) {}
    public func onParticipantLeft(_ participant: Participant) {}
    public func onParticipantsChanged(_ update: ParticipantListUpdate) {}
    public func onSpeakerChanged(participantId: String?) {}
    public func onStreamEnabled(participantId: String, kind: StreamKind) {}
    public func onStreamDisabled(participantId: String, kind: StreamKind) {}
    public func onMicMuted(participantId: String, muted: Bool) {}
    public func onAudioLevels(_ levels: [String: Double]) {}
    public func onMessage(from participantId: String, body: MessageBody) {}
    public func onSpeakingWhileMuted() {}
    public func onError(_ error: MeetingError) {}
    public func onReconnecting() {}
    public func onReconnected() {}
}

/// Receives one participant's events (`Participant.addEventListener`). Every method has an empty
/// default. Main-actor isolated and weakly held, like `MeetingEventListener`: called on the main actor,
/// right after the meeting's listeners hear the same event.
@MainActor public protocol ParticipantEventListener: AnyObject, Sendable {
    /// Its audio or (signalled) video stream was enabled: a microphone switch ends with one, and the
    /// local participant's `enableWebcam()` raises one.
    func onStreamEnabled(kind: StreamKind)
    /// Its stream of `kind` stopped.
    func onStreamDisabled(kind: StreamKind)
    /// Its microphone was muted or unmuted; `by` is the moderator who did it, nil when it did it itself.
    func onMicMuted(_ muted: Bool, by moderatorId: String?)
    /// Its level in dBov (−127…0), every 200 ms while it publishes.
    func onAudioLevel(_ level: Double)
    /// It became (true) or stopped being (false) the dominant speaker.
    func onSpeakingChanged(_ speaking: Bool)
    /// It left the room; nothing more is delivered to this listener.
    func onLeft(reason: MeetingLeaveReason)
}

extension ParticipantEventListener {
    public func onStreamEnabled(kind: StreamKind) {}
    public func onStreamDisabled(kind: StreamKind) {}
    public func onMicMuted(_ muted: Bool, by moderatorId: String?) {}
    public func onAudioLevel(_ level: Double) {}
    public func onSpeakingChanged(_ speaking: Bool) {}
    public func onLeft(reason: MeetingLeaveReason) {}
}

extension MeetingEvent {
    /// Calls the listener method of this event.
    @MainActor func deliver(to listener: any MeetingEventListener) {
        switch self {
        case .meetingJoined(let participants): listener.onMeetingJoined(participants: participants)
        case .meetingLeft(let reason, _): listener.onMeetingLeft(reason: reason)
        case .participantJoined(let participant): listener.onParticipantJoined(participant)
        case .participantLeft(let participant, _): listener.onParticipantLeft(participant)
        case .participantsChanged(let update): listener.onParticipantsChanged(update)
        case .speakerChanged(let id): listener.onSpeakerChanged(participantId: id)
        case .streamEnabled(let id, let kind): listener.onStreamEnabled(participantId: id, kind: kind)
        case .streamDisabled(let id, let kind): listener.onStreamDisabled(participantId: id, kind: kind)
        case .micMuted(let id, let muted, _): listener.onMicMuted(participantId: id, muted: muted)
        case .audioLevels(let levels): listener.onAudioLevels(levels)
        case .message(let from, let body): listener.onMessage(from: from, body: body)
        case .speakingWhileMuted: listener.onSpeakingWhileMuted()
        case .error(let error): listener.onError(error)
        case .reconnecting: listener.onReconnecting()
        case .reconnected: listener.onReconnected()
        }
    }
}

/// A listener held weakly: the meeting never keeps an app's view controller alive.
struct WeakMeetingListener: Sendable {
    weak var listener: (any MeetingEventListener)?
}

/// A participant listener held weakly.
struct WeakParticipantListener: Sendable {
    weak var listener: (any ParticipantEventListener)?
}

/// The meeting's listeners, held weakly, in the order they were added; thread-safe.
final class MeetingListeners: Sendable {
    private let list = Mutex<[WeakMeetingListener]>([])

    func add(_ listener: any MeetingEventListener) {
        list.withLock { $0.append(WeakMeetingListener(listener: listener)) }
    }

    /// Removes `listener`, and any listener that has gone.
    func remove(_ listener: any MeetingEventListener) {
        list.withLock { $0.removeAll { $0.listener == nil || $0.listener === listener } }
    }

    /// The listeners now (some may go before they are called).
    func snapshot() -> [WeakMeetingListener] {
        list.withLock { list in
            list.removeAll { $0.listener == nil }
            return list
        }
    }
}

/// The per-participant listeners of one meeting, by participant id, held weakly; thread-safe.
final class ParticipantListeners: Sendable {
    private let byParticipant = Mutex<[String: [WeakParticipantListener]]>([:])

    func add(_ listener: any ParticipantEventListener, for id: String) {
        byParticipant.withLock { $0[id, default: []].append(WeakParticipantListener(listener: listener)) }
    }

    func remove(_ listener: any ParticipantEventListener, for id: String) {
        byParticipant.withLock { $0[id]?.removeAll { $0.listener == nil || $0.listener === listener } }
    }

    func listeners(of id: String) -> [WeakParticipantListener] {
        byParticipant.withLock { all in
            all[id]?.removeAll { $0.listener == nil }
            return all[id] ?? []
        }
    }

    /// Drops a participant's listeners (it left).
    func removeAll(for id: String) {
        byParticipant.withLock { _ = $0.removeValue(forKey: id) }
    }
}

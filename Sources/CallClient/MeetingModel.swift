import Observation

/// A meeting's state for SwiftUI (and anything else that observes): the participants, the dominant
/// speaker, the local microphone, the connection, and the last error, as `@Observable` properties that
/// change on the main actor, in the order of the meeting's events.
///
/// ```swift
/// struct CallView: View {
///     @State var model = MeetingModel(meeting: Meeting(configuration: configuration))
///     var body: some View {
///         List(model.participants) { p in Text(p.displayName).bold(p.id == model.speakerId) }
///             .task { try? await model.join() }
///     }
/// }
/// ```
///
/// The model owns its meeting (`meeting`) and listens to it as a `MeetingEventListener` (held weakly
/// by the meeting); dropping the model drops the meeting, which leaves the room.
@MainActor @Observable
public final class MeetingModel: MeetingEventListener {
    /// Where the meeting stands.
    public enum Connection: Sendable, Hashable {
        /// `join()` not called yet.
        case notJoined
        /// `join()` is waiting for the room.
        case joining
        /// In the room.
        case joined
        /// The connection was lost; the meeting is connecting again.
        case reconnecting
        /// The meeting ended, and why.
        case left(MeetingLeaveReason)
        /// `join()` failed.
        case failed(MeetingError)
    }

    /// The meeting this model shows.
    @ObservationIgnored public let meeting: Meeting
    /// Everyone in the room, in joining order, the local participant included.
    public private(set) var participants: [Participant] = []
    /// The dominant speaker; nil when nobody speaks.
    public private(set) var speakerId: String?
    /// Whether the local microphone is muted (true until joined with it on).
    public private(set) var micMuted = true
    /// Where the meeting stands: not joined, joining, joined, reconnecting, left (and why), or failed.
    public private(set) var connection = Connection.notJoined
    /// The last `error` event (or failed call through the model), until the next.
    public private(set) var lastError: MeetingError?

    /// A model of `meeting`, which it owns and listens to.
    public init(meeting: Meeting) {
        self.meeting = meeting
        meeting.addEventListener(self)
    }

    /// This client's participant, once joined.
    public var localParticipant: Participant? { participants.first { $0.isLocal } }

    /// Joins (see `Meeting.join()`); `connection` is `joining`, then `joined` or `failed`.
    public func join() async throws(MeetingError) {
        connection = .joining
        do {
            try await meeting.join()
        } catch {
            connection = .failed(error)
            lastError = error
            throw error
        }
        // The joined event may still be on its way: the meeting's state is already there.
        if connection == .joining { connection = .joined }
        refresh()
    }

    /// Mutes or unmutes and returns once the server confirmed it (see `Meeting.setMicMuted(_:)`).
    public func setMicMuted(_ muted: Bool) async throws(MeetingError) {
        do {
            try await meeting.setMicMuted(muted)
        } catch {
            lastError = error
            refresh()
            throw error
        }
        refresh()
    }

    /// Leaves the room (see `Meeting.leave()`).
    public func leave() { meeting.leave() }

    /// Reads the participants and the microphone from the meeting.
    private func refresh() {
        participants = meeting.participants
        micMuted = meeting.localParticipant?.micMuted ?? true
    }

    private func show(_ list: [Participant]) {
        participants = list
        micMuted = list.first { $0.isLocal }?.micMuted ?? micMuted
    }

    // MARK: MeetingEventListener

    /// Joined: everyone in the room.
    public func onMeetingJoined(participants: [Participant]) {
        connection = .joined
        show(participants)
    }

    /// Left: the connection state says why; nobody speaks any more.
    public func onMeetingLeft(reason: MeetingLeaveReason) {
        connection = .left(reason)
        speakerId = nil
    }

    /// The participant list after a change.
    public func onParticipantsChanged(_ update: ParticipantListUpdate) { show(update.participants) }

    /// The dominant speaker.
    public func onSpeakerChanged(participantId: String?) { speakerId = participantId }

    /// The latest error.
    public func onError(_ error: MeetingError) { lastError = error }

    /// The connection was lost; the meeting connects again.
    public func onReconnecting() { connection = .reconnecting }

    /// Joined again: the list as it is now.
    public func onReconnected() {
        connection = .joined
        refresh()
    }
}

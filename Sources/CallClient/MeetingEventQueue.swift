import Dispatch
import Synchronization

/// The one serial context that a meeting's events leave from.
///
/// Whichever thread raises an event (the WebSocket client's service thread, the microphone's thread,
/// an app thread whose call reports an error), `emit` only queues it. The queue then gives each event
/// to the `AsyncStream` and, in one main-queue block, to every live listener in the order they were
/// added and to the listeners of the participant it concerns, before the next event goes anywhere:
/// both channels see one sequence. `finish` ends the sequence; what is emitted after it reaches neither
/// channel.
///
/// Nothing here refers to the `Meeting`, and listeners are held weakly, so neither a meeting nor a
/// listener is kept alive by a queued event.
///
/// `@unchecked Sendable`: `finished` and `speaker` are read and written only on `queue` (checked by
/// `dispatchPrecondition` in debug builds); the listener lists are behind `Mutex`es; the rest is
/// immutable.
final class MeetingEventQueue: @unchecked Sendable {
    /// Every event, in the queue's order; finished by `finish`.
    let stream: AsyncStream<MeetingEvent>
    /// The per-topic sequences (speaker, participants, errors), any number of readers each.
    let topics = MeetingTopics()
    private let continuation: AsyncStream<MeetingEvent>.Continuation
    private let queue = DispatchQueue(label: "activespeaker.meeting.events")
    private let listeners = MeetingListeners()
    /// Per-participant listeners (`Participant.addEventListener`).
    let participantListeners = ParticipantListeners()
    private var finished = false
    /// The dominant speaker as the delivered events said, for the participants' `onSpeakingChanged`.
    private var speaker: String?

    /// - Parameter capacity: the most events `stream` keeps for a reader that does not keep up (the
    ///   newest; nobody reading at all costs at most this much).
    init(capacity: Int) {
        precondition(capacity > 0, "the events stream keeps at least one event")
        (stream, continuation) = AsyncStream.makeStream(of: MeetingEvent.self, bufferingPolicy: .bufferingNewest(capacity))
    }

    /// Adds a listener (held weakly); it hears the events delivered to listeners after this call.
    func add(_ listener: any MeetingEventListener) {
        listeners.add(listener)
    }

    /// Removes a listener; an event being delivered when this is called may still reach it.
    func remove(_ listener: any MeetingEventListener) {
        listeners.remove(listener)
    }

    /// Queues `event`. Thread-safe; never waits for a listener. Events emitted by one thread keep
    /// their order.
    func emit(_ event: MeetingEvent) {
        queue.async { [self] in deliver(event) }
    }

    /// Queues the end of the sequence: the stream finishes after the events emitted before this call.
    func finish() {
        queue.async { [self] in
            dispatchPrecondition(condition: .onQueue(queue))
            finished = true
            continuation.finish()
            topics.finish()
        }
    }

    private func deliver(_ event: MeetingEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        continuation.yield(event)
        topics.deliver(event)
        let meetingListeners = listeners.snapshot()
        let participantCalls = participantCalls(for: event)
        guard !meetingListeners.isEmpty || !participantCalls.isEmpty else { return }
        // The main queue runs its blocks one at a time, in the order they were queued: the listeners
        // hear the events in the queue's order.
        DispatchQueue.main.async {
            MainActor.assumeIsolated {
                for weak in meetingListeners { if let listener = weak.listener { event.deliver(to: listener) } }
                for call in participantCalls { call.run() }
            }
        }
    }

    /// The calls `event` makes to the listeners of the participants it concerns (worked out here, on
    /// the queue, where the speaker is followed; made on the main actor).
    private func participantCalls(for event: MeetingEvent) -> [ParticipantCall] {
        dispatchPrecondition(condition: .onQueue(queue))
        let registry = participantListeners
        func calls(_ id: String, _ call: ParticipantCall.Call) -> [ParticipantCall] {
            registry.listeners(of: id).map { ParticipantCall(listener: $0, call: call) }
        }
        switch event {
        case .streamEnabled(let id, let kind):
            return calls(id, .streamEnabled(kind))
        case .streamDisabled(let id, let kind):
            return calls(id, .streamDisabled(kind))
        case .micMuted(let id, let muted, let by):
            return calls(id, .micMuted(muted, by: by))
        case .audioLevels(let levels):
            return levels.sorted(by: { $0.key < $1.key }).flatMap { calls($0.key, .audioLevel($0.value)) }
        case .speakerChanged(let id):
            guard id != speaker else { return [] }
            let previous = speaker
            speaker = id
            return (previous.map { calls($0, .speaking(false)) } ?? []) + (id.map { calls($0, .speaking(true)) } ?? [])
        case .participantLeft(let participant, let reason):
            if speaker == participant.id { speaker = nil }
            defer { registry.removeAll(for: participant.id) }
            return calls(participant.id, .left(reason))
        case .meetingJoined, .meetingLeft, .participantJoined, .participantsChanged, .message, .speakingWhileMuted, .error, .reconnecting, .reconnected:
            return []
        }
    }
}

/// One call to a participant's listener, made on the main actor.
struct ParticipantCall: Sendable {
    enum Call: Sendable {
        case streamEnabled(StreamKind), streamDisabled(StreamKind), micMuted(Bool, by: String?)
        case audioLevel(Double), speaking(Bool), left(MeetingLeaveReason)
    }

    let listener: WeakParticipantListener
    let call: Call

    @MainActor func run() {
        guard let listener = listener.listener else { return }
        switch call {
        case .streamEnabled(let kind): listener.onStreamEnabled(kind: kind)
        case .streamDisabled(let kind): listener.onStreamDisabled(kind: kind)
        case .micMuted(let muted, let by): listener.onMicMuted(muted, by: by)
        case .audioLevel(let level): listener.onAudioLevel(level)
        case .speaking(let speaking): listener.onSpeakingChanged(speaking)
        case .left(let reason): listener.onLeft(reason: reason)
        }
    }
}

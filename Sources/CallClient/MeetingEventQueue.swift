import Dispatch
import Synchronization

/// The one serial context that a meeting's events leave from.
///
/// Whichever thread raises an event (the WebSocket client's service thread, the microphone's thread,
/// an app thread whose call reports an error), `emit` only queues it. The queue then gives each event
/// to the `AsyncStream`, to every listener, in the order they were added, and to the listeners of the
/// participant it concerns, before the next event goes anywhere: all channels see one sequence. `finish` ends the sequence; what is emitted after it
/// reaches neither channel.
///
/// Nothing here refers to the `Meeting`, so a meeting is never kept alive, or deinitialised, by a
/// queued event.
///
/// `@unchecked Sendable`: `finished` and `speaker` are read and written only on `queue` (checked by
/// `dispatchPrecondition` in debug builds); `listeners` is behind a `Mutex`; the rest is immutable.
final class MeetingEventQueue: @unchecked Sendable {
    /// Every event, in the queue's order; finished by `finish`.
    let stream: AsyncStream<MeetingEvent>
    private let continuation: AsyncStream<MeetingEvent>.Continuation
    private let queue = DispatchQueue(label: "activespeaker.meeting.events")
    private let listeners = Mutex<[any MeetingEventListener]>([])
    /// Per-participant listeners (`Participant.addEventListener`).
    let participantListeners = ParticipantListeners()
    private var finished = false
    /// The dominant speaker as the delivered events said, for the participants' `onSpeakingChanged`.
    private var speaker: String?

    init() {
        (stream, continuation) = AsyncStream.makeStream(of: MeetingEvent.self, bufferingPolicy: .unbounded)
    }

    /// Adds a listener; it hears the events delivered after this call.
    func add(_ listener: any MeetingEventListener) {
        listeners.withLock { $0.append(listener) }
    }

    /// Removes a listener; an event being delivered when this is called may still reach it.
    func remove(_ listener: any MeetingEventListener) {
        listeners.withLock { $0.removeAll { $0 === listener } }
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
        }
    }

    private func deliver(_ event: MeetingEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !finished else { return }
        continuation.yield(event)
        for listener in listeners.withLock({ $0 }) { event.deliver(to: listener) }
        deliverToParticipants(event)
    }

    /// Gives `event` to the listeners of the participants it concerns.
    private func deliverToParticipants(_ event: MeetingEvent) {
        dispatchPrecondition(condition: .onQueue(queue))
        let registry = participantListeners
        switch event {
        case .streamEnabled(let id, let kind):
            for listener in registry.listeners(of: id) { listener.onStreamEnabled(kind: kind) }
        case .streamDisabled(let id, let kind):
            for listener in registry.listeners(of: id) { listener.onStreamDisabled(kind: kind) }
        case .micMuted(let id, let muted, let by):
            for listener in registry.listeners(of: id) { listener.onMicMuted(muted, by: by) }
        case .audioLevels(let levels):
            for (id, level) in levels.sorted(by: { $0.key < $1.key }) {
                for listener in registry.listeners(of: id) { listener.onAudioLevel(level) }
            }
        case .speakerChanged(let id):
            guard id != speaker else { return }
            let previous = speaker
            speaker = id
            if let previous { for listener in registry.listeners(of: previous) { listener.onSpeakingChanged(false) } }
            if let id { for listener in registry.listeners(of: id) { listener.onSpeakingChanged(true) } }
        case .participantLeft(let participant, let reason):
            if speaker == participant.id { speaker = nil }
            for listener in registry.listeners(of: participant.id) { listener.onLeft(reason: reason) }
            registry.removeAll(for: participant.id)
        case .meetingJoined, .meetingLeft, .participantJoined, .participantsChanged, .message, .speakingWhileMuted, .error, .reconnecting, .reconnected:
            break
        }
    }
}

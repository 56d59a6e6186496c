import Dispatch
import Synchronization

/// The one serial context that a meeting's events leave from.
///
/// Whichever thread raises an event (the WebSocket client's service thread, the microphone's thread,
/// an app thread whose call reports an error), `emit` only queues it. The queue then gives each event
/// to the `AsyncStream` and to every listener, in the order they were added, before the next event
/// goes anywhere: both channels see one sequence. `finish` ends the sequence; what is emitted after it
/// reaches neither channel.
///
/// Nothing here refers to the `Meeting`, so a meeting is never kept alive, or deinitialised, by a
/// queued event.
///
/// `@unchecked Sendable`: `finished` is read and written only on `queue` (checked by
/// `dispatchPrecondition` in debug builds); `listeners` is behind a `Mutex`; the rest is immutable.
final class MeetingEventQueue: @unchecked Sendable {
    /// Every event, in the queue's order; finished by `finish`.
    let stream: AsyncStream<MeetingEvent>
    private let continuation: AsyncStream<MeetingEvent>.Continuation
    private let queue = DispatchQueue(label: "activespeaker.meeting.events")
    private let listeners = Mutex<[any MeetingEventListener]>([])
    private var finished = false

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
    }
}

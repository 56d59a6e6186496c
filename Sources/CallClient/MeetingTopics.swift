import Synchronization

/// One topic of a meeting's events fanned out to any number of readers: each `subscribe()` is a new
/// `AsyncStream` with a buffer of its own, bounded (the newest `capacity` elements are kept when a reader
/// falls behind; older ones are dropped for that reader only). With `replaysLatest`, a new reader
/// first gets the latest element, if any: a reader made at any time sees the current value and then
/// every change, in order.
final class Broadcast<Element: Sendable>: Sendable {
    private struct State {
        var readers: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextID = 0
        var latest: Element?
        var finished = false
    }

    let capacity: Int
    private let replaysLatest: Bool
    private let state = Mutex(State())

    init(capacity: Int, replaysLatest: Bool) {
        precondition(capacity > 0, "a reader's buffer holds at least one element")
        self.capacity = capacity
        self.replaysLatest = replaysLatest
    }

    /// A new reader. After `finish`, a reader that ends at once (after the latest element, if replayed).
    func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingNewest(capacity))
        state.withLock { s in
            if replaysLatest, let latest = s.latest { continuation.yield(latest) }
            guard !s.finished else { return continuation.finish() }
            let id = s.nextID
            s.nextID += 1
            s.readers[id] = continuation
            continuation.onTermination = { [weak self] _ in self?.state.withLock { _ = $0.readers.removeValue(forKey: id) } }
        }
        return stream
    }

    /// Gives `element` to every reader (under the lock: readers made meanwhile see it once, in order).
    func yield(_ element: Element) {
        state.withLock { s in
            guard !s.finished else { return }
            s.latest = element
            for continuation in s.readers.values { continuation.yield(element) }
        }
    }

    /// Ends every reader, present and future.
    func finish() {
        let readers = state.withLock { s in
            s.finished = true
            defer { s.readers = [:] }
            return Array(s.readers.values)
        }
        for continuation in readers { continuation.finish() }
    }
}

/// The per-topic sequences of a meeting: the dominant speaker, the participant list, and the errors,
/// fed from the meeting's one event queue (so in the events' order).
final class MeetingTopics: Sendable {
    /// The most elements a reader that falls behind keeps (the newest).
    static let capacity = 64

    let speaker = Broadcast<String?>(capacity: capacity, replaysLatest: true)
    let participants = Broadcast<ParticipantListUpdate>(capacity: capacity, replaysLatest: true)
    let errors = Broadcast<MeetingError>(capacity: capacity, replaysLatest: false)

    /// Called on the event queue with every event, in order.
    func deliver(_ event: MeetingEvent) {
        switch event {
        case .speakerChanged(let id):
            speaker.yield(id)
        case .participantsChanged(let update):
            participants.yield(update)
        case .meetingJoined(let everyone), .reconnected(let everyone):
            // The whole list, as one update: a reader made now starts from it.
            participants.yield(ParticipantListUpdate(participants: everyone))
        case .error(let error):
            errors.yield(error)
        default:
            break
        }
    }

    func finish() {
        speaker.finish()
        participants.finish()
        errors.finish()
    }
}

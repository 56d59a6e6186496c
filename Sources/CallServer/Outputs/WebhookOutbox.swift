import CallProtocol

/// The rules of webhook delivery, as a value (no threads, no sockets): which delivery goes next, when a
/// failed one is tried again, and when one is given up.
///
/// - Ordered per room: a room's next event waits until the one before it was delivered or given up, so a
///   receiver sees each room's events in order; rooms do not wait for each other.
/// - Retried with backoff: after the n-th failed attempt, the next is `min(firstRetry · 2ⁿ⁻¹, maximumRetry)`
///   seconds later, until the delivery is older than `maximumAge`; then it is given up (counted and logged)
///   and the room's next event goes.
/// - Bounded: a room holds at most `maximumPending` events; one more gives up the oldest waiting one.
/// - At least once: an attempt whose answer is lost (a timeout after the receiver took it) is sent again, with
///   the same sequence number, so that a receiver can drop what it already has.
struct WebhookOutbox {
    struct Settings: Sendable {
        var firstRetry: Double = 0.5
        var maximumRetry: Double = 30
        var maximumAge: Double = 3600
        var maximumPending = 10_000
    }

    /// One event on its way to the receiver.
    struct Delivery: Sendable, Equatable {
        var room: CallRoomID
        /// 1, 2, 3… per room, in the order of the room's events; repeats on a retried attempt.
        var sequence: Int
        var body: [UInt8]
        /// When it was added, in the outbox's clock (seconds).
        var added: Double
        /// Attempts made before this one.
        var attempts: Int
    }

    /// Why a delivery was given up.
    enum GiveUp: Sendable, Equatable {
        /// Older than `maximumAge` after a failed attempt.
        case tooOld(Delivery)
        /// Pushed out of a full room queue.
        case overflow(Delivery)
    }

    private struct RoomQueue {
        var waiting: [Delivery] = []
        var head = 0
        var inFlight = false
        /// No attempt before this time (a retry's backoff).
        var notBefore = 0.0
        var nextSequence = 1

        var pending: Int { waiting.count - head }
        var next: Delivery? { head < waiting.count ? waiting[head] : nil }

        mutating func removeFirst() -> Delivery {
            let first = waiting[head]
            head += 1
            if head > 64, head * 2 > waiting.count {
                waiting.removeFirst(head)
                head = 0
            }
            return first
        }
    }

    let settings: Settings
    private var rooms: [CallRoomID: RoomQueue] = [:]
    private(set) var delivered = 0
    private(set) var failedAttempts = 0
    private(set) var givenUp = 0

    init(settings: Settings = Settings()) {
        precondition(settings.firstRetry > 0 && settings.maximumRetry >= settings.firstRetry && settings.maximumAge > 0)
        precondition(settings.maximumPending > 0)
        self.settings = settings
    }

    /// Events waiting or in flight, all rooms.
    var pending: Int { rooms.values.reduce(0) { $0 + $1.pending } }

    /// Adds a room's event; returns the delivery given up to make room, if the queue was full.
    mutating func add(room: CallRoomID, body: [UInt8], now: Double) -> GiveUp? {
        var queue = rooms[room] ?? RoomQueue()
        queue.waiting.append(Delivery(room: room, sequence: queue.nextSequence, body: body, added: now, attempts: 0))
        queue.nextSequence += 1
        var dropped: GiveUp?
        if queue.pending > settings.maximumPending {
            // The oldest one not in flight: the head when idle, else the one after it.
            let index = queue.head + (queue.inFlight ? 1 : 0)
            dropped = .overflow(queue.waiting.remove(at: index))
            givenUp += 1
        }
        rooms[room] = queue
        return dropped
    }

    /// The next delivery to attempt now, marked in flight: of the rooms with none in flight and past
    /// their backoff, the one whose next event is oldest. Nil when none is due.
    mutating func take(now: Double) -> Delivery? {
        var best: (room: CallRoomID, added: Double)?
        for (room, queue) in rooms where !queue.inFlight && queue.notBefore <= now {
            guard let next = queue.next else { continue }
            if best == nil || next.added < best!.added { best = (room, next.added) }
        }
        guard let room = best?.room else { return nil }
        rooms[room]!.inFlight = true
        return rooms[room]!.next
    }

    /// When the next delivery is due, if one waits only for its backoff; nil when none waits (or one is
    /// due now: `take` returns it).
    func nextDue(now: Double) -> Double? {
        rooms.values.filter { !$0.inFlight && $0.pending > 0 }.map(\.notBefore).min()
    }

    /// Ends an attempt of `delivery` (the one `take` gave): delivered, or failed at `now`. Returns the
    /// delivery given up, if the failure made it too old, and otherwise nil; a failed one that is not
    /// given up is retried after its backoff.
    mutating func finish(_ delivery: Delivery, delivered success: Bool, now: Double) -> GiveUp? {
        guard var queue = rooms[delivery.room], queue.inFlight, queue.next?.sequence == delivery.sequence else {
            preconditionFailure("finish(\(delivery.room) #\(delivery.sequence)) without its take")
        }
        queue.inFlight = false
        var result: GiveUp?
        if success {
            _ = queue.removeFirst()
            delivered += 1
            queue.notBefore = now
        } else {
            failedAttempts += 1
            let attempts = delivery.attempts + 1
            if now - delivery.added >= settings.maximumAge {
                result = .tooOld(queue.removeFirst())
                givenUp += 1
                queue.notBefore = now
            } else {
                queue.waiting[queue.head].attempts = attempts
                queue.notBefore = now + retryDelay(afterAttempts: attempts)
            }
        }
        rooms[delivery.room] = queue.pending == 0 && !queue.inFlight ? Self.emptied(queue) : queue
        return result
    }

    /// Seconds before the next attempt after `attempts` failed ones.
    func retryDelay(afterAttempts attempts: Int) -> Double {
        min(settings.firstRetry * Double(1 << min(attempts - 1, 30)), settings.maximumRetry)
    }

    /// A room with nothing pending keeps only its sequence counter.
    private static func emptied(_ queue: RoomQueue) -> RoomQueue {
        var empty = RoomQueue()
        empty.nextSequence = queue.nextSequence
        empty.notBefore = queue.notBefore
        return empty
    }
}

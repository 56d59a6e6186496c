import CallProtocol
internal import CallTransport
import Foundation
import Synchronization

/// Where and how the server posts its rooms' events (`serve --webhook`).
public struct WebhookConfiguration: Sendable {
    /// `http://…` or `https://…`.
    public var url: String
    /// The shared secret each delivery is signed with (`WebhookSignature`); 16 bytes at least.
    public var secret: [UInt8]
    /// Seconds one attempt may take, answer included.
    public var timeout: Double = 5
    /// Seconds a delivery is retried before it is given up.
    public var maximumAge: Double = 3600
    /// For `https://`, a PEM file of the certificate authorities to trust instead of the system's.
    public var certificateAuthorityFile: String?
    /// Attempts in flight at once, each for another room.
    public var connections = 4

    public init(url: String, secret: [UInt8]) {
        self.url = url
        self.secret = secret
    }
}

/// Posts each room event to the webhook URL, signed, in order per room, retried with backoff
/// (`WebhookOutbox` holds the rules). The body is the event's JSON line, as `serve` prints it; the
/// headers say which room and which of its events it is:
/// `ActiveSpeaker-Room`, `ActiveSpeaker-Sequence` (1, 2, 3… per room), `ActiveSpeaker-Delivery`
/// (`<server start>-<room>-<sequence>`, the same on every attempt), `ActiveSpeaker-Attempt` (1, 2, 3…) and
/// `ActiveSpeaker-Signature`.
///
/// Threads: `add` is called from the log's queue and never blocks on the network; `connections` threads make
/// the attempts. A `2xx` answer delivers; anything else (another status, no answer in `timeout`, a refused
/// connection) is a failed attempt.
final class WebhookSender: Sendable {
    /// What happened to a delivery that the log should say.
    enum Report: Sendable {
        case failed(room: CallRoomID, sequence: Int, attempt: Int, reason: String, retryIn: Double)
        case givenUp(room: CallRoomID, sequence: Int, reason: String)
    }

    struct Statistics: Sendable {
        var delivered = 0
        var failedAttempts = 0
        var givenUp = 0
        var pending = 0
    }

    private let configuration: WebhookConfiguration
    private let client: HTTPClient
    private let report: @Sendable (Report) -> Void
    private let instance: String
    private let clock: @Sendable () -> Double
    private let state: Mutex<(outbox: WebhookOutbox, stopping: Bool)>
    /// Wakes the threads when a delivery is added, a backoff may have ended, or on stop.
    private let wake = NSCondition()
    private let threadsDone: DispatchGroup = DispatchGroup()

    /// - Parameters:
    ///   - report: told of failed attempts and given-up deliveries (on a delivery thread).
    ///   - clock: seconds, monotonic (the server's clock).
    init(
        _ configuration: WebhookConfiguration, settings: WebhookOutbox.Settings? = nil, clock: @escaping @Sendable () -> Double,
        report: @escaping @Sendable (Report) -> Void
    ) {
        self.configuration = configuration
        client = HTTPClient(timeout: configuration.timeout, certificateAuthorityFile: configuration.certificateAuthorityFile)
        var outboxSettings = settings ?? WebhookOutbox.Settings()
        if settings == nil { outboxSettings.maximumAge = configuration.maximumAge }
        state = Mutex((WebhookOutbox(settings: outboxSettings), false))
        self.clock = clock
        self.report = report
        instance = String(Int(Date().timeIntervalSince1970), radix: 36)
        for index in 0..<max(1, configuration.connections) {
            threadsDone.enter()
            let thread = Thread { [self] in
                deliverUntilStopped()
                threadsDone.leave()
            }
            thread.name = "webhook-\(index)"
            thread.start()
        }
    }

    /// Queues `line` (one JSON object) for `room`. Never blocks on the network.
    func add(room: CallRoomID, line: String) {
        let dropped = state.withLock { $0.stopping ? nil : $0.outbox.add(room: room, body: Array(line.utf8), now: clock()) }
        if case .overflow(let delivery) = dropped {
            report(.givenUp(room: room, sequence: delivery.sequence, reason: "the room's queue is full"))
        }
        wake.lock()
        wake.broadcast()
        wake.unlock()
    }

    var statistics: Statistics {
        state.withLock {
            Statistics(delivered: $0.outbox.delivered, failedAttempts: $0.outbox.failedAttempts, givenUp: $0.outbox.givenUp, pending: $0.outbox.pending)
        }
    }

    /// Waits up to `seconds` for what is pending to be delivered, then stops the threads (an attempt in flight
    /// ends within `timeout`). What is still pending then is lost: the count is returned.
    @discardableResult
    func stop(within seconds: Double) -> Int {
        let deadline = clock() + seconds
        while clock() < deadline, state.withLock({ $0.outbox.pending }) > 0 {
            wake.lock()
            _ = wake.wait(until: Date().addingTimeInterval(0.05))
            wake.unlock()
        }
        let lost = state.withLock {
            $0.stopping = true
            return $0.outbox.pending
        }
        wake.lock()
        wake.broadcast()
        wake.unlock()
        threadsDone.wait()
        return lost
    }

    private func deliverUntilStopped() {
        while true {
            let now = clock()
            let (next, due, stopping) = state.withLock { state in
                state.stopping ? (nil, nil, true) : (state.outbox.take(now: now), state.outbox.nextDue(now: now), false)
            }
            if stopping { return }
            guard let delivery = next else {
                wake.lock()
                // Another thread's finish or a new event broadcasts; a backoff's end is waited for.
                _ = wake.wait(until: Date().addingTimeInterval(min(max((due ?? now + 1) - now, 0.005), 1)))
                wake.unlock()
                continue
            }
            let outcome = attempt(delivery)
            let finishedAt = clock()
            let givenUp = state.withLock { $0.outbox.finish(delivery, delivered: outcome == nil, now: finishedAt) }
            if let reason = outcome {
                if case .tooOld = givenUp {
                    report(.givenUp(room: delivery.room, sequence: delivery.sequence, reason: reason))
                } else {
                    let delay = state.withLock { $0.outbox.retryDelay(afterAttempts: delivery.attempts + 1) }
                    report(.failed(room: delivery.room, sequence: delivery.sequence, attempt: delivery.attempts + 1, reason: reason, retryIn: delay))
                }
            }
            wake.lock()
            wake.broadcast()
            wake.unlock()
        }
    }

    /// One attempt; nil when delivered, else why not.
    private func attempt(_ delivery: WebhookOutbox.Delivery) -> String? {
        let signature = WebhookSignature(secret: configuration.secret, time: Int(Date().timeIntervalSince1970), body: delivery.body)
        let headers = [
            ("Content-Type", "application/json"),
            ("ActiveSpeaker-Room", delivery.room.rawValue),
            ("ActiveSpeaker-Sequence", String(delivery.sequence)),
            ("ActiveSpeaker-Delivery", "\(instance)-\(delivery.room.rawValue)-\(delivery.sequence)"),
            ("ActiveSpeaker-Attempt", String(delivery.attempts + 1)),
            (WebhookSignature.header, signature.headerValue),
        ]
        do {
            let answer = try client.send("POST", configuration.url, headers: headers, body: delivery.body)
            return (200..<300).contains(answer.status) ? nil : "HTTP \(answer.status)"
        } catch {
            return error.description
        }
    }
}

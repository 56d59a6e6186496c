import Foundation
import Synchronization

/// Listens to Redis channels (`SUBSCRIBE`) and channel patterns (`PSUBSCRIBE`) on a thread of its own.
///
/// `onMessage(channel, payload)` is called on that thread for each message, in the order Redis sent
/// them; for a pattern it gets the channel the message was published on. When the connection is lost
/// the subscriber calls `onState(false)`, reconnects with a backoff (0.1 s doubling to 2 s),
/// subscribes again and calls `onState(true)` once Redis has confirmed every subscription — from then
/// on a `PUBLISH` reaches it. It starts disconnected and reports changes only; `stop()` reports nothing.
/// Messages published while it was disconnected are lost (Redis pub/sub keeps nothing).
///
/// The callbacks must not call `stop()` (it waits for the thread they run on).
public final class RedisSubscriber: Sendable {
    private let url: RedisURL
    private let channels: [String]
    private let patterns: [String]
    private let onMessage: @Sendable (_ channel: String, _ payload: String) -> Void
    private let onState: @Sendable (_ connected: Bool) -> Void
    /// The running thread's controls; nil when not started or stopped.
    private let running = Mutex<Run?>(nil)

    /// Seconds for connecting and for each subscription's confirmation.
    static let connectTimeout = 1.0
    /// How long one read waits, and so about how long `stop()` waits for a listening thread.
    static let readInterval = 0.2
    /// The reconnect backoff: first wait, and the most it doubles to.
    static let backoff = (first: 0.1, most: 2.0)

    /// Makes the subscriber; nothing happens before `start()`.
    /// - Parameters:
    ///   - channels: channel names for `SUBSCRIBE`.
    ///   - patterns: glob patterns for `PSUBSCRIBE` (`room.*`). Together with `channels`, at least one.
    ///   - onMessage: called with the channel and the payload of each message, on the subscriber's thread.
    ///   - onState: called with `true` once subscribed, `false` when the connection is lost, on that thread.
    public init(
        url: RedisURL, channels: [String], patterns: [String] = [],
        onMessage: @escaping @Sendable (_ channel: String, _ payload: String) -> Void,
        onState: @escaping @Sendable (_ connected: Bool) -> Void = { _ in }
    ) {
        precondition(!channels.isEmpty || !patterns.isEmpty, "a Redis subscriber needs a channel or a pattern")
        self.url = url
        self.channels = channels
        self.patterns = patterns
        self.onMessage = onMessage
        self.onState = onState
    }

    deinit { stop() }

    /// Starts the thread, which connects and subscribes. Does nothing if it is running already.
    public func start() {
        running.withLock { running in
            guard running == nil else { return }
            let run = Run()
            let listener = Listener(
                url: url, channels: channels, patterns: patterns, onMessage: onMessage, onState: onState, run: run)
            let thread = Thread { listener.main() }
            thread.name = "redis-subscriber"
            thread.start()
            running = run
        }
    }

    /// Stops the thread and waits for it to end: within about `readInterval` while listening, or the
    /// connect timeout while connecting. Does nothing if it is not running.
    public func stop() {
        guard let run = running.withLock({ running in defer { running = nil }; return running }) else { return }
        precondition(!run.isCurrentThread, "RedisSubscriber.stop() called from its own callback would wait for itself")
        run.stopping.withLock { $0 = true }
        run.wake.signal()
        run.finished.wait()
    }
}

/// One run of a subscriber's thread: the stop flag, and the signals between `stop()` and the thread.
private final class Run: Sendable {
    let stopping = Mutex(false)
    /// Signalled by `stop()` to cut a backoff wait short.
    let wake = DispatchSemaphore(value: 0)
    /// Signalled by the thread as its last act.
    let finished = DispatchSemaphore(value: 0)
    /// The thread's id, set as it starts.
    let thread = Mutex<pthread_t?>(nil)

    var isStopping: Bool { stopping.withLock { $0 } }
    var isCurrentThread: Bool { thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }
}

/// The subscriber thread's loop. Its hiredis context is a local of `main()`: only this thread touches it.
private struct Listener: Sendable {
    let url: RedisURL
    let channels: [String]
    let patterns: [String]
    let onMessage: @Sendable (String, String) -> Void
    let onState: @Sendable (Bool) -> Void
    let run: Run

    func main() {
        run.thread.withLock { $0 = pthread_self() }
        var backoff = RedisSubscriber.backoff.first
        while !run.isStopping {
            var subscribed = false
            do {
                let context = try RedisContext.connect(to: url, timeout: RedisSubscriber.connectTimeout)
                try subscribe(context)
                subscribed = true
                backoff = RedisSubscriber.backoff.first
                onState(true)
                try listen(context)
            } catch {
                // Lost or never made: reported below if it had been up, then retried after the backoff.
            }
            if run.isStopping { break }
            if subscribed { onState(false) }
            _ = run.wake.wait(timeout: .now() + backoff)
            backoff = min(backoff * 2, RedisSubscriber.backoff.most)
        }
        run.finished.signal()
    }

    /// Sends `SUBSCRIBE` and `PSUBSCRIBE` and waits for Redis to confirm each channel and pattern
    /// (a message that arrives between confirmations is delivered).
    private func subscribe(_ context: RedisContext) throws(RedisError) {
        if !channels.isEmpty { try context.append(["SUBSCRIBE"] + channels) }
        if !patterns.isEmpty { try context.append(["PSUBSCRIBE"] + patterns) }
        var confirmed = 0
        while confirmed < channels.count + patterns.count {
            let reply = try context.reply()
            if case .error(let message) = reply {
                throw RedisError(.reply, "\(url): SUBSCRIBE failed: \(message)")
            }
            if !deliver(reply) { confirmed += 1 }
        }
    }

    /// Reads and delivers messages until stopped; throws when the connection fails.
    private func listen(_ context: RedisContext) throws(RedisError) {
        while !run.isStopping {
            while let reply = try context.bufferedReply() { _ = deliver(reply) }
            _ = try context.read(waiting: RedisSubscriber.readInterval)
        }
    }

    /// Calls `onMessage` for a `message` or `pmessage` push.
    /// - Returns: Whether it was one (false: a confirmation or another reply).
    private func deliver(_ reply: RedisReply) -> Bool {
        guard let parts = reply.array, let kind = parts.first?.string else { return false }
        switch (kind, parts.count) {
        case ("message", 3):
            onMessage(parts[1].string ?? "", parts[2].string ?? "")
        case ("pmessage", 4):
            onMessage(parts[2].string ?? "", parts[3].string ?? "")
        default:
            return false
        }
        return true
    }
}

import CallProtocol

/// The plan of one meeting's reconnecting: which server to try next, how long to wait before it, when
/// to give up, and which answers mean "try again".
///
/// A value, owned by the meeting's state (under its lock): `Meeting` asks it for the next attempt and
/// performs it. Times are seconds of a monotonic clock, given by the caller.
struct Reconnection: Sendable {
    /// The first wait before an attempt, in seconds; it doubles up to `maximumDelay`.
    static let firstDelay = 0.25
    static let maximumDelay = 2.0
    /// The longest one attempt (connect, then the server's answer to `join`) may take, in seconds.
    static let attemptTimeout = 5.0
    /// How long a 4014 (duplicate participant) counts as "try again", in seconds from the loss: the
    /// server may not yet have noticed that the old connection is gone (it drops silent clients after
    /// its client timeout, 15 s by default).
    static let duplicateWindow = 20.0
    /// The most `redirect`s followed in a row.
    static let maximumRedirects = 5

    /// `configuration.server`, then `configuration.fallbackServers`.
    let servers: [String]
    /// When the connection was lost.
    let start: Double
    /// When to give up: `start + reconnectTimeout`.
    let deadline: Double
    /// The index in `servers` of the next attempt.
    private(set) var next: Int
    /// Attempts made so far.
    private(set) var attempts = 0

    /// - Parameters:
    ///   - servers: the servers to cycle through, at least one.
    ///   - current: the index of the server that was connected; the first attempt goes there again.
    init(servers: [String], current: Int, start: Double, timeout: Double) {
        precondition(!servers.isEmpty, "a reconnection needs a server")
        self.servers = servers
        self.start = start
        deadline = start + timeout
        next = current % servers.count
    }

    /// The wait before attempt `index` (0-based): 0.25 s, 0.5 s, 1 s, then 2 s.
    static func delay(before index: Int) -> Double {
        min(maximumDelay, firstDelay * Double(1 << min(index, 8)))
    }

    /// The next attempt: the server, its index in `servers`, and the seconds to wait first; nil when
    /// the deadline would have passed before it starts.
    mutating func nextAttempt(now: Double) -> (server: String, index: Int, delay: Double)? {
        let delay = Self.delay(before: attempts)
        guard now + delay < deadline else { return nil }
        let index = next
        attempts += 1
        next = (next + 1) % servers.count
        return (servers[index], index, delay)
    }

    /// Seconds an attempt starting `now` may take: `attemptTimeout`, less near the deadline.
    func attemptTimeout(now: Double) -> Double {
        max(0.1, min(Self.attemptTimeout, deadline - now))
    }

    /// Whether the server's `error` answer to a re-`join` means "try again" rather than the end:
    /// 5003 unavailable and 4003 room not found (the room may be being claimed by another node), and
    /// 4014 duplicate participant within `duplicateWindow` of the loss.
    func isRetryable(_ code: CallErrorCode, now: Double) -> Bool {
        switch code {
        case .unavailable, .roomNotFound: true
        case .duplicateParticipant: now - start < Self.duplicateWindow
        default: false
        }
    }
}

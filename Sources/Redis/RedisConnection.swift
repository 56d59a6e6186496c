import Synchronization

/// One connection to Redis, usable from any thread: a mutex serialises commands, so each caller sees
/// its own reply.
///
/// It connects lazily, on the first command, then logs in (`AUTH`, with the user if the URL names one)
/// and selects the URL's database. After a connection or timeout error it drops the connection and the
/// next command connects again; while Redis stays down it makes at most one connect attempt per
/// `retryInterval` and in between fails at once, so a dead Redis costs callers a fast error rather than
/// a timeout each. Every call is bounded by `timeout`: the connect, and each reply.
///
/// A command that failed with a connection or timeout error may or may not have run on the server; it
/// is not sent again.
public final class RedisConnection: Sendable {
    /// The server, with the password to log in.
    public let url: RedisURL
    /// Seconds allowed for connecting and for each reply.
    public let timeout: Double
    /// Seconds between connect attempts while Redis cannot be reached.
    public let retryInterval: Double

    private struct State {
        var context: RedisContext?
        /// When the last connect attempt failed, and how; cleared by a successful one.
        var failedConnect: (at: ContinuousClock.Instant, error: RedisError)?
    }

    private let state = Mutex(State())

    /// Makes the connection object; nothing is sent until the first command.
    /// - Parameters:
    ///   - timeout: seconds for the connect and for each reply (more than 0).
    ///   - retryInterval: seconds to wait after a failed connect before the next attempt (0 or more).
    public init(url: RedisURL, timeout: Double = 0.5, retryInterval: Double = 0.25) {
        precondition(timeout > 0, "the Redis timeout must be positive")
        precondition(retryInterval >= 0, "the Redis retry interval must not be negative")
        self.url = url
        self.timeout = timeout
        self.retryInterval = retryInterval
    }

    deinit { state.withLock { $0.context = nil } }

    /// Runs one command, connecting first if needed.
    /// - Parameter arguments: the command and its arguments (`["SET", key, value, "PX", "500"]`), each sent
    ///   byte for byte as UTF-8. At least one.
    /// - Returns: The reply; an error reply from Redis is `.error(…)`, not thrown.
    /// - Throws: `RedisError` `.connection`, `.timeout`, `.protocolError` (the connection is dropped), or
    ///   `.reply` when Redis refused the login or the database.
    public func command(_ arguments: [String]) throws(RedisError) -> RedisReply {
        try state.withLock { (state) throws(RedisError) -> RedisReply in
            let context = try connected(&state)
            do throws(RedisError) {
                return try context.command(arguments)
            } catch {
                state.context = nil
                throw error
            }
        }
    }

    /// Sends several commands at once and then reads all their replies: one round trip.
    /// - Parameter commands: each a command and its arguments, as for `command(_:)`.
    /// - Returns: One reply per command, in order.
    /// - Throws: As `command(_:)`; when one reply fails none is returned (some commands may have run).
    public func pipeline(_ commands: [[String]]) throws(RedisError) -> [RedisReply] {
        guard !commands.isEmpty else { return [] }
        return try state.withLock { (state) throws(RedisError) -> [RedisReply] in
            let context = try connected(&state)
            do throws(RedisError) {
                for command in commands { try context.append(command) }
                var replies: [RedisReply] = []
                replies.reserveCapacity(commands.count)
                for _ in commands { replies.append(try context.reply()) }
                return replies
            } catch {
                state.context = nil
                throw error
            }
        }
    }

    /// Whether a connection is open now (a later command may still find it closed by the server).
    public var isConnected: Bool { state.withLock { $0.context != nil } }

    /// Closes the connection. A later command connects again.
    public func close() {
        state.withLock { state in
            state.context = nil
            state.failedConnect = nil
        }
    }

    /// The open context, or a new one; fails at once while the last attempt is younger than `retryInterval`.
    private func connected(_ state: inout State) throws(RedisError) -> RedisContext {
        if let context = state.context { return context }
        let now = ContinuousClock.now
        if let failed = state.failedConnect, now - failed.at < .seconds(retryInterval) {
            throw RedisError(failed.error.kind, "\(failed.error.message) (next attempt after \(retryInterval) s)")
        }
        do {
            let context = try RedisContext.connect(to: url, timeout: timeout)
            state.context = context
            state.failedConnect = nil
            return context
        } catch {
            // Counted from the end of the attempt: a server that lets connects time out costs one timeout
            // per interval, not one per call.
            state.failedConnect = (ContinuousClock.now, error)
            throw error
        }
    }
}

internal import CRedis
import Foundation

/// One hiredis connection (`redisContext`), freed with it. Not thread-safe: its owner serialises use
/// (`RedisConnection` under its mutex, `RedisSubscriber` on its one thread).
///
/// After any failure reported here the context is out of step with the server (a reply may still be
/// on its way, or the socket is gone) and the owner drops it.
final class RedisContext {
    private let context: UnsafeMutablePointer<redisContext>
    /// For messages: the URL with the password hidden.
    private let name: String

    private init(_ context: UnsafeMutablePointer<redisContext>, name: String) {
        self.context = context
        self.name = name
    }

    deinit { redisFree(context) }

    /// Connects, sets the timeout for every later read and write, logs in (`AUTH`) and selects the
    /// database.
    /// - Parameter timeout: seconds for the connect and for each reply.
    /// The corresponding C functions are `redisConnectWithTimeout` and `redisSetTimeout`.
    static func connect(to url: RedisURL, timeout: Double) throws(RedisError) -> RedisContext {
        let limit = timeval(seconds: timeout)
        guard let raw = redisConnectWithTimeout(url.host, Int32(url.port), limit) else {
            throw RedisError(.connection, "\(url): hiredis could not allocate a context")
        }
        let context = RedisContext(raw, name: url.description)
        guard raw.pointee.err == 0 else { throw context.failure("cannot connect") }
        guard redisSetTimeout(raw, limit) == REDIS_OK else { throw context.failure("cannot set the timeout") }
        // Keep-alive probes find a peer that vanished without closing (a subscriber may read nothing for hours).
        _ = redisEnableKeepAlive(raw)

        if let password = url.password {
            let login = url.username.map { ["AUTH", $0, password] } ?? ["AUTH", password]
            if case .error(let message) = try context.command(login) {
                throw RedisError(.reply, "\(url): authentication failed: \(message)")
            }
        }
        if url.database != 0, case .error(let message) = try context.command(["SELECT", "\(url.database)"]) {
            throw RedisError(.reply, "\(url): SELECT \(url.database) failed: \(message)")
        }
        return context
    }

    /// Sends one command and reads its reply.
    /// The corresponding C function is `redisCommandArgv`.
    func command(_ arguments: [String]) throws(RedisError) -> RedisReply {
        let reply = Self.withArgv(arguments) { count, argv, lengths in
            redisCommandArgv(context, count, argv, lengths)
        }
        return try take(reply, doing: arguments[0])
    }

    /// Queues one command in hiredis' output buffer; `reply()` sends the buffer and reads.
    /// The corresponding C function is `redisAppendCommandArgv`.
    func append(_ arguments: [String]) throws(RedisError) {
        let status = Self.withArgv(arguments) { count, argv, lengths in
            redisAppendCommandArgv(context, count, argv, lengths)
        }
        guard status == REDIS_OK else { throw failure("cannot queue \(arguments[0])") }
    }

    /// Sends what is queued and reads the next reply, waiting up to the timeout.
    /// The corresponding C function is `redisGetReply`.
    func reply() throws(RedisError) -> RedisReply {
        var reply: UnsafeMutableRawPointer?
        guard redisGetReply(context, &reply) == REDIS_OK else { throw failure("cannot read a reply") }
        return try take(reply, doing: "reading a reply")
    }

    /// A reply already read from the socket, if a whole one is buffered; never waits.
    /// The corresponding C function is `redisGetReplyFromReader`.
    func bufferedReply() throws(RedisError) -> RedisReply? {
        var reply: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &reply) == REDIS_OK else { throw failure("cannot parse a reply") }
        guard reply != nil else { return nil }
        return try take(reply, doing: "parsing a reply")
    }

    /// Waits up to `seconds` for the socket to become readable (or closed), then lets hiredis read what
    /// arrived into its buffer.
    /// - Returns: Whether anything was read (false: the wait ran out).
    /// The corresponding C function is `redisBufferRead`.
    func read(waiting seconds: Double) throws(RedisError) -> Bool {
        var descriptor = pollfd(fd: context.pointee.fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(seconds * 1000))
        guard ready > 0 else { return false }  // timed out, or a signal (EINTR): the caller loops
        guard redisBufferRead(context) == REDIS_OK else { throw failure("cannot read") }
        return true
    }

    /// Turns a reply pointer from hiredis into a value and frees it; nil means the context failed.
    private func take(_ reply: UnsafeMutableRawPointer?, doing: String) throws(RedisError) -> RedisReply {
        guard let reply else { throw failure(doing) }
        defer { freeReplyObject(reply) }
        return try RedisReply(reply.assumingMemoryBound(to: redisReply.self))
    }

    /// The context's error (`err`, `errstr`) as a `RedisError`: a read that ran past the socket timeout
    /// (EAGAIN) or a connect that did (ETIMEDOUT) is `.timeout`; a parse error is `.protocolError`.
    private func failure(_ doing: String) -> RedisError {
        let code = context.pointee.err
        let text = withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        let detail = text.isEmpty ? "hiredis error \(code)" : text
        let kind: RedisError.Kind
        switch code {
        case REDIS_ERR_PROTOCOL: kind = .protocolError
        case REDIS_ERR_IO where Self.timeoutTexts.contains(text): kind = .timeout
        default: kind = .connection
        }
        return RedisError(kind, "\(name): \(doing): \(detail)")
    }

    /// hiredis writes `strerror(errno)` into `errstr` on an I/O error; these are the timeouts.
    private static let timeoutTexts: Set<String> = Set([EAGAIN, EWOULDBLOCK, ETIMEDOUT, EINPROGRESS].map {
        String(cString: strerror($0))
    })

    /// Calls `body` with hiredis' argv form of `arguments`: pointers and explicit byte lengths, so
    /// spaces, newlines, quotes, NUL bytes and UTF-8 pass unchanged.
    private static func withArgv<Result>(
        _ arguments: [String],
        _ body: (Int32, UnsafeMutablePointer<UnsafePointer<CChar>?>, UnsafePointer<Int>) -> Result
    ) -> Result {
        precondition(!arguments.isEmpty, "a Redis command needs at least its name")
        // All arguments in one buffer (plus a final byte, so it is never empty), then pointers into it.
        var bytes: [UInt8] = []
        var offsets: [Int] = []
        var lengths: [Int] = []
        for argument in arguments {
            offsets.append(bytes.count)
            lengths.append(argument.utf8.count)
            bytes.append(contentsOf: argument.utf8)
        }
        bytes.append(0)
        return bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!).assumingMemoryBound(to: CChar.self)
            var pointers: [UnsafePointer<CChar>?] = offsets.map { base + $0 }
            return pointers.withUnsafeMutableBufferPointer { argv in
                lengths.withUnsafeBufferPointer { sizes in
                    body(Int32(arguments.count), argv.baseAddress!, sizes.baseAddress!)
                }
            }
        }
    }
}

extension timeval {
    /// A `timeval` of `seconds` (0 or more).
    init(seconds: Double) {
        let whole = max(0, seconds).rounded(.down)
        self.init(tv_sec: Int(whole), tv_usec: Int((max(0, seconds) - whole) * 1_000_000))
    }
}

internal import CWebSockets

#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 client for the server's own outgoing calls (webhooks, an SFU's API): one request
/// per connection (`Connection: close`), `http://` or `https://`, and one deadline for the whole exchange.
///
/// An `https://` URL is TLS 1.2 or later: the server's certificate must chain to a trusted authority (the
/// system's, or those of `certificateAuthorityFile`) and name the URL's host. Nothing is retried here:
/// the caller decides (a webhook retries with backoff; an API call reports).
///
/// A writer never raises `SIGPIPE`: plain sockets are written with `MSG_NOSIGNAL`, and TLS runs over
/// memory buffers that the client moves to and from the socket itself.
public struct HTTPClient: Sendable {
    /// What the server answered.
    public struct Answer: Sendable {
        /// The status code, 100…599.
        public var status: Int
        /// The headers, names in lower case; a repeated header keeps its last value.
        public var headers: [String: String]
        public var body: [UInt8]

        /// The body as UTF-8 text, or nil when it is not.
        public var bodyText: String? { String(validating: body, as: UTF8.self) }
    }

    /// Seconds allowed for the whole exchange: connect, TLS handshake, request and answer.
    public var timeout: Double
    /// For `https://`, a PEM file of the certificate authorities to trust instead of the system's.
    public var certificateAuthorityFile: String?
    /// The longest answer read, head and body; a longer one fails the exchange.
    public var maximumAnswerBytes: Int

    public init(timeout: Double = 10, certificateAuthorityFile: String? = nil, maximumAnswerBytes: Int = 1 << 20) {
        precondition(timeout > 0, "a timeout is positive")
        self.timeout = timeout
        self.certificateAuthorityFile = certificateAuthorityFile
        self.maximumAnswerBytes = maximumAnswerBytes
    }

    /// Sends one request and reads the whole answer.
    /// - Parameters:
    ///   - method: `GET`, `POST`, `DELETE`…
    ///   - url: `http://HOST[:PORT]/PATH?QUERY` or `https://…` (HOST a name, an IPv4 address, or, for
    ///     `http://`, `[IPv6]`).
    ///   - headers: sent after `Host`, `Content-Length` and `Connection`, in order.
    ///   - body: sent as is (give its `Content-Type` in `headers`).
    /// - Returns: the answer, whatever its status.
    /// - Throws: `TransportError`: `.parse` (the URL), `.connect` (name, refusal, TLS handshake or
    ///   certificate), `.timeout` (no connection in time), `.exchange` (the request or answer failed or
    ///   ran past the deadline, or the answer is malformed or too long).
    public func send(
        _ method: String, _ url: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) throws(TransportError) -> Answer {
        let endpoint = try EndpointURL(url, schemes: .http)
        let deadline = Deadline(seconds: timeout)
        let connection = try HTTPConnection(endpoint: endpoint, url: url, deadline: deadline)
        defer { connection.close() }
        if endpoint.secure { try connection.startTLS(host: endpoint.host, certificateAuthorityFile: certificateAuthorityFile) }
        var head = "\(method) \(endpoint.pathAndQuery) HTTP/1.1\r\nHost: \(endpoint.hostHeader)\r\n"
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n"
        for (name, value) in headers {
            precondition(!(name + value).contains("\r") && !(name + value).contains("\n"), "a header is one line")
            head += "\(name): \(value)\r\n"
        }
        head += "\r\n"
        try connection.write(Array(head.utf8) + body)
        var reader = AnswerReader(limit: maximumAnswerBytes, headOnly: method == "HEAD")
        while !reader.isComplete {
            let chunk = try connection.read()
            do throws(AnswerReader.Malformed) {
                try reader.take(chunk)
            } catch {
                throw TransportError(url, .exchange, error.reason)
            }
        }
        guard let answer = reader.answer else { throw TransportError(url, .exchange, "closed before the answer was complete") }
        return answer
    }
}

/// A point in time (monotonic clock) that the exchange's waits must end by.
struct Deadline {
    let nanoseconds: UInt64

    init(seconds: Double) {
        nanoseconds = Self.now() + UInt64(seconds * 1e9)
    }

    /// Milliseconds left for `poll`, 0 once passed.
    var millisecondsLeft: Int32 {
        let now = Self.now()
        return now >= nanoseconds ? 0 : Int32(min((nanoseconds - now) / 1_000_000 + 1, UInt64(Int32.max)))
    }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

/// One TCP connection of an exchange, optionally TLS over memory buffers; non-blocking, every wait
/// bounded by the exchange's deadline. Used by one thread, then closed.
private final class HTTPConnection {
    private let fd: Int32
    private let url: String
    private let deadline: Deadline
    private var tls: (context: OpaquePointer, ssl: OpaquePointer, incoming: OpaquePointer, outgoing: OpaquePointer)?
    /// Where the socket is read into (then copied to the caller, or into the TLS layer's `incoming`).
    private var readBuffer = [UInt8](repeating: 0, count: 16384)

    init(endpoint: EndpointURL, url: String, deadline: Deadline) throws(TransportError) {
        self.url = url
        self.deadline = deadline
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(endpoint.host, String(endpoint.port), &hints, &list)
        guard status == 0, let first = list else {
            throw TransportError(url, .connect, "cannot resolve \(endpoint.host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var failure = TransportError(url, .connect, "no address")
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else {
                failure = TransportError(url, .connect, "socket: \(String(cString: strerror(errno)))")
                continue
            }
            if connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 || errno == EINPROGRESS {
                switch Self.wait(fd, for: Int16(POLLOUT), deadline: deadline) {
                case .ready:
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error == 0 {
                        self.fd = fd
                        return
                    }
                    failure = TransportError(url, .connect, String(cString: strerror(error)))
                case .timedOut:
                    Glibc.close(fd)
                    throw TransportError(url, .timeout, "no connection within the deadline")
                case .failed(let error):
                    failure = TransportError(url, .connect, String(cString: strerror(error)))
                }
            } else {
                failure = TransportError(url, .connect, String(cString: strerror(errno)))
            }
            Glibc.close(fd)
        }
        throw failure
    }

    /// Starts TLS: the handshake, then the certificate's chain and name.
    func startTLS(host: String, certificateAuthorityFile: String?) throws(TransportError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw tlsError("cannot create a TLS context") }
        _ = activespeaker_ssl_require_tls12(context)
        let loaded =
            if let certificateAuthorityFile {
                SSL_CTX_load_verify_locations(context, certificateAuthorityFile, nil) == 1
            } else {
                SSL_CTX_set_default_verify_paths(context) == 1
            }
        guard loaded, let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw tlsError("cannot load the certificate authorities\(certificateAuthorityFile.map { " of \($0)" } ?? "")")
        }
        let incoming = BIO_new(BIO_s_mem())!, outgoing = BIO_new(BIO_s_mem())!
        SSL_set_bio(ssl, incoming, outgoing)
        tls = (context, ssl, incoming, outgoing)
        SSL_set_verify(ssl, SSL_VERIFY_PEER, nil)
        var address = in_addr()
        if inet_pton(AF_INET, host, &address) != 1 { _ = activespeaker_ssl_set_server_name(ssl, host) }
        SSL_set1_host(ssl, host)
        SSL_set_connect_state(ssl)
        while true {
            let result = SSL_do_handshake(ssl)
            try flushTLS()
            if result == 1 { return }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ:
                guard try fillTLS() else { throw TransportError(url, .connect, "TLS: the server closed during the handshake") }
            case SSL_ERROR_WANT_WRITE: continue
            default:
                let verification = SSL_get_verify_result(ssl)
                if verification != X509_V_OK {
                    throw TransportError(
                        url, .connect, "TLS: certificate: \(String(cString: activespeaker_x509_verify_error_string(Int32(verification))))")
                }
                throw tlsError("TLS handshake failed")
            }
        }
    }

    /// Writes all of `bytes`.
    func write(_ bytes: [UInt8]) throws(TransportError) {
        if let tls {
            let written = bytes.withUnsafeBytes { SSL_write(tls.ssl, $0.baseAddress, Int32($0.count)) }
            guard written == bytes.count else { throw tlsError("TLS write failed") }
            try flushTLS()
        } else {
            try send(bytes[...])
        }
    }

    /// Reads what arrives next; empty at the end of the answer (the server closed).
    func read() throws(TransportError) -> [UInt8] {
        guard let tls else {
            let count = try receive()
            return Array(readBuffer[0..<count])
        }
        while true {
            let count = readBuffer.withUnsafeMutableBytes { SSL_read(tls.ssl, $0.baseAddress, Int32($0.count)) }
            if count > 0 { return Array(readBuffer[0..<Int(count)]) }
            switch SSL_get_error(tls.ssl, count) {
            case SSL_ERROR_ZERO_RETURN: return []
            case SSL_ERROR_WANT_READ:
                // A server that closes without close_notify ends the answer as a plain close does; the
                // answer's own framing (Content-Length, chunks) says whether it was complete.
                guard try fillTLS() else { return [] }
            default: throw tlsError("TLS read failed")
            }
        }
    }

    func close() {
        if let tls {
            SSL_free(tls.ssl)
            SSL_CTX_free(tls.context)
        }
        tls = nil
        Glibc.close(fd)
    }

    // MARK: Socket

    private enum Wait {
        case ready
        case timedOut
        case failed(Int32)
    }

    private static func wait(_ fd: Int32, for events: Int16, deadline: Deadline) -> Wait {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        while true {
            let left = deadline.millisecondsLeft
            if left == 0 { return .timedOut }
            let result = poll(&entry, 1, left)
            if result > 0 { return .ready }
            if result == 0 { return .timedOut }
            if errno != EINTR { return .failed(errno) }
        }
    }

    private func send(_ bytes: ArraySlice<UInt8>) throws(TransportError) {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                offset += sent
                continue
            }
            guard sent < 0, errno == EAGAIN || errno == EINTR else {
                throw TransportError(url, .exchange, "send: \(String(cString: strerror(errno)))")
            }
            try waitOrThrow(Int16(POLLOUT))
        }
    }

    /// Reads into `readBuffer`; returns the count, 0 when the server closed.
    private func receive() throws(TransportError) -> Int {
        while true {
            let count = readBuffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if count >= 0 { return count }
            guard errno == EAGAIN || errno == EINTR else {
                throw TransportError(url, .exchange, "recv: \(String(cString: strerror(errno)))")
            }
            try waitOrThrow(Int16(POLLIN))
        }
    }

    private func waitOrThrow(_ events: Int16) throws(TransportError) {
        switch Self.wait(fd, for: events, deadline: deadline) {
        case .ready: return
        case .timedOut: throw TransportError(url, .exchange, "no answer within the deadline")
        case .failed(let error): throw TransportError(url, .exchange, "poll: \(String(cString: strerror(error)))")
        }
    }

    // MARK: TLS over memory buffers

    /// Sends what the TLS layer has written.
    private func flushTLS() throws(TransportError) {
        guard let tls else { return }
        var chunk = [UInt8](repeating: 0, count: 16384)
        while true {
            let count = chunk.withUnsafeMutableBytes { BIO_read(tls.outgoing, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { return }
            try send(chunk[0..<Int(count)])
        }
    }

    /// Gives the TLS layer what the socket has; false when the server closed.
    private func fillTLS() throws(TransportError) -> Bool {
        guard let tls else { return false }
        let count = try receive()
        guard count > 0 else { return false }
        _ = readBuffer.withUnsafeBytes { BIO_write(tls.incoming, $0.baseAddress, Int32(count)) }
        return true
    }

    private func tlsError(_ what: String) -> TransportError {
        let code = ERR_get_error()
        guard code != 0 else { return TransportError(url, .connect, what) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        ERR_clear_error()
        return TransportError(url, .connect, "\(what): \(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
    }
}

/// Reads an HTTP/1.1 answer as its bytes arrive: the head, then the body by `Content-Length`, by chunks
/// (`Transfer-Encoding: chunked`), or to the close.
struct AnswerReader {
    struct Malformed: Error {
        var reason: String
    }

    private let limit: Int
    private let headOnly: Bool
    private var bytes: [UInt8] = []
    private var head: (status: Int, headers: [String: String], bodyStart: Int)?
    private var closed = false
    private(set) var answer: HTTPClient.Answer?

    init(limit: Int, headOnly: Bool = false) {
        self.limit = limit
        self.headOnly = headOnly
    }

    var isComplete: Bool { answer != nil || closed }

    /// Takes the next bytes read; empty: the server closed.
    mutating func take(_ chunk: [UInt8]) throws(Malformed) {
        if chunk.isEmpty { closed = true }
        bytes += chunk
        guard bytes.count <= limit else { throw Malformed(reason: "the answer is longer than \(limit) bytes") }
        if head == nil {
            guard let end = Self.find([13, 10, 13, 10], in: bytes[...], from: 0) else {
                if closed { throw Malformed(reason: "closed before the end of the answer's head") }
                return
            }
            head = try Self.parseHead(bytes[0..<end], bodyStart: end + 4)
        }
        guard let head else { return }
        let body = bytes[head.bodyStart...]
        func finish(_ body: [UInt8]) { answer = HTTPClient.Answer(status: head.status, headers: head.headers, body: body) }
        if headOnly || head.status == 204 || head.status == 304 || (100..<200).contains(head.status) {
            return finish([])
        }
        if head.headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            if let decoded = try Self.dechunk(body) { finish(decoded) } else if closed { throw Malformed(reason: "closed inside a chunked body") }
        } else if let lengthText = head.headers["content-length"] {
            guard let length = Int(lengthText.trimmingSpaces), length >= 0 else { throw Malformed(reason: "bad Content-Length \(lengthText)") }
            if body.count >= length {
                finish(Array(body.prefix(length)))
            } else if closed {
                throw Malformed(reason: "closed after \(body.count) of \(length) body bytes")
            }
        } else if closed {
            finish(Array(body))
        }
    }

    private static func parseHead(_ head: ArraySlice<UInt8>, bodyStart: Int) throws(Malformed) -> (Int, [String: String], Int) {
        let text = String(decoding: head, as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), let status = Int(statusLine[1]), (100...599).contains(status) else {
            throw Malformed(reason: "not an HTTP/1.x status line")
        }
        var headers: [String: String] = [:]
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { throw Malformed(reason: "a header line without a colon") }
            headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...]).trimmingSpaces
        }
        return (status, headers, bodyStart)
    }

    /// The body of complete chunks up to the last (size 0), or nil while more is needed.
    private static func dechunk(_ body: ArraySlice<UInt8>) throws(Malformed) -> [UInt8]? {
        var decoded: [UInt8] = []
        var offset = body.startIndex
        while true {
            guard let lineEnd = find([13, 10], in: body, from: offset) else { return nil }
            let sizeText = String(decoding: body[offset..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingSpaces, radix: 16), size >= 0 else { throw Malformed(reason: "bad chunk size") }
            let start = lineEnd + 2
            if size == 0 { return decoded }
            guard start + size + 2 <= body.endIndex else { return nil }
            decoded += body[start..<(start + size)]
            offset = start + size + 2
        }
    }

    /// The index where `pattern` first starts in `bytes` at or after `start`.
    private static func find(_ pattern: [UInt8], in bytes: ArraySlice<UInt8>, from start: Int) -> Int? {
        guard bytes.count >= pattern.count else { return nil }
        var index = start
        while index + pattern.count <= bytes.endIndex {
            if bytes[index] == pattern[0], bytes[index..<(index + pattern.count)].elementsEqual(pattern) { return index }
            index += 1
        }
        return nil
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    fileprivate var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}

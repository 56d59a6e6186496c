internal import CWebSockets
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What libwebsockets logged at error level since the last `clearLastError`, per thread (lines joined
/// by `; `), for `TransportError` messages: lws reports why a bind or a certificate failed only in its
/// log, on the thread that asked. Per thread, so that one server's failure is not reported with another
/// thread's line logged at the same moment (lws's log is one per process). At most 64 threads are
/// remembered; past that the record starts afresh.
private let lastLoggedError = Mutex<[pthread_t: String]>([:])

/// Whether lws log lines also go to stderr (`ACTIVESPEAKER_LWS_LOG=1`), for debugging.
private let echoLibraryLog: Bool = getenv("ACTIVESPEAKER_LWS_LOG").map { String(cString: $0) == "1" } ?? false

/// Sets up libwebsockets' logging once per process: errors are kept (not printed) for error
/// messages; all other levels are off. `ACTIVESPEAKER_LWS_LOG=1` prints errors and warnings to stderr.
private let loggingConfigured: Void = {
    let levels = echoLibraryLog ? Int32(LLL_ERR | LLL_WARN) : Int32(LLL_ERR)
    lws_set_log_level(levels) { level, line in
        guard let line else { return }
        var text = String(cString: line)
        if echoLibraryLog { _ = text.withCString { write(2, $0, strlen($0)) } }
        guard level & Int32(LLL_ERR) != 0 else { return }
        // lws lines start with a timestamp "[2024/01/01 00:00:00:0000] E: "; keep what follows.
        if let marker = text.range(of: "] E: ") { text = String(text[marker.upperBound...]) }
        while text.last == "\n" || text.last == "\r" { text.removeLast() }
        // Bounded: a long-running process may log many errors between two clears.
        let thread = pthread_self()
        lastLoggedError.withLock { errors in
            if errors.count >= 64, errors[thread] == nil { errors.removeAll() }
            let earlier = errors[thread] ?? ""
            errors[thread] = earlier.isEmpty || earlier.utf8.count > 1000 ? text : earlier + "; " + text
        }
    }
}()

/// Helpers around the libwebsockets C API shared by the server and the client.
enum LibWebSockets {
    /// `LWS_PRE`: bytes of headroom in front of every buffer passed to `lws_write`.
    static let pre = Int(activespeaker_lws_pre())

    /// Silences libwebsockets' logging (once per process); call before creating any context.
    static func configureLogging() { loggingConfigured }

    /// Forgets the last logged error, before an operation whose failure should report it.
    static func clearLastError() {
        let thread = pthread_self()
        lastLoggedError.withLock { _ = $0.removeValue(forKey: thread) }
    }

    /// The errors libwebsockets logged on this thread since `clearLastError`, prefixed `libwebsockets: `.
    static func lastError(orElse fallback: String) -> String {
        let thread = pthread_self()
        let text = lastLoggedError.withLock { $0[thread] ?? "" }
        return "libwebsockets: " + (text.isEmpty ? fallback : text)
    }

    /// The numeric address and port of the socket's peer (IPv4-mapped IPv6 shown as IPv4).
    static func peerAddress(of wsi: OpaquePointer) -> PeerAddress {
        let fd = lws_get_socket_fd(wsi)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) }
        }
        guard ok == 0 else { return PeerAddress(host: "", port: 0) }
        return numericAddress(storage, length: length)
    }

    /// The numeric form of a socket address.
    static func numericAddress(_ storage: sockaddr_storage, length: socklen_t) -> PeerAddress {
        var storage = storage
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let result = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                            NI_NUMERICHOST | NI_NUMERICSERV)
            }
        }
        guard result == 0 else { return PeerAddress(host: "", port: 0) }
        var text = String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if text.hasPrefix("::ffff:"), text.contains(".") { text.removeFirst(7) }
        let port = Int(String(decoding: service.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) ?? 0
        return PeerAddress(host: text, port: port)
    }

    /// The value of one parsed header (all fragments), or nil when absent.
    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        let copied = lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token)
        guard copied >= 0 else { return nil }
        return String(decoding: buffer.prefix(Int(copied)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The request method and URI path: lws stores the path in a token named for the method.
    static func methodAndPath(_ wsi: OpaquePointer) -> (method: String, path: String)? {
        let methods: [(String, lws_token_indexes)] = [
            ("GET", WSI_TOKEN_GET_URI), ("POST", WSI_TOKEN_POST_URI), ("PUT", WSI_TOKEN_PUT_URI),
            ("DELETE", WSI_TOKEN_DELETE_URI), ("PATCH", WSI_TOKEN_PATCH_URI),
            ("OPTIONS", WSI_TOKEN_OPTIONS_URI), ("HEAD", WSI_TOKEN_HEAD_URI),
        ]
        for (name, token) in methods {
            if let path = header(wsi, token) { return (name, path) }
        }
        return nil
    }

    /// The query arguments: lws keeps each `name=value` decoded (`%XX`, and `+` as a space) as one
    /// fragment of `WSI_TOKEN_HTTP_URI_ARGS`, split at `&` before decoding.
    static func queryArguments(_ wsi: OpaquePointer) -> [String: String] {
        var arguments: [String: String] = [:]
        let total = Int(lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS))
        guard total > 0 else { return arguments }
        var buffer = [CChar](repeating: 0, count: total + 1)
        var index: Int32 = 0
        while true {
            let copied = lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index)
            guard copied >= 0 else { break }
            index += 1
            let text = String(decoding: buffer.prefix(Int(copied)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if text.isEmpty { continue }
            if let equals = text.firstIndex(of: "=") {
                arguments[String(text[..<equals])] = String(text[text.index(after: equals)...])
            } else {
                arguments[text] = ""
            }
        }
        return arguments
    }

    /// Every header lws parsed into its token table, and those of `custom` (lower-cased names lws has no
    /// token for, which it can only look up by name), by lower-cased name without the colon.
    static func headers(_ wsi: OpaquePointer, custom: Set<String> = []) -> [String: String] {
        var headers: [String: String] = [:]
        for name in custom {
            let key = name + ":"
            let length = Int(lws_hdr_custom_length(wsi, key, Int32(key.utf8.count)))
            guard length >= 0 else { continue }
            var buffer = [CChar](repeating: 0, count: length + 1)
            let copied = lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), key, Int32(key.utf8.count))
            guard copied >= 0 else { continue }
            headers[name] = String(decoding: buffer.prefix(Int(copied)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        for raw in 0..<_WSI_TOKEN_CLIENT_SENT_PROTOCOLS.rawValue {
            let token = lws_token_indexes(rawValue: raw)
            if token == WSI_TOKEN_HTTP_URI_ARGS { continue }
            guard let namePointer = lws_token_to_string(token) else { continue }
            var name = String(cString: namePointer)
            // Header tokens read "host:"; method tokens ("get ") and h2 pseudo headers (":path") are skipped.
            guard name.hasSuffix(":"), !name.hasPrefix(":") else { continue }
            name.removeLast()
            if let value = header(wsi, token) { headers[name.lowercased()] = value }
        }
        return headers
    }
}

extension LibWebSockets {
    /// Sets the code and reason of the close frame lws sends when the callback then returns -1.
    /// The reason is cut to 123 bytes (the most a close frame carries).
    static func setCloseReason(_ wsi: OpaquePointer, code: UInt16, reason: String) {
        var bytes = Array(reason.utf8.prefix(123))
        while !bytes.isEmpty, String(validating: bytes, as: UTF8.self) == nil { bytes.removeLast() }
        bytes.withUnsafeMutableBufferPointer {
            lws_close_reason(wsi, lws_close_status(rawValue: UInt32(code)), $0.baseAddress, $0.count)
        }
    }
}

extension LibWebSockets {
    /// The numeric address and port of the socket's own end.
    static func localAddress(of wsi: OpaquePointer) -> PeerAddress {
        let fd = lws_get_socket_fd(wsi)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard ok == 0 else { return PeerAddress(host: "", port: 0) }
        return numericAddress(storage, length: length)
    }
}

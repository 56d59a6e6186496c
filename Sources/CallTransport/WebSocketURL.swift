/// The parts of a `ws://` or `wss://` URL that a WebSocket client needs.
struct WebSocketURL: Sendable, Equatable {
    /// True for `wss://`: the connection is TLS, and the server's certificate is verified.
    var secure: Bool
    /// The host without brackets: `127.0.0.1`, `::1`, `localhost`.
    var host: String
    var port: Int
    /// The path with its query, `/` at least: `/v1/signal?token=…`.
    var pathAndQuery: String

    /// The `Host` header value: `127.0.0.1:8080`, `[::1]:8080`.
    var hostHeader: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `ws://HOST[:PORT][/PATH][?QUERY]` with HOST a name, IPv4 address or `[IPv6]`, PORT by
    /// default 80; or the same with `wss://`, PORT by default 443, HOST a name or IPv4 address.
    ///
    /// `wss://[IPv6]` is refused: libwebsockets 4.1.6 takes the name to verify from the `Host` header
    /// cut at its first colon, so an IPv6 address could never match its certificate.
    init(_ text: String) throws(TransportError) {
        let lowered = text.lowercased()
        let schemeLength: Int
        if lowered.hasPrefix("ws://") {
            (secure, schemeLength) = (false, 5)
        } else if lowered.hasPrefix("wss://") {
            (secure, schemeLength) = (true, 6)
        } else {
            throw TransportError(text, .parse, "expected ws://HOST:PORT/PATH or wss://HOST:PORT/PATH")
        }
        let rest = text.dropFirst(schemeLength)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var target = String(rest[authorityEnd...])
        if target.hasPrefix("?") { target = "/" + target }
        if target.isEmpty { target = "/" }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw TransportError(text, .parse, "unterminated [IPv6] address")
            }
            host = authority[authority.index(after: authority.startIndex)..<close]
            if secure {
                throw TransportError(text, .parse, "wss:// to an IPv6 address is not supported (its certificate cannot be checked); use a host name")
            }
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw TransportError(text, .parse, "expected :PORT after ]") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty else { throw TransportError(text, .parse, "no host") }
        var port = secure ? 443 : 80
        if let portText {
            guard let number = Int(portText), (1...65535).contains(number) else {
                throw TransportError(text, .parse, "port must be 1…65535")
            }
            port = number
        }
        self.host = String(host)
        self.port = port
        self.pathAndQuery = target
    }
}

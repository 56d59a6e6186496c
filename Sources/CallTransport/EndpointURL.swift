/// The parts of a `ws://`/`wss://` URL that a WebSocket client needs, or of an `http://`/`https://` URL
/// that an `HTTPClient` needs.
struct EndpointURL: Sendable, Equatable {
    /// A pair of schemes: plain and TLS.
    struct Schemes: Sendable, Equatable {
        var plain: String
        var secure: String

        static let webSocket = Schemes(plain: "ws", secure: "wss")
        static let http = Schemes(plain: "http", secure: "https")
    }

    /// True for `wss://` or `https://`: the connection is TLS, and the server's certificate is verified.
    var secure: Bool
    /// The host without brackets: `127.0.0.1`, `::1`, `localhost`.
    var host: String
    var port: Int
    /// The path with its query, `/` at least: `/v1/signal?token=…`.
    var pathAndQuery: String

    /// The `Host` header value: `127.0.0.1:8080`, `[::1]:8080`.
    var hostHeader: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Parses `ws://HOST[:PORT][/PATH][?QUERY]` with HOST a name, IPv4 address or `[IPv6]`, PORT by
    /// default 80; or the same with `wss://`, PORT by default 443, HOST a name or IPv4 address. With
    /// `schemes: .http`, the same for `http://` and `https://`.
    ///
    /// `wss://[IPv6]` is refused: libwebsockets 4.1.6 takes the name to verify from the `Host` header
    /// cut at its first colon, so an IPv6 address could never match its certificate. `https://[IPv6]`
    /// is refused alike, so that both clients take the same URLs.
    init(_ text: String, schemes: Schemes = .webSocket) throws(TransportError) {
        let lowered = text.lowercased()
        let schemeLength: Int
        if lowered.hasPrefix(schemes.plain + "://") {
            (secure, schemeLength) = (false, schemes.plain.count + 3)
        } else if lowered.hasPrefix(schemes.secure + "://") {
            (secure, schemeLength) = (true, schemes.secure.count + 3)
        } else {
            throw TransportError(
                text, .parse, "expected \(schemes.plain)://HOST:PORT/PATH or \(schemes.secure)://HOST:PORT/PATH")
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
                throw TransportError(text, .parse, "\(schemes.secure):// to an IPv6 address is not supported (its certificate cannot be checked); use a host name")
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

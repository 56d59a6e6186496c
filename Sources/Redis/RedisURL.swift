import Foundation

/// Where a Redis server is and how to log in: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`.
///
/// The port defaults to 6379 and the database to 0; an IPv6 host is written in brackets
/// (`redis://[::1]:6380`). User and password may be percent-encoded (`%40` for `@`). TLS (`rediss://`)
/// and Unix sockets are not supported.
///
/// `description` writes the password as `***`, and no error message quotes it: log the URL through
/// `description` only.
public struct RedisURL: Sendable, Hashable, CustomStringConvertible {
    /// A host name or an IP address (IPv6 without the brackets).
    public var host: String
    /// The TCP port, 1–65535.
    public var port: Int
    /// The ACL user to log in as (`AUTH user password`); nil: the default user.
    public var username: String?
    /// The password; nil: no AUTH.
    public var password: String?
    /// The database number for `SELECT`, 0 or more.
    public var database: Int

    /// Parses a `redis://` URL.
    /// - Throws: `RedisError` of kind `.url`, saying which part is wrong (the scheme, the user
    ///   information, the host, the port, the database); the message never contains the password.
    public init(_ text: String) throws(RedisError) {
        let prefix = "redis://"
        guard text.lowercased().hasPrefix(prefix) else {
            if let colon = text.range(of: "://") {
                let scheme = text[..<colon.lowerBound]
                let hint = scheme.lowercased() == "rediss" ? " (TLS is not supported)" : ""
                throw RedisError(.url, "Redis URL: unsupported scheme '\(scheme)'\(hint); write redis://HOST[:PORT][/DB]")
            }
            throw RedisError(.url, "Redis URL: does not start with redis://; write redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]")
        }
        var rest = Substring(text.dropFirst(prefix.count))

        // User information: everything before the last "@" (a password may itself contain "@" or "/").
        username = nil
        password = nil
        if let at = rest.lastIndex(of: "@") {
            let userInformation = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = userInformation.firstIndex(of: ":") else {
                throw RedisError(.url, "Redis URL: the part before '@' needs a colon: write redis://:PASSWORD@HOST or redis://USER:PASSWORD@HOST")
            }
            guard let user = String(userInformation[..<colon]).removingPercentEncoding,
                  let secret = String(userInformation[userInformation.index(after: colon)...]).removingPercentEncoding
            else {
                throw RedisError(.url, "Redis URL: bad percent-encoding in the user or password")
            }
            username = user.isEmpty ? nil : user
            password = secret.isEmpty ? nil : secret
        }

        // Database: after the first "/".
        database = 0
        if let slash = rest.firstIndex(of: "/") {
            let number = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !number.isEmpty {
                guard let value = Int(number), value >= 0 else {
                    throw RedisError(.url, "Redis URL: bad database '\(number)': want a number, 0 or more")
                }
                database = value
            }
        }

        // Host and port; an IPv6 address in brackets.
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw RedisError(.url, "Redis URL: an IPv6 host needs a closing ']'")
            }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else {
                    throw RedisError(.url, "Redis URL: unexpected '\(after)' after the IPv6 host")
                }
                portText = after.dropFirst()
            }
        } else if let colon = rest.firstIndex(of: ":") {
            host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        } else {
            host = String(rest)
        }
        guard !host.isEmpty else { throw RedisError(.url, "Redis URL: no host") }
        port = 6379
        if let portText {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw RedisError(.url, "Redis URL: bad port '\(portText)': want 1–65535")
            }
            port = value
        }
    }

    /// The URL with the password written as `***`: safe to log.
    public var description: String {
        var text = "redis://"
        if username != nil || password != nil {
            text += username.map { $0.addingPercentEncoding(withAllowedCharacters: .urlUserAllowed) ?? $0 } ?? ""
            text += password == nil ? ":@" : ":***@"
        }
        text += host.contains(":") ? "[\(host)]" : host
        text += ":\(port)"
        if database != 0 { text += "/\(database)" }
        return text
    }
}

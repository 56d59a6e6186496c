/// What went wrong talking to Redis. Messages name the server by `RedisURL.description`, so a password
/// never appears in one.
public struct RedisError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure, for callers that react differently (retry later, report, give up).
    public enum Kind: Sendable {
        /// The URL could not be parsed.
        case url
        /// No connection: refused, reset, closed by the server, name not resolved, or not retried yet
        /// (`RedisConnection.retryInterval`).
        case connection
        /// Connecting or a reply took longer than the timeout.
        case timeout
        /// Redis refused a command the connection needs to work (AUTH, SELECT).
        case reply
        /// hiredis could not parse what the server sent (the connection is out of step and is dropped).
        case protocolError
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}

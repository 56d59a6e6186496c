/// The one error type of CallTransport: what failed (an address or URL), the operation, and what
/// libwebsockets or the system said.
///
/// `description` is one line, e.g.
/// `ws://127.0.0.1:9/v1/signal: connect failed (libwebsockets: connect failed)`.
public struct TransportError: Error, CustomStringConvertible, Sendable, Hashable {
    /// The operation that failed.
    public enum Operation: String, Sendable, Hashable {
        /// The address or URL given is malformed or not supported.
        case parse = "invalid"
        /// Creating the libwebsockets context or its listening socket (port in use, no such address…).
        case listen = "cannot listen"
        /// Connecting to a server, or its WebSocket handshake.
        case connect = "connect failed"
        /// No connection within the time allowed.
        case timeout = "connect timed out"
        /// An HTTP exchange on a connection made: sending the request, or reading or parsing the answer
        /// (closed early, timed out, malformed).
        case exchange = "request failed"
    }

    /// What failed: the listening address (`127.0.0.1:8080`, `[::1]:0`) or the URL.
    public var subject: String
    /// The operation that failed.
    public var operation: Operation
    /// What libwebsockets or the system reported, or an explanation; may be empty.
    public var message: String

    public init(_ subject: String, _ operation: Operation, _ message: String = "") {
        self.subject = subject
        self.operation = operation
        self.message = message
    }

    public var description: String {
        message.isEmpty ? "\(subject): \(operation.rawValue)" : "\(subject): \(operation.rawValue) (\(message))"
    }
}

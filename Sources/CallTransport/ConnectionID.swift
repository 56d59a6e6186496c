/// Identifies one WebSocket connection of a `WebServer`, from `webSocketOpened` until `webSocketClosed`.
///
/// Ids are never reused within one server, so a stale id (a connection that has closed) is harmless:
/// `send` and `close` to it are ignored.
public struct ConnectionID: Hashable, Sendable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The server's number for the connection, 1 and up.
    public let rawValue: Int

    /// Wraps a number; servers make these, tests may too.
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(integerLiteral value: Int) { rawValue = value }

    public var description: String { "#\(rawValue)" }
}

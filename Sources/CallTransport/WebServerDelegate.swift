/// Receives what a `WebServer`'s clients send.
///
/// Every method is called on the server's one service thread, one call at a time, so the delegate may
/// keep its connection state unlocked if only these methods touch it. They must not block for long:
/// while one runs, no connection of the server is served. Calling `WebServer.send` and
/// `WebServer.close` from them is fine (the work is queued).
public protocol WebServerDelegate: AnyObject, Sendable {
    /// Answers one plain HTTP request (anything that is not a WebSocket upgrade).
    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse
    /// A WebSocket connection was upgraded on `path` (without query) with the decoded `query`
    /// (decoded as in `HTTPRequest.query`: `+` is a space).
    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress)
    /// One complete text message (fragments assembled, valid UTF-8, within the size limit).
    func webSocketReceived(_ connection: ConnectionID, text: String)
    /// The connection has closed, whoever closed it; called exactly once per opened connection.
    func webSocketClosed(_ connection: ConnectionID)
}

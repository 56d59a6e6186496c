/// Receives what a `WebServer`'s clients send.
///
/// Every method is called on the server's one service thread, one call at a time, so the delegate may
/// keep its connection state unlocked if only these methods touch it. They must not block for long:
/// while one runs, no connection of the server is served. Calling `WebServer.send` and
/// `WebServer.close` from them is fine (the work is queued).
public protocol WebServerDelegate: AnyObject, Sendable {
    /// Answers one plain HTTP request (anything that is not a WebSocket upgrade).
    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse
    /// Answers one plain HTTP request, now or later: call `answer` exactly once, from any thread. Until
    /// then the request's connection waits and every other connection is served. For answers that may
    /// wait on something slow (a remote store, another server); a request not answered within 30 s
    /// has its connection closed (and its answer, if it comes, dropped). The default calls
    /// `handle(_:from:)` and answers at once.
    func handle(_ request: HTTPRequest, from peer: PeerAddress, answer: @escaping @Sendable (HTTPResponse) -> Void)
    /// A WebSocket connection was upgraded on `path` (without query) with the decoded `query`
    /// (decoded as in `HTTPRequest.query`: `+` is a space).
    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress)
    /// One complete text message (fragments assembled, valid UTF-8, within the size limit).
    func webSocketReceived(_ connection: ConnectionID, text: String)
    /// One complete binary message (fragments assembled, within the size limit), on a path of the server's
    /// `binaryPaths` only. The default drops it.
    func webSocketReceived(_ connection: ConnectionID, bytes: [UInt8])
    /// The connection has closed, whoever closed it; called exactly once per opened connection.
    func webSocketClosed(_ connection: ConnectionID)
}

extension WebServerDelegate {
    public func webSocketReceived(_ connection: ConnectionID, bytes: [UInt8]) {}

    public func handle(_ request: HTTPRequest, from peer: PeerAddress, answer: @escaping @Sendable (HTTPResponse) -> Void) {
        answer(handle(request, from: peer))
    }
}

import CallTransport
import Foundation
import Synchronization

/// A `WebServerDelegate` that records everything and answers HTTP from a small route table.
/// WebSocket messages are echoed when `echoes` is true.
final class RecordingDelegate: WebServerDelegate {
    struct Opened {
        var connection: ConnectionID
        var path: String
        var query: [String: String]
        var peer: PeerAddress
    }

    struct Record {
        var requests: [HTTPRequest] = []
        var peers: [PeerAddress] = []
        var opened: [Opened] = []
        var received: [(ConnectionID, String)] = []
        var closed: [ConnectionID] = []
    }

    let record = Mutex(Record())
    let echoes: Bool
    /// Set once the server exists, so that echoes can be sent.
    let server = Mutex<WebServer?>(nil)

    init(echoes: Bool = true) { self.echoes = echoes }

    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse {
        record.withLock {
            $0.requests.append(request)
            $0.peers.append(peer)
        }
        switch (request.method, request.path) {
        case ("GET", "/v1/health"), ("HEAD", "/v1/health"):
            return .json(status: 200, #"{"status":"ok"}"#)
        case ("POST", "/v1/rooms"):
            var response = HTTPResponse.json(status: 201, request.bodyText ?? "")
            response.headers = [("X-Request-Bytes", "\(request.body.count)")]
            return response
        case ("DELETE", let path) where path.hasPrefix("/v1/rooms/"):
            return .empty(status: 204)
        case ("GET", "/big"):
            return .text(status: 200, String(repeating: "0123456789", count: 20_000))
        default:
            return .json(status: 404, #"{"error":{"code":4003,"message":"not found"}}"#)
        }
    }

    /// Answers for `GET /later` kept until the test gives them (`parked`); other requests at once.
    func handle(_ request: HTTPRequest, from peer: PeerAddress, answer: @escaping @Sendable (HTTPResponse) -> Void) {
        guard request.path == "/later" else { return answer(handle(request, from: peer)) }
        parkedAnswers.withLock { $0.append(answer) }
    }

    let parkedAnswers = Mutex<[@Sendable (HTTPResponse) -> Void]>([])
    var parked: Int { parkedAnswers.withLock { $0.count } }

    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {
        record.withLock { $0.opened.append(Opened(connection: connection, path: path, query: query, peer: peer)) }
    }

    func webSocketReceived(_ connection: ConnectionID, text: String) {
        record.withLock { $0.received.append((connection, text)) }
        if echoes { server.withLock { $0 }?.send(text, to: connection) }
    }

    func webSocketClosed(_ connection: ConnectionID) {
        record.withLock { $0.closed.append(connection) }
    }

    var opened: [Opened] { record.withLock { $0.opened } }
    var closed: [ConnectionID] { record.withLock { $0.closed } }
    var received: [(ConnectionID, String)] { record.withLock { $0.received } }

    /// Makes, wires and starts a server with this delegate.
    static func serve(host: String = "127.0.0.1", echoes: Bool = true, maximumMessageBytes: Int = 65536,
                      maximumBodyBytes: Int = 65536, maximumQueuedBytes: Int = 4 << 20,
                      maximumConnectionsPerAddress: Int = 64, customHeaders: Set<String> = []) throws -> (WebServer, RecordingDelegate) {
        let delegate = RecordingDelegate(echoes: echoes)
        let server = try WebServer(host: host, maximumMessageBytes: maximumMessageBytes,
                                   maximumBodyBytes: maximumBodyBytes, maximumQueuedBytes: maximumQueuedBytes,
                                   webSocketPaths: ["/v1/signal"], maximumConnectionsPerAddress: maximumConnectionsPerAddress,
                                   customHeaders: customHeaders, delegate: delegate)
        delegate.server.withLock { $0 = server }
        server.start()
        return (server, delegate)
    }

    /// Stops the server and breaks the delegate → server reference so both can go.
    func finish() {
        let server = self.server.withLock { server in
            defer { server = nil }
            return server
        }
        server?.stop()
    }
}


/// Collects what a `WebSocketClient` handler delivers.
final class ClientRecorder: Sendable {
    struct State {
        var messages: [String] = []
        var closed: (code: UInt16?, reason: String)?
    }

    let state = Mutex(State())

    func attach(to client: WebSocketClient) {
        client.setHandler(message: { [self] text in state.withLock { $0.messages.append(text) } },
                          closed: { [self] code, reason in state.withLock { $0.closed = (code, reason) } })
    }

    var messages: [String] { state.withLock { $0.messages } }
    var closed: (code: UInt16?, reason: String)? { state.withLock { $0.closed } }
}

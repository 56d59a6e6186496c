import CallServer
import CallTransport
import Testing

/// The room server's HTTP and upgrade routing, without clients.
@Suite struct RoomServerHTTPTests {
    /// HEAD is GET without the body (RFC 9110 §9.3.2): the answer carries GET's status and headers,
    /// and the transport leaves the body out (HTTPTests).
    @Test func headOfHealthAnswersAsGet() throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let peer = PeerAddress(host: "127.0.0.1", port: 50000)
        let head = server.handle(HTTPRequest(method: "HEAD", path: "/v1/health"), from: peer)
        let get = server.handle(HTTPRequest(method: "GET", path: "/v1/health"), from: peer)
        #expect(head.status == 200)
        #expect(head.contentType == get.contentType && head.body == get.body)
    }

    /// Signalling is the WebSocket on /v1/signal; an upgrade anywhere else is not a way into a room.
    @Test(arguments: ["/", "/v1/health", "/v1/rooms/room", "/v1/signal/x", "/rooms/room"])
    func signallingOnlyOnItsPath(path: String) throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let elsewhere = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)\(path)?room=room")
        #expect(throws: TransportError.self) { try elsewhere.connect(timeout: 5) }
        elsewhere.close()
        let signal = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal?room=room")
        try signal.connect(timeout: 5)
        signal.close()
    }

    /// `POST /v1/rooms/room/ingest` for participant `lobby` from `source`, as a server-wide moderator.
    static func addIngest(source: String, to server: RoomServer) -> HTTPResponse {
        let request = HTTPRequest(
            method: "POST", path: "/v1/rooms/room/ingest", headers: ["authorization": "Bearer \(CallTestServer.adminToken())"],
            body: Array(#"{"participantId":"lobby","source":"\#(source)"}"#.utf8))
        return server.handle(request, from: PeerAddress(host: "127.0.0.1", port: 50000))
    }

    /// Hardening item 11: ingest sources were resolved with a blocking getaddrinfo on the signalling
    /// thread, and `[::1]`/`0.0.0.0` were accepted on an IPv4 RTP socket, where they can never match.
    @Test(arguments: ["[::1]:5004", "::1", "0.0.0.0", "0.0.0.0:5004", "localhost", "localhost:5004", "example.invalid"])
    func ingestSourcesAreNumericAndReachable(source: String) throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let answer = Self.addIngest(source: source, to: server)
        #expect(answer.status == 400, "\(String(decoding: answer.body, as: UTF8.self))")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("4007"))
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:5004", "192.0.2.7"])
    func numericIPv4SourcesAreAccepted(source: String) throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let answer = Self.addIngest(source: source, to: server)
        #expect(answer.status == 201, "\(String(decoding: answer.body, as: UTF8.self))")
    }
}

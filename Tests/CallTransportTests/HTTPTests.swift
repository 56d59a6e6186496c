@testable import CallTransport
import Testing

@Suite("HTTP requests and responses")
struct HTTPTests {
    @Test("GET: path, percent-decoded query, headers, peer; JSON answer with content-length")
    func getRoundTrip() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(
            port: server.port, method: "GET", target: "/v1/health?room=stand%20up&a=x%26y&flag&plus=a+b",
            headers: [("Authorization", "Bearer abc.def"), ("X-Custom", "1")]))
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "application/json")
        #expect(response.headers["content-length"] == "15")
        #expect(response.text == #"{"status":"ok"}"#)
        let request = try #require(delegate.record.withLock { $0.requests.first })
        #expect(request.method == "GET")
        #expect(request.path == "/v1/health")
        // lws decodes the query as a form: "+" is a space (a literal plus must be sent as %2B).
        #expect(request.query == ["room": "stand up", "a": "x&y", "flag": "", "plus": "a b"])
        #expect(request.headers["authorization"] == "Bearer abc.def")
        #expect(request.bearerToken == "abc.def")
        #expect(request.headers["host"] != nil)
        #expect(request.body.isEmpty)
        let peer = try #require(delegate.record.withLock { $0.peers.first })
        #expect(peer.host == "127.0.0.1")
        #expect(peer.port > 0)
    }

    @Test("POST with a body: body, content-type and extra response headers")
    func postWithBody() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let body = #"{"roomId":"standup","maxParticipants":16}"#
        let response = try #require(RawHTTPResponse.exchange(
            port: server.port, method: "POST", target: "/v1/rooms",
            headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
        #expect(response.status == 201)
        #expect(response.text == body)
        #expect(response.headers["x-request-bytes"] == "\(body.utf8.count)")
        let request = try #require(delegate.record.withLock { $0.requests.first })
        #expect(request.method == "POST")
        #expect(request.headers["content-type"] == "application/json")
        #expect(request.bodyText == body)
    }

    @Test("A body of several network packets is assembled (60 000 bytes)")
    func largeBody() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let body = String(repeating: "abcdefghij", count: 6000)
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "POST", target: "/v1/rooms",
                                                             body: Array(body.utf8)))
        #expect(response.status == 201)
        #expect(response.body.count == 60000)
        #expect(delegate.record.withLock { $0.requests.first?.body.count } == 60000)
    }

    @Test("DELETE answers 204 without a body")
    func delete() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "DELETE",
                                                             target: "/v1/rooms/standup"))
        #expect(response.status == 204)
        #expect(response.body.isEmpty)
        let request = try #require(delegate.record.withLock { $0.requests.first })
        #expect(request.method == "DELETE")
        #expect(request.path == "/v1/rooms/standup")
    }

    @Test("PUT reaches the delegate with its method")
    func put() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "PUT", target: "/v1/other",
                                                             body: Array("x".utf8)))
        #expect(response.status == 404)
        #expect(delegate.record.withLock { $0.requests.first?.method } == "PUT")
    }

    @Test("404 from the delegate is passed through with its JSON body")
    func notFound() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/nowhere"))
        #expect(response.status == 404)
        #expect(response.text.contains("4003"))
    }

    @Test("A response larger than one write (200 000 bytes) arrives whole")
    func largeResponse() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/big"))
        #expect(response.status == 200)
        #expect(response.body.count == 200_000)
        #expect(response.text.hasSuffix("0123456789"))
    }

    @Test("Body over the limit: 413 and the connection closes; the delegate never sees it")
    func bodyTooLarge() throws {
        let (server, delegate) = try RecordingDelegate.serve(maximumBodyBytes: 1000)
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "POST", target: "/v1/rooms",
                                                             body: [UInt8](repeating: 65, count: 5000), sendBody: false))
        #expect(response.status == 413)
        #expect(delegate.record.withLock { $0.requests.isEmpty })
        // The server still serves.
        let next = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health"))
        #expect(next.status == 200)
    }

    @Test("Keep-alive: two requests on one connection")
    func keepAlive() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let socket = try #require(RawSocket(host: "127.0.0.1", port: server.port))
        socket.write("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        var bytes: [UInt8] = []
        #expect(eventually { bytes += socket.read(timeout: 0.1); return String(decoding: bytes, as: UTF8.self).hasSuffix("}") })
        socket.write("GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let second = try #require(RawHTTPResponse.parse(socket.readToEnd(timeout: 10)))
        #expect(second.status == 404)
        #expect(delegate.record.withLock { $0.requests.count } == 2)
    }

    @Test("Hosts: IPv6 loopback, localhost and the any-addresses bind; port 0 gives a real port",
          arguments: ["::1", "localhost", "0.0.0.0", "::"])
    func hosts(host: String) throws {
        let (server, delegate) = try RecordingDelegate.serve(host: host)
        defer { delegate.finish() }
        #expect(server.port > 0)
        let connectTo = host == "::1" || host == "::" ? "::1" : "127.0.0.1"
        let response = try #require(RawHTTPResponse.exchange(host: connectTo, port: server.port, method: "GET",
                                                             target: "/v1/health"))
        #expect(response.status == 200)
        let peer = try #require(delegate.record.withLock { $0.peers.first })
        #expect(peer.host == connectTo)
    }

    @Test("A port in use and a bad host are TransportErrors")
    func listenErrors() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let error = #expect(throws: TransportError.self) {
            _ = try WebServer(host: "127.0.0.1", port: server.port, delegate: RecordingDelegate())
        }
        #expect(error?.operation == .listen)
        #expect(error?.message.contains("binding") == true)  // lws logs why; the message carries it
        #expect(error?.description.contains("127.0.0.1:\(server.port)") == true)
        let bad = #expect(throws: TransportError.self) {
            _ = try WebServer(host: "not a host", delegate: RecordingDelegate())
        }
        #expect(bad?.operation == .parse)
    }

    @Test("Connections are forgotten after they close")
    func connectionsReleased() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        for _ in 0..<5 {
            _ = RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health")
        }
        #expect(eventually { server.connectionCount == 0 })
    }
}

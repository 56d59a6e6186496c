@testable import CallTransport
import Foundation
import Synchronization
import Testing
import TestSupport

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

    @Test("An answer given later, from another thread: its connection waits, every other is served meanwhile")
    func answerGivenLater() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let later = Mutex<RawHTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let response = RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/later")
            later.withLock { $0 = response }
            done.signal()
        }.start()
        #expect(Waiting.until { delegate.parked == 1 })
        // While that request waits for its answer, the server answers others (the transport thread is free).
        for _ in 0..<3 {
            #expect(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health")?.status == 200)
        }
        #expect(later.withLock { $0 } == nil)
        let answer = try #require(delegate.parkedAnswers.withLock { $0.first })
        // From this thread: not the server's.
        answer(.text(status: 202, "later\n"))
        done.wait()
        let response = try #require(later.withLock { $0 })
        #expect(response.status == 202 && response.text == "later\n")
    }

    @Test("An answer for a connection the peer closed meanwhile is dropped; the server serves on")
    func answerForAClosedConnection() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        var socket = RawSocket(host: "127.0.0.1", port: server.port)
        try #require(socket != nil)
        socket?.write("GET /later HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(Waiting.until { delegate.parked == 1 })
        socket = nil  // closes it
        let answer = try #require(delegate.parkedAnswers.withLock { $0.first })
        answer(.text(status: 200, "too late\n"))
        #expect(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health")?.status == 200)
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

    /// Issue 29: a URL of about 8 KB or 500 headers closed the connection with no status line; RFC 9110
    /// asks for 414 and RFC 6585 for 431. The head space lws keeps is now 16 KiB: a request target over
    /// 8 KiB is answered 414, known headers over 8 KiB 431, and 500 small headers (12 KB) fit and are
    /// served. Nothing of a refused request reaches the delegate, and the server keeps serving.
    @Test("A long request target is answered 414, long known headers 431, hundreds of small headers are served",
          arguments: ["target", "known headers", "many headers"])
    func oversizedHead(part: String) throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response: RawHTTPResponse?
        switch part {
        case "target":
            response = RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health?" + String(repeating: "a", count: 9_000))
        case "known headers":
            response = RawHTTPResponse.exchange(
                port: server.port, method: "GET", target: "/v1/health", headers: [("Cookie", String(repeating: "c", count: 9_000))])
        default:
            response = RawHTTPResponse.exchange(
                port: server.port, method: "GET", target: "/v1/health", headers: (0..<500).map { ("X-Filler-\($0)", "value-\($0)") })
        }
        let expected = ["target": 414, "known headers": 431, "many headers": 200][part]!
        #expect(response?.status == expected, "\(String(describing: response?.status))")
        #expect(delegate.record.withLock { $0.requests.count } == (expected == 200 ? 1 : 0))
        let next = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health"))
        #expect(next.status == 200)
    }

    /// A head over the 16 KiB lws keeps is still closed without a status line: libwebsockets 4.1.6 drops
    /// the connection when its header space runs out (`lws_pos_in_bounds`), before the server sees
    /// anything (docs/call.md, Known gaps). What holds: nothing reaches the delegate, the server serves on.
    @Test("A head over lws's 16 KiB reaches nobody and the server keeps serving (no status line: known gap)")
    func headOverTheHeaderSpace() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health?" + String(repeating: "a", count: 20_000))
        withKnownIssue("libwebsockets 4.1.6 closes a head beyond its header space without a status line") {
            #expect(response?.status == 414, "\(String(describing: response?.status))")
        }
        #expect(delegate.record.withLock { $0.requests.isEmpty })
        let next = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health"))
        #expect(next.status == 200)
    }

    /// RFC 9112 §6.3: an invalid Content-Length makes the framing unrecoverable; answer 400 and close.
    /// lws itself reads such a value with `atoll` (`12abc` as 12, `-5` as no body, two headers joined
    /// as `5, 6` as 5), so the body must never reach the delegate as anything.
    @Test("Malformed or conflicting Content-Length: 400, the connection closes, the delegate never sees it",
          arguments: [["12abc"], ["-5"], ["+5"], ["5 5"], ["0x10"], ["1e3"], ["5, 5"], ["5", "5"], ["5", "6"],
                      [String(repeating: "0", count: 30) + "5"]])
    func badContentLength(values: [String]) throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let lengths = values.map { "Content-Length: \($0)\r\n" }.joined()
        let response = try #require(RawHTTPResponse.exchange(
            port: server.port, raw: "POST /v1/rooms HTTP/1.1\r\nHost: x\r\n\(lengths)\r\n{\"roomId\":\"a\"}"))
        #expect(response.status == 400)
        #expect(response.text.contains("Content-Length"))
        #expect(response.headers["connection"] == "close")
        #expect(delegate.record.withLock { $0.requests.isEmpty })
        let next = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health"))
        #expect(next.status == 200)
    }

    /// The server does not decode transfer codings. RFC 9112 §6.1: an unknown coding is answered 501;
    /// chunked is known but refused with 411 (RFC 9110 §15.5.12: the client may repeat the request with
    /// a Content-Length). Transfer-Encoding overrides Content-Length (§6.3), so it decides when both come.
    @Test("Transfer-Encoding: chunked is 411, another coding 501; the connection closes, the delegate never sees it",
          arguments: [("chunked", "", 411), ("Chunked", "", 411), ("gzip, chunked", "", 411),
                      ("chunked", "Content-Length: 16\r\n", 411), ("gzip", "", 501), ("identity", "", 501)])
    func transferEncoding(coding: String, extra: String, status: Int) throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(
            port: server.port,
            raw: "POST /v1/rooms HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: \(coding)\r\n\(extra)\r\n"
                + "10\r\n{\"roomId\":\"abc\"}\r\n0\r\n\r\n"))
        #expect(response.status == status)
        #expect(response.text.contains("Transfer-Encoding"))
        #expect(response.headers["connection"] == "close")
        #expect(delegate.record.withLock { $0.requests.isEmpty })
    }

    /// Without Content-Length or Transfer-Encoding a request has no body (RFC 9112 §6.3), but lws expects
    /// one for POST, PUT and PATCH and would take what follows as that body: the request is answered,
    /// then the connection closed, so that nothing after it is swallowed.
    @Test("POST without Content-Length: an empty body, then the connection closes")
    func postWithoutLength() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let response = try #require(RawHTTPResponse.exchange(
            port: server.port, raw: "POST /v1/rooms HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"))
        #expect(response.status == 201)
        #expect(response.headers["connection"] == "close")
        #expect(response.body.isEmpty)
        #expect(delegate.record.withLock { $0.requests.map(\.method) } == ["POST"])
        #expect(delegate.record.withLock { $0.requests.first?.body } == [])
    }

    @Test("A body cut short by the client is never dispatched")
    func truncatedBody() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let socket = try #require(RawSocket(host: "127.0.0.1", port: server.port))
        socket.write("POST /v1/rooms HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"roomId\":")
        #expect(Waiting.until { server.connectionCount == 1 })
        socket.shutdownWrite()
        #expect(socket.readToEnd(timeout: 10).isEmpty)
        #expect(Waiting.until { server.connectionCount == 0 })
        #expect(delegate.record.withLock { $0.requests.isEmpty })
    }

    @Test("RequestFraming alone", arguments: [
        ("GET", nil, nil, RequestFraming.body(bytes: 0, closeAfter: false)),
        ("DELETE", nil, nil, .body(bytes: 0, closeAfter: false)),
        ("POST", nil, nil, .body(bytes: 0, closeAfter: true)),
        ("PUT", nil, nil, .body(bytes: 0, closeAfter: true)),
        ("POST", nil, "0", .body(bytes: 0, closeAfter: false)),
        ("POST", nil, " 0012\t", .body(bytes: 12, closeAfter: false)),
        ("POST", nil, "1000", .body(bytes: 1000, closeAfter: false)),
        ("POST", nil, "1001", .refused(status: 413, reason: "request body over 1000 bytes\n")),
        ("POST", nil, "999999999999999999", .refused(status: 413, reason: "request body over 1000 bytes\n")),
        ("POST", nil, "9999999999999999999", .refused(status: 400, reason: "invalid Content-Length: one decimal number of bytes (1 to 18 digits) is required\n")),
        ("POST", nil, "5, 5", .refused(status: 400, reason: "invalid Content-Length: the header is repeated\n")),
        ("POST", "chunked", "5", .refused(status: 411, reason: "Transfer-Encoding chunked is not supported: send the body with Content-Length\n")),
        ("GET", "br", nil, .refused(status: 501, reason: "Transfer-Encoding other than chunked is not implemented: send the body with Content-Length\n")),
    ] as [(String, String?, String?, RequestFraming)])
    func framing(method: String, transferEncoding: String?, contentLength: String?, expected: RequestFraming) {
        #expect(RequestFraming(method: method, transferEncoding: transferEncoding, contentLength: contentLength,
                               maximumBodyBytes: 1000) == expected)
    }

    @Test("HEAD: the headers of the GET answer, no body; the connection serves the next request")
    func head() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let socket = try #require(RawSocket(host: "127.0.0.1", port: server.port))
        socket.write("HEAD /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        var bytes: [UInt8] = []
        #expect(Waiting.until { bytes += socket.read(timeout: 0.1); return String(decoding: bytes, as: UTF8.self).hasSuffix("\r\n\r\n") })
        let head = try #require(RawHTTPResponse.parse(bytes))
        #expect(head.status == 200)
        #expect(head.headers["content-length"] == "15")
        #expect(head.body.isEmpty)
        socket.write("GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let next = try #require(RawHTTPResponse.parse(socket.readToEnd(timeout: 10)))
        #expect(next.status == 200)
        #expect(next.text == #"{"status":"ok"}"#)
        #expect(delegate.record.withLock { $0.requests.map(\.method) } == ["HEAD", "GET"])
    }

    @Test("Keep-alive: two requests on one connection")
    func keepAlive() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let socket = try #require(RawSocket(host: "127.0.0.1", port: server.port))
        socket.write("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        var bytes: [UInt8] = []
        #expect(Waiting.until { bytes += socket.read(timeout: 0.1); return String(decoding: bytes, as: UTF8.self).hasSuffix("}") })
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
        #expect(Waiting.until { server.connectionCount == 0 })
    }
}

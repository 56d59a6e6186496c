@testable import CallTransport
import Foundation
import Testing
import TestSupport

/// The outgoing HTTP client against the project's own server: plain and TLS, statuses, bodies, failures.
@Suite("HTTP client")
struct HTTPClientTests {
    @Test("POST: the server gets method, path, headers and body; the client gets status, headers and body")
    func post() throws {
        let (server, delegate) = try RecordingDelegate.serve(customHeaders: ["X-Signature"])
        defer { delegate.finish() }
        let body = Array(#"{"roomId":"standup"}"#.utf8)
        let answer = try HTTPClient(timeout: 10).send(
            "POST", "http://127.0.0.1:\(server.port)/v1/rooms?x=1", headers: [("Content-Type", "application/json"), ("X-Signature", "abc"), ("X-Unasked", "1")],
            body: body)
        #expect(answer.status == 201)
        #expect(answer.bodyText == #"{"roomId":"standup"}"#)
        #expect(answer.headers["x-request-bytes"] == "\(body.count)")
        let request = try #require(delegate.record.withLock { $0.requests.first })
        #expect(request.method == "POST" && request.path == "/v1/rooms" && request.query == ["x": "1"])
        #expect(request.headers["x-signature"] == "abc")
        #expect(request.headers["x-unasked"] == nil)
        #expect(request.body == body)
    }

    @Test("A 404's body, a 204 without one, and a 200 KB answer are read whole")
    func statusesAndBodies() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let client = HTTPClient(timeout: 10)
        let base = "http://127.0.0.1:\(server.port)"
        let missing = try client.send("GET", base + "/nowhere")
        #expect(missing.status == 404 && missing.bodyText?.contains("4003") == true)
        let deleted = try client.send("DELETE", base + "/v1/rooms/a")
        #expect(deleted.status == 204 && deleted.body.isEmpty)
        let big = try client.send("GET", base + "/big")
        #expect(big.status == 200 && big.body.count == 200_000)
        #expect(throws: TransportError.self) { _ = try HTTPClient(timeout: 10, maximumAnswerBytes: 10_000).send("GET", base + "/big") }
    }

    @Test("Chunked answers are put together; a close mid-body is an error, never a short body")
    func chunkedAndTruncated() throws {
        var reader = AnswerReader(limit: 1 << 20)
        try reader.take(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n".utf8))
        #expect(!reader.isComplete)
        try reader.take(Array("6;ext=1\r\n world\r\n0\r\n\r\n".utf8))
        #expect(reader.answer?.bodyText == "hello world")
        var short = AnswerReader(limit: 1 << 20)
        try short.take(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello".utf8))
        #expect(throws: AnswerReader.Malformed.self) { try short.take([]) }
        var toClose = AnswerReader(limit: 1 << 20)
        try toClose.take(Array("HTTP/1.0 200 OK\r\n\r\nall of it".utf8))
        #expect(toClose.answer == nil)
        try toClose.take([])
        #expect(toClose.answer?.bodyText == "all of it")
        var garbage = AnswerReader(limit: 1 << 20)
        #expect(throws: AnswerReader.Malformed.self) { try garbage.take(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8)) }
    }

    @Test("Refused, unresolvable, malformed URLs and a silent server fail with what failed")
    func failures() throws {
        let client = HTTPClient(timeout: 2)
        let refused = #expect(throws: TransportError.self) { _ = try client.send("GET", "http://127.0.0.1:9/") }
        #expect(refused?.operation == .connect)
        let parse = #expect(throws: TransportError.self) { _ = try client.send("GET", "ftp://example.org/") }
        #expect(parse?.operation == .parse)
        // A listener that accepts and never answers: the deadline ends the exchange.
        let silent = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(silent) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(silent, $0, length) } }
        listen(silent, 4)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(silent, $0, &length) } }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let timedOut = #expect(throws: TransportError.self) { _ = try HTTPClient(timeout: 0.5).send("GET", "http://127.0.0.1:\(port)/") }
        #expect(timedOut?.operation == .exchange)
        #expect(timedOut?.message.contains("deadline") == true)
    }

    @Test(
        "https: verified against the test CA by IP address and by name; refused without it",
        .enabled(if: TestCertificateAuthority.isAvailable, "no openssl on PATH; tools/install-deps.sh installs it"),
        arguments: ["127.0.0.1", "localhost"])
    func https(host: String) throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, delegate) = try TLSTests.serve(try authority.issue())
        defer { delegate.finish() }
        let url = "https://\(host):\(server.port)/v1/rooms"
        let answer = try HTTPClient(timeout: 10, certificateAuthorityFile: authority.certificate).send("POST", url, body: Array("over TLS".utf8))
        #expect(answer.status == 201 && answer.bodyText == "over TLS")
        let untrusted = #expect(throws: TransportError.self) { _ = try HTTPClient(timeout: 10).send("POST", url) }
        #expect(untrusted?.operation == .connect)
        #expect(untrusted?.message.contains("certificate") == true)
        let wrongName = try authority.issue("other", subjectAltNames: ["DNS:other.example"])
        let (otherServer, otherDelegate) = try TLSTests.serve(wrongName)
        defer { otherDelegate.finish() }
        let mismatch = #expect(throws: TransportError.self) {
            _ = try HTTPClient(timeout: 10, certificateAuthorityFile: authority.certificate).send("GET", "https://\(host):\(otherServer.port)/")
        }
        #expect(mismatch?.message.contains("certificate") == true)
    }
}

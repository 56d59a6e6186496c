@testable import CallTransport
import Foundation
import Synchronization
import Testing
import TestSupport

/// https and wss: a server with a certificate made at test time by a test CA (`openssl`), and clients
/// that verify it.
@Suite("TLS: wss and https", .enabled(if: TestCertificateAuthority.isAvailable, "no openssl on PATH; tools/install-deps.sh installs it"))
struct TLSTests {
    /// A TLS echo server on 127.0.0.1 with `certificate`, wired to a recording delegate.
    static func serve(_ certificate: TestCertificateAuthority.Server) throws -> (WebServer, RecordingDelegate) {
        let delegate = RecordingDelegate()
        let server = try WebServer(host: "127.0.0.1", webSocketPaths: ["/v1/signal"],
                                   tls: TLSIdentity(certificateChainPath: certificate.certificate, privateKeyPath: certificate.privateKey),
                                   delegate: delegate)
        delegate.server.withLock { $0 = server }
        server.start()
        return (server, delegate)
    }

    /// Connects a client trusting `authority` and checks that one message comes back: proof that the
    /// server was serving when a refused client tried.
    static func echoes(port: Int, authority: TestCertificateAuthority) throws -> Bool {
        let client = try WebSocketClient(url: "wss://127.0.0.1:\(port)/v1/signal", certificateAuthorityFile: authority.certificate)
        defer { client.close() }
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        client.send("still serving")
        return Waiting.until { recorder.messages == ["still serving"] }
    }

    @Test("wss echo with the test CA, by IP address and by name", arguments: ["127.0.0.1", "localhost"])
    func echo(host: String) throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, delegate) = try Self.serve(try authority.issue())
        defer { delegate.finish() }
        #expect(server.tls != nil)
        let client = try WebSocketClient(url: "wss://\(host):\(server.port)/v1/signal?room=standup",
                                         certificateAuthorityFile: authority.certificate)
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        client.send("héllo over TLS")
        client.send(String(repeating: "x", count: 60_000))
        #expect(Waiting.until { recorder.messages.count == 2 })
        #expect(recorder.messages.first == "héllo over TLS")
        #expect(recorder.messages.last?.count == 60_000)
        let opened = try #require(delegate.opened.first)
        #expect(opened.path == "/v1/signal" && opened.query == ["room": "standup"])
        #expect(opened.peer.port == client.localAddress?.port)
        client.close()
        #expect(Waiting.until { delegate.closed == [opened.connection] })
        #expect(recorder.closed?.code == 1000)
    }

    @Test("Without the test CA (the system's CAs only) the certificate is refused and nothing opens")
    func untrustedCertificate() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, delegate) = try Self.serve(try authority.issue())
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "wss://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        let error = #expect(throws: TransportError.self) { try client.connect(timeout: 10) }
        #expect(error?.operation == .connect)
        #expect(error?.message == "certificate verify failed: unable to get local issuer certificate", "\(String(describing: error))")
        #expect(recorder.closed == nil)
        client.close()
        // Another CA's file is no better.
        let other = try TestCertificateAuthority(name: "Another test CA")
        defer { other.remove() }
        let stranger = try WebSocketClient(url: "wss://127.0.0.1:\(server.port)/v1/signal", certificateAuthorityFile: other.certificate)
        let refused = #expect(throws: TransportError.self) { try stranger.connect(timeout: 10) }
        #expect(refused?.message.hasPrefix("certificate verify failed: ") == true, "\(String(describing: refused))")
        stranger.close()
        // A client that trusts the CA gets through; only its connection ever opened.
        #expect(try Self.echoes(port: server.port, authority: authority))
        #expect(delegate.opened.count == 1)
    }

    @Test("A certificate for another host is refused (IP address and host name checks)",
          arguments: [("127.0.0.1", "IP address mismatch"), ("localhost", "hostname mismatch")])
    func otherHost(host: String, reason: String) throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, delegate) = try Self.serve(try authority.issue("other", subjectAltNames: ["DNS:other.example", "IP:192.0.2.1"]))
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "wss://\(host):\(server.port)/v1/signal", certificateAuthorityFile: authority.certificate)
        let error = #expect(throws: TransportError.self) { try client.connect(timeout: 10) }
        #expect(error?.message == "certificate verify failed: \(reason)", "\(String(describing: error))")
        client.close()
        // The same server with a certificate for this host is accepted (so the mismatch was the reason).
        let (good, goodDelegate) = try Self.serve(try authority.issue())
        defer { goodDelegate.finish() }
        #expect(try Self.echoes(port: good.port, authority: authority))
        #expect(delegate.opened.isEmpty)
    }

    @Test("Plain ws and HTTP on the TLS port fail; wss to a plain server fails")
    func plainAndTLSDoNotMix() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, delegate) = try Self.serve(try authority.issue())
        defer { delegate.finish() }
        let plain = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let error = #expect(throws: TransportError.self) { try plain.connect(timeout: 10) }
        #expect(error?.operation == .connect, "\(String(describing: error))")
        plain.close()
        // A plain HTTP request gets no HTTP answer (no redirect either): the connection just ends.
        let raw = try #require(RawSocket(host: "127.0.0.1", port: server.port))
        raw.write("GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let answer = raw.readToEnd(timeout: 10)
        #expect(!String(decoding: answer, as: UTF8.self).contains("HTTP/1.1"), "\(answer.count) bytes")
        #expect(raw.peerClosed)
        #expect(try Self.echoes(port: server.port, authority: authority))
        #expect(delegate.opened.count == 1 && delegate.record.withLock { $0.requests.isEmpty })

        let (plainServer, plainDelegate) = try RecordingDelegate.serve()
        defer { plainDelegate.finish() }
        let secure = try WebSocketClient(url: "wss://127.0.0.1:\(plainServer.port)/v1/signal", certificateAuthorityFile: authority.certificate)
        #expect(throws: TransportError.self) { try secure.connect(timeout: 10) }
        secure.close()
        #expect(plainDelegate.opened.isEmpty)
    }

    @Test("wss connects succeed while other TLS servers and clients are being created (TLSContextGate)")
    func concurrentContexts() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let certificate = try authority.issue()
        let (server, delegate) = try Self.serve(certificate)
        defer { delegate.finish() }
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for _ in 0..<4 {
                do {
                    if worker == 0 {
                        // Each new TLS server makes libwebsockets take a new OpenSSL ex-data index.
                        let (_, otherDelegate) = try Self.serve(certificate)
                        otherDelegate.finish()
                    } else {
                        let client = try WebSocketClient(url: "wss://127.0.0.1:\(server.port)/v1/signal",
                                                         certificateAuthorityFile: authority.certificate)
                        try client.connect(timeout: 10)
                        client.close()
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
        #expect(Waiting.until { delegate.opened.count == 28 })
    }

    @Test("A server's unusable certificate or key is a listen error naming the file")
    func serverFiles() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let good = try authority.issue()
        let other = try authority.issue("other")
        let cases: [(TLSIdentity, String)] = [
            (TLSIdentity(certificateChainPath: authority.directory + "/missing.pem", privateKeyPath: good.privateKey),
             "TLS certificate chain \(authority.directory)/missing.pem: cannot read (No such file or directory)"),
            (TLSIdentity(certificateChainPath: good.certificate, privateKeyPath: authority.directory + "/missing.key"),
             "TLS private key \(authority.directory)/missing.key: cannot read"),
            (TLSIdentity(certificateChainPath: good.privateKey, privateKeyPath: good.privateKey),
             "TLS certificate chain \(good.privateKey): expected a PEM certificate"),
            (TLSIdentity(certificateChainPath: good.certificate, privateKeyPath: good.certificate),
             "TLS private key \(good.certificate): expected a PEM private key"),
        ]
        for (identity, message) in cases {
            let error = #expect(throws: TransportError.self) { _ = try WebServer(tls: identity, delegate: RecordingDelegate()) }
            #expect(error?.operation == .listen)
            #expect(error?.message.hasPrefix(message) == true, "\(String(describing: error))")
        }
        // A key that is not the certificate's: OpenSSL refuses the pair when lws loads it.
        let mismatch = #expect(throws: TransportError.self) {
            _ = try WebServer(tls: TLSIdentity(certificateChainPath: good.certificate, privateKeyPath: other.privateKey), delegate: RecordingDelegate())
        }
        #expect(mismatch?.operation == .listen, "\(String(describing: mismatch))")
        // OpenSSL's reason comes through libwebsockets' log, kept per thread: other tests' servers
        // starting at the same moment cannot put their lines in this error.
        let reason = mismatch?.message ?? ""
        #expect(reason.contains("key values mismatch"), "\(reason)")
    }

    @Test("A client's unreadable CA file is named; wss URLs")
    func clientFilesAndURLs() throws {
        let missing = #expect(throws: TransportError.self) {
            _ = try WebSocketClient(url: "wss://localhost:1/", certificateAuthorityFile: "/no/such/ca.pem")
        }
        #expect(missing?.operation == .parse)
        #expect(missing?.message == "certificate authority file /no/such/ca.pem: cannot read (No such file or directory)")
        // Not used (nor read) for ws://.
        _ = try WebSocketClient(url: "ws://localhost:1/", certificateAuthorityFile: "/no/such/ca.pem")
        let parsed = try EndpointURL("WSS://example.org/v1/signal")
        #expect(parsed.secure && parsed.port == 443 && parsed.host == "example.org" && parsed.pathAndQuery == "/v1/signal")
        #expect(try !EndpointURL("ws://example.org").secure)
        let ipv6 = #expect(throws: TransportError.self) { _ = try EndpointURL("wss://[::1]:8443/") }
        #expect(ipv6?.message.contains("IPv6") == true)
    }
}

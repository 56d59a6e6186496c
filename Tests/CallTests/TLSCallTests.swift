import CallClient
import CallProtocol
import CallServer
import CallTransport
import Foundation
import Synchronization
import Testing
import TestSupport

/// The room server over https and wss, with a certificate from a test CA made by `openssl`.
@Suite("Room server over TLS", .realTime, .enabled(if: TestCertificateAuthority.isAvailable, "no openssl on PATH; tools/install-deps.sh installs it"))
struct TLSCallTests {
    /// The server's log lines.
    final class LogLines: Sendable {
        let lines = Mutex<[String]>([])
        var listening: String? { lines.withLock { $0.first { $0.contains(#""type":"listening""#) } } }
    }

    /// A TLS room server with the one room `room`, and its log lines; the caller stops it.
    static func server(_ authority: TestCertificateAuthority) throws -> (RoomServer, LogLines) {
        let certificate = try authority.issue()
        var configuration = RoomServerConfiguration()
        configuration.secret = CallTestServer.secret
        configuration.rooms = ["room"]
        configuration.tls = ServerCertificate(certificateChainPath: certificate.certificate, privateKeyPath: certificate.privateKey)
        let log = LogLines()
        let server = try RoomServer(configuration: configuration) { line in log.lines.withLock { $0.append(line) } }
        server.start()
        server.flushLog()  // the `listening` line written
        return (server, log)
    }

    static func meeting(_ url: String, _ participant: String, authority: TestCertificateAuthority?) -> Meeting {
        var configuration = MeetingConfiguration(server: url, roomId: "room", token: CallTestServer.token(participant))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.certificateAuthorityFile = authority?.certificate
        configuration.microphone = .none
        configuration.micEnabled = false
        return Meeting(configuration: configuration)
    }

    final class Messages: MeetingEventListener {
        let received = Mutex<[String]>([])
        func onMessage(from participantId: String, body: MessageBody) {
            if case .text(let text) = body { received.withLock { $0.append("\(participantId): \(text)") } }
        }
    }

    @Test func meetingsJoinAndTalkOverWSS() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, log) = try Self.server(authority)
        defer { server.stop() }
        let listening = try #require(log.listening)
        #expect(listening.contains(#","tls":true,"#), "\(listening)")
        let alice = Self.meeting("wss://localhost:\(server.port)", "alice", authority: authority)
        let bob = Self.meeting("wss://127.0.0.1:\(server.port)/", "bob", authority: authority)
        let messages = Messages()
        bob.addEventListener(messages)
        try await alice.join()
        try await bob.join()
        #expect(await Waiting.until { alice.participants.map(\.id) == ["alice", "bob"] }, "\(alice.participants)")
        alice.send(.text("hello over wss"), to: "bob")
        #expect(await Waiting.until { messages.received.withLock { $0 } == ["alice: hello over wss"] })
        alice.leave()
        bob.leave()
    }

    @Test func aMeetingWithoutTheCAIsRefused() async throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, _) = try Self.server(authority)
        defer { server.stop() }
        for url in ["wss://127.0.0.1:\(server.port)", "ws://127.0.0.1:\(server.port)"] {
            do {
                try await Self.meeting(url, "mallory", authority: nil).join()
                Issue.record("joined \(url) without trusting its certificate")
            } catch {
                #expect(error.joinFailure == .network, "\(error)")
                if url.hasPrefix("wss") { #expect(error.message.contains("certificate verify failed: unable to get local issuer certificate"), "\(error)") }
            }
        }
        do {
            var configuration = MeetingConfiguration(server: "wss://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token("x"))
            configuration.speaker = .none  // no sound card on the test machines
            configuration.certificateAuthorityFile = authority.directory + "/none.pem"
            configuration.microphone = .none
            try await Meeting(configuration: configuration).join()
            Issue.record("joined with a missing CA file")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains("none.pem"), "\(error)")
        }
        // The server was serving all along: with the CA a meeting joins, and it is the only participant.
        let trusting = Self.meeting("wss://127.0.0.1:\(server.port)", "alice", authority: authority)
        try await trusting.join()
        #expect(trusting.participants.map(\.id) == ["alice"])
        trusting.leave()
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/curl"), "no /usr/bin/curl; tools/install-deps.sh installs it"))
    func healthOverHTTPSWithCurl() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let (server, _) = try Self.server(authority)
        defer { server.stop() }
        let url = "https://localhost:\(server.port)/v1/health"
        let trusted = try Self.curl(["--cacert", authority.certificate, "-w", "\\n%{http_code} %{http_version}", url])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout == #"{"participants":0,"rooms":1,"status":"ok"}"# + "\n200 1.1", "\(trusted.stdout)")
        // Without the CA curl's own check refuses (60: peer certificate cannot be authenticated); plain
        // http gets no answer (56: connection reset, or 52: empty reply).
        #expect(try Self.curl([url]).status == 60)
        let plain = try Self.curl(["http://127.0.0.1:\(server.port)/v1/health"])
        #expect([52, 56].contains(plain.status) && plain.stdout.isEmpty, "\(plain)")
    }

    /// Runs curl quietly, at most 10 s.
    static func curl(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-sS", "--max-time", "10"] + arguments
        let out = Pipe(), err = Pipe()
        curl.standardOutput = out
        curl.standardError = err
        try curl.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        return (curl.terminationStatus, String(decoding: stdout, as: UTF8.self), String(decoding: stderr, as: UTF8.self))
    }
}

import Foundation
import Testing
import TestSupport

/// `serve --tls-cert/--tls-key` and `join --ca` as a user runs them, with a test CA made by `openssl`.
@Suite("activespeaker serve/join over TLS", .realTime, .enabled(if: TestCertificateAuthority.isAvailable, "no openssl on PATH; tools/install-deps.sh installs it"))
struct TLSCLITests {
    @Test func serveAndJoinOverTLS() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let certificate = try authority.issue()
        let (server, http, _) = try CallCLITests.serve(["--tls-cert", certificate.certificate, "--tls-key", certificate.privateKey])
        let listening = try #require(server.stdout.split(separator: "\n").first { $0.contains(#""listening""#) })
        #expect(listening.contains(#","tls":true,"#), "\(listening)")

        let joined = try CLI.run([
            "join", "--server", "wss://localhost:\(http)", "--ca", authority.certificate, "--room", "demo",
            "--token", try CallCLITests.token("alice"), "--mic", "none", "--duration", "0.5",
        ])
        #expect(joined.status == 0, "\(joined.stderr)")
        let events = CallCLITests.events(joined.stdout)
        #expect(events.contains { $0["type"] as? String == "joined" } && events.last?["type"] as? String == "left", "\(joined.stdout)")

        let refused = try CLI.run([
            "join", "--server", "wss://127.0.0.1:\(http)", "--room", "demo", "--token", try CallCLITests.token("bob"), "--mic", "none",
        ])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("certificate verify failed: unable to get local issuer certificate"), "\(refused.stderr)")

        if LiveRunner.has("curl") {
            let status = try LiveRunner.httpStatus(["--cacert", authority.certificate, "https://localhost:\(http)/v1/health"])
            #expect(status == "200")
        } else {
            print("TLSCLITests: no curl on PATH, https health check not run (tools/install-deps.sh installs it)")
        }
        server.interrupt()
        let served = try server.finish(timeout: 10)
        #expect(served.status == 0, "\(served.stderr)")
        // alice joined and left; bob never got as far as the server's signalling.
        #expect(served.stdout.contains(#""participant":"alice""#) && !served.stdout.contains(#""participant":"bob""#), "\(served.stdout)")
    }

    @Test func tlsOptionsAreCheckedBeforeServing() throws {
        let authority = try TestCertificateAuthority()
        defer { authority.remove() }
        let certificate = try authority.issue()
        let serve = ["serve", "--listen", "127.0.0.1:0", "--secret", CallCLITests.secret, "--duration", "5"]
        let halfPair = try CLI.run(serve + ["--tls-cert", certificate.certificate])
        #expect(halfPair.status == 64 && halfPair.stderr.contains("--tls-cert and --tls-key go together"), "\(halfPair.stderr)")
        let missingKey = authority.directory + "/missing.key"
        let unreadable = try CLI.run(serve + ["--tls-cert", certificate.certificate, "--tls-key", missingKey])
        #expect(unreadable.status == 1 && unreadable.stderr.contains("TLS private key \(missingKey): cannot read"), "\(unreadable.stderr)")
        #expect(unreadable.stdout.isEmpty)
        let plainWithCA = try CLI.run(["join", "--server", "ws://127.0.0.1:1", "--ca", authority.certificate, "--room", "demo", "--token", "t"])
        #expect(plainWithCA.status == 64 && plainWithCA.stderr.contains("--ca is for a wss:// server"), "\(plainWithCA.stderr)")
        let https = try CLI.run(["join", "--server", "https://127.0.0.1:1", "--room", "demo", "--token", "t"])
        #expect(https.status == 64 && https.stderr.contains("expected ws://HOST:PORT or wss://HOST:PORT"), "\(https.stderr)")
    }
}

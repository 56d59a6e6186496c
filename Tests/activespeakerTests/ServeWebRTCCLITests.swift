import Foundation
import Testing
import TestSupport

/// `serve --ice-host` and `--stun`, and the README's three commands: `serve`, `token`, a browser on the
/// meeting page that joins (headless Chromium, its fake microphone playing alice's recording).
@Suite(.serialized)
struct ServeWebRTCCLITests {
    @Test(arguments: [
        ["--ice-host", "localhost"], ["--ice-host", "999.1.2.3"], ["--ice-host", "0.0.0.0"], ["--stun", "127.0.0.1:3478"], ["--stun", "stun://host"],
        ["--stun", "stun://:3478"], ["--stun", "stun://host:0"],
    ])
    func badWebRTCOptionsAreUsageErrors(arguments: [String]) throws {
        let result = try CLI.run(["serve", "--listen", "127.0.0.1:0", "--secret", CallCLITests.secret] + arguments)
        #expect(result.status == 64 && result.stderr.contains(arguments[0]), "\(result.stderr)")
    }

    @Test(.enabled(if: LiveRunner.runsEverything || (HeadlessChromium.executable != nil && LiveRunner.has("sox")), "needs chromium and sox"))
    func theReadmesThreeCommandsPutABrowserInTheCall() throws {
        try #require(HeadlessChromium.executable != nil, "no chromium on PATH: bash tools/install-deps.sh")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let wav = directory.path("alice.wav")
        try HeadlessChromium.writeMicrophoneFile(from: FixturePaths.file("meetings/m1-clean/alice.flac"), to: wav)
        let (server, http, _) = try CallCLITests.serve(["--ice-host", "127.0.0.1", "--stun", "stun://127.0.0.1:3478"])
        defer {
            server.interrupt()
            _ = try? server.finish(timeout: 20)
        }
        let token = try CallCLITests.token("alice")
        let browser = try HeadlessChromium(extraArguments: [
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", "--use-file-for-fake-audio-capture=\(wav)",
            "--autoplay-policy=no-user-gesture-required", "--disable-features=WebRtcHideLocalIpsWithMdns",
        ])
        defer { browser.close() }
        let session = try browser.open("http://127.0.0.1:\(http)/rooms/demo?token=\(token)")
        try #require(Waiting.until { (try? browser.evaluate("String(!!window.meeting)", session: session)) == "true" }, "the page did not load")
        _ = try browser.evaluate("document.getElementById('join').click(); 'clicked'", session: session)
        #expect(server.waitForOutput(#""type":"webrtc","room":"demo","participant":"alice","event":"connected""#, timeout: 30), "\(server.stdout)")
        // Alice speaks 11.4 s into her recording, which the browser loops.
        #expect(server.waitForOutput(#""type":"speaker-changed","room":"demo","participant":"alice""#, timeout: 60), "\(server.stdout)")
    }
}

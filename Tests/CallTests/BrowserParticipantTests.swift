import CallProtocol
import CallServer
import Foundation
import Synchronization
import Testing
import TestSupport

/// Real headless Chromium browsers take part in a call through the meeting page (`/rooms/room`): each
/// one's fake microphone plays one participant of Fixtures' meeting m1-clean, it joins over WebRTC, the
/// server's engine names it as the speaker, it hears the others, its mute stops its packets at the
/// server, and a moderator's removal closes its peer connection.
@Suite(.serialized, .realTime, .enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"))
struct BrowserParticipantTests {

    /// The server's log lines, kept.
    final class Log: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        /// The participants the server logged as leaving (`participant-left`), in order.
        var left: [String] { values(of: "participant-left") }
        /// The participants the server named in `speaker-changed` so far.
        var speakers: Set<String> {
            lines.withLock { lines in
                Set(lines.compactMap { line -> String? in
                    guard line.contains(#""type":"speaker-changed""#),
                        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    else { return nil }
                    return object["participant"] as? String
                })
            }
        }
        /// The `participant` of each logged line of `type`, in order.
        func values(of type: String) -> [String] {
            lines.withLock { lines in
                lines.compactMap { line -> String? in
                    guard line.contains("\"type\":\"\(type)\""),
                        let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                    else { return nil }
                    return object["participant"] as? String
                }
            }
        }
    }

    /// `name`'s recording as 48 kHz 16-bit mono WAV (sox), what Chromium's fake microphone plays (in a loop).
    static func wav(_ name: String, in profile: BrowserProfile) throws -> String {
        let output = profile.path("\(name).wav")
        try HeadlessChromium.writeMicrophoneFile(from: FixturePaths.file("meetings/m1-clean/\(name).flac"), to: output)
        return output
    }

    /// A browser whose microphone plays `wav`.
    static func browser(microphone wav: String) throws -> HeadlessChromium {
        try HeadlessChromium(width: 760, height: 360, extraArguments: [
            "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", "--use-file-for-fake-audio-capture=\(wav)",
            "--autoplay-policy=no-user-gesture-required", "--disable-features=WebRtcHideLocalIpsWithMdns",
        ])
    }

    /// A page of the call in a browser.
    struct Page {
        let name: String
        let browser: HeadlessChromium
        let session: String

        func evaluate(_ expression: String) throws -> String { try browser.evaluate(expression, session: session) }

        /// Polls `expression` until it gives `value` (page errors count as not yet).
        func until(_ expression: String, is value: String, timeout: Double = Waiting.defaultTimeout) -> Bool {
            Waiting.until(timeout: timeout) { (try? evaluate(expression)) == value }
        }

        /// Audio packets the page's peer connection received (`getStats`, inbound-rtp).
        func packetsReceived() throws -> Int {
            Int(try evaluate("""
                (async () => { let n = 0; if (!window.meeting || !meeting.pc) return 0;
                  (await meeting.pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "audio") n += r.packetsReceived; });
                  return n; })()
                """)) ?? -1
        }
    }

    static func open(_ name: String, in browser: HeadlessChromium, server: RoomServer, role: Role = .publisher, room: String = "room") throws -> Page {
        let url = "http://127.0.0.1:\(server.port)/rooms/\(room)?token=\(CallTestServer.token(name, role: role, room: room))"
        let page = Page(name: name, browser: browser, session: try browser.open(url))
        try #require(page.until("String(!!document.getElementById('join') && !!window.meeting)", is: "true"), "\(name): the page did not load")
        return page
    }

    static func click(_ page: Page, _ button: String) throws {
        _ = try page.evaluate("document.getElementById('\(button)').click(); 'clicked'")
    }

    /// Mutes or unmutes `page`'s microphone with its Mute button, and waits until the page says so (unmuting
    /// waits for the server's answer).
    static func setMuted(_ page: Page, _ muted: Bool) throws {
        if try page.evaluate("String(meeting.muted)") != String(muted) { try click(page, "mute") }
        try #require(page.until("String(meeting.muted)", is: String(muted), timeout: 20), "\(page.name): muted is not \(muted)")
    }

    @Test(
        "Three browsers join through the meeting page, are named as speakers, hear each other, mute, and one is removed",
        .enabled(if: HeadlessChromium.executable != nil && HeadlessChromium.sox != nil, "needs chromium and sox: bash tools/install-deps.sh"))
    func threeBrowsersInACall() throws {
        let log = Log()
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let recordings = profile.path("recordings")
        let server = try CallTestServer.server(recordingDirectory: recordings, iceHost: "127.0.0.1") { log.append($0) }
        defer { server.stop() }
        let names = ["bob", "alice", "carol"]
        var browsers: [HeadlessChromium] = []
        defer { browsers.forEach { $0.close() } }
        for name in names { browsers.append(try Self.browser(microphone: try Self.wav(name, in: profile))) }

        // The first joins alone: from the page's navigation to its first packet accepted at the server.
        let started = Date()
        var pages = [try Self.open(names[0], in: browsers[0], server: server)]
        try Self.click(pages[0], "join")
        try #require(Waiting.until(timeout: 30) { server.mediaStatistics.accepted > 0 }, "no audio from \(names[0]): \(log.lines.withLock { $0 })")
        let joinSeconds = Date().timeIntervalSince(started)
        print("measured: page load to first packet at the server \(String(format: "%.2f", joinSeconds)) s")

        for (index, name) in names.enumerated().dropFirst() {
            let page = try Self.open(name, in: browsers[index], server: server)
            try Self.click(page, "join")
            pages.append(page)
        }
        for page in pages {
            try #require(page.until("meeting.state", is: "connected", timeout: 30), "\(page.name) did not connect: \((try? page.evaluate("document.getElementById('call-status').textContent")) ?? "")")
        }
        #expect(server.webRTCSessionCount == 3)
        // The microphone picker lists the browser's (fake) devices once the page may use them.
        #expect(pages[0].until("String(document.getElementById('mic').options.length > 0)", is: "true"))

        // The engine names each of them, one at a time with the other two muted: each browser loops its own
        // recording from its own join time, so with all three open their turns overlap at random and one of
        // them can be kept from the floor for minutes (seen once on a loaded machine: bob never named in 90 s).
        // Alone, one is named within seconds; on a loaded 2-core machine running the suite in parallel, bob's
        // first turn alone once took longer than 60 s (2026-12-06: "speakers named []"), hence the margin.
        for page in pages {
            let others = pages.filter { $0.name != page.name }
            for other in others { try Self.setMuted(other, true) }
            #expect(Waiting.until(timeout: 150) { log.speakers.contains(page.name) }, "\(page.name) was never named alone: speakers named \(log.speakers)")
            for other in others { try Self.setMuted(other, false) }
        }

        // Each hears the others: Opus packets arrive at its peer connection.
        for page in pages {
            #expect(Waiting.until(timeout: 20) { ((try? page.packetsReceived()) ?? 0) >= 100 }, "\(page.name) received \((try? page.packetsReceived()) ?? -1) packets")
        }
        // The page shows the server's speaker: a highlighted tile, or "nobody".
        let shown = try pages[0].evaluate("document.getElementById('speaker-name').textContent")
        #expect(shown == "nobody" || names.contains(shown), "\(shown)")
        #expect(try pages[0].evaluate("String(document.querySelectorAll('.tile').length)") == "3")
        if let path = ProcessInfo.processInfo.environment["ACTIVESPEAKER_SCREENSHOT"],
            pages[0].until("String(!!document.querySelector('.tile.speaking'))", is: "true", timeout: 20)
        {
            try pages[0].browser.screenshot(session: pages[0].session).write(to: URL(fileURLWithPath: path))
        }

        // A subscriber's page joins listen-only (no microphone, no Mute) and hears the room too.
        let viewer = try Self.open("viewer", in: browsers[0], server: server, role: .subscriber)
        #expect(try viewer.evaluate("document.getElementById('join').textContent") == "Join (listen only)")
        try Self.click(viewer, "join")
        #expect(viewer.until("meeting.state", is: "connected", timeout: 30))
        #expect(try viewer.evaluate("String(document.getElementById('mute').hidden)") == "true")
        #expect(Waiting.until(timeout: 20) { ((try? viewer.packetsReceived()) ?? 0) >= 50 }, "the viewer received \((try? viewer.packetsReceived()) ?? -1)")
        #expect(server.webRTCSessionCount == 4)
        try Self.click(viewer, "leave")
        #expect(Waiting.until { server.webRTCSessionCount == 3 })
        #expect(pages[0].until("String(!document.getElementById('tile-viewer'))", is: "true"))

        // Everyone mutes: the server takes none of their packets while its clock runs on for 1 s.
        for page in pages { try Self.click(page, "mute") }
        for page in pages {
            #expect(page.until("document.querySelectorAll('.tile[data-muted=true]').length", is: "3"), "\(page.name) does not show 3 muted")
        }
        let mutedBefore = server.mediaStatistics.muted
        try #require(Waiting.until { server.mediaStatistics.muted >= mutedBefore + 30 }, "no muted packets dropped")
        let accepted = server.mediaStatistics.accepted, ticks = server.mediaStatistics.tickTimes.count
        try #require(Waiting.until { server.mediaStatistics.tickTimes.count >= ticks + 100 })
        #expect(server.mediaStatistics.accepted == accepted)
        #expect(server.mediaStatistics.muted > mutedBefore + 30)
        // Unmuted, a browser's packets are taken again.
        try Self.click(pages[0], "mute")
        #expect(Waiting.until { server.mediaStatistics.accepted > accepted + 20 })

        // A moderator removes carol: her page leaves and closes its peer connection; the server's session goes.
        let moderator = try RawCallClient(server, "mod", role: .moderator, withoutMedia: true)
        try #require(Waiting.until { moderator.joined })
        moderator.send(.removeParticipant("carol"))
        #expect(pages[2].until("meeting.state + ' ' + meeting.closedState", is: "idle closed"))
        #expect(try pages[2].evaluate("document.getElementById('call-status').textContent").contains("removed"))
        #expect(Waiting.until { server.webRTCSessionCount == 2 })
        #expect(pages[0].until("String(!document.getElementById('tile-carol'))", is: "true"))

        // The browsers' audio was recorded like any participant's (serve --record).
        server.stop()
        let files = Set(try FileManager.default.contentsOfDirectory(atPath: recordings + "/room"))
        #expect(files.isSuperset(of: ["alice.opus", "bob.opus", "carol.opus", "speech.rttm", "floor.rttm"]), "\(files)")
        let speech = try String(contentsOfFile: recordings + "/room/speech.rttm", encoding: .utf8)
        for name in names { #expect(speech.contains(" \(name) "), "\(name) has no speech in the recording") }
    }

    /// Runs `activespeaker join` (the debug build) publishing `file` in a loop, as a plain-RTP participant.
    static func plainRTPJoin(_ name: String, file: String, server: RoomServer) throws -> Process {
        let binary = FixturePaths.repositoryRoot.appendingPathComponent(".build/debug/activespeaker").path
        try #require(FileManager.default.isExecutableFile(atPath: binary), "build first: swift build")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [
            "join", "--server", "ws://127.0.0.1:\(server.port)", "--room", "room", "--token", CallTestServer.token(name), "--mic", file, "--loop",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Opt-in (`ACTIVESPEAKER_WEBRTC_MEASURE=1`): the test process's CPU (the server; the browsers and
    /// `join` are other processes) over 8 s of media-loop time each: an empty room, then with a plain-RTP
    /// participant (`activespeaker join`), then with a WebRTC participant (the meeting page) beside it.
    @Test(
        "Server CPU for a plain-RTP and a WebRTC participant (measurement, prints figures)",
        .enabled(if: ProcessInfo.processInfo.environment["ACTIVESPEAKER_WEBRTC_MEASURE"] == "1", "set ACTIVESPEAKER_WEBRTC_MEASURE=1"),
        .enabled(if: HeadlessChromium.executable != nil && HeadlessChromium.sox != nil, "needs chromium and sox"))
    func measureServerCPU() throws {
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        func cpu(ticks: Int = 800) throws -> Double {
            let start = server.mediaStatistics.tickTimes.count, before = ProcessCPU.seconds()
            try #require(Waiting.until(timeout: 60) { server.mediaStatistics.tickTimes.count >= start + ticks })
            return ProcessCPU.seconds() - before
        }
        let empty = try cpu()
        let join = try Self.plainRTPJoin("alice", file: FixturePaths.file("meetings/m1-clean/alice.flac"), server: server)
        defer {
            kill(join.processIdentifier, SIGKILL)
            join.waitUntilExit()
        }
        try #require(Waiting.until { server.mediaStatistics.accepted > 50 })
        let plain = try cpu()
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let browser = try Self.browser(microphone: try Self.wav("bob", in: profile))
        defer { browser.close() }
        let page = try Self.open("bob", in: browser, server: server)
        try Self.click(page, "join")
        try #require(page.until("meeting.state", is: "connected", timeout: 30))
        let accepted = server.mediaStatistics.accepted
        let both = try cpu()
        let perSecond = Double(server.mediaStatistics.accepted - accepted) / 8
        func percent(_ seconds: Double) -> String { String(format: "%.2f %%", seconds / 8 * 100) }
        print("measured: server CPU over 8 s, empty room \(percent(empty)), + plain RTP \(percent(plain)), + WebRTC \(percent(both)) of one core; accepted \(perSecond) packets/s with both")
        print("measured: plain-RTP participant \(percent(plain - empty)), WebRTC participant \(percent(both - plain)) of one core")
    }
}

import CallProtocol
import CallServer
import Foundation
import Testing
import TestSupport

/// Browsers that come and go: a tab killed or frozen without leaving is removed and its WebRTC session
/// closed; a hundred joins and leaves leave the server's threads and memory where they were.
@Suite(
    .serialized, .realTime, .enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"),
    .enabled(if: HeadlessChromium.executable != nil && HeadlessChromium.sox != nil, "needs chromium and sox: bash tools/install-deps.sh"))
struct BrowserLifecycleTests {
    typealias Browsers = BrowserParticipantTests

    /// The meeting page pings every 5 s; a client timeout above that keeps the live pages in.
    static let clientTimeout = 8.0

    @Test("A browser killed (SIGKILL) or frozen (SIGSTOP) without leaving is removed, its session closed, and the others see it go")
    func aBrowserThatDisappearsIsRemoved() throws {
        let log = Browsers.Log()
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let server = try CallTestServer.server(clientTimeout: Self.clientTimeout, iceHost: "127.0.0.1") { log.append($0) }
        defer { server.stop() }
        let names = ["bob", "alice", "carol"]
        var browsers: [HeadlessChromium] = []
        defer { browsers.forEach { $0.close() } }
        var pages: [Browsers.Page] = []
        for name in names {
            let browser = try Browsers.browser(microphone: try Browsers.wav(name, in: profile))
            browsers.append(browser)
            pages.append(try Browsers.open(name, in: browser, server: server))
        }
        for page in pages { try Browsers.click(page, "join") }
        for page in pages {
            try #require(page.until("meeting.state", is: "connected", timeout: 30), "\(page.name) did not connect")
        }
        try #require(Waiting.until { server.webRTCSessionCount == 3 })
        for page in pages {
            try #require(page.until("String(document.querySelectorAll('.tile').length)", is: "3"), "\(page.name) does not show 3 tiles")
        }

        // bob's browser dies: the kernel closes its sockets, so the server hears of it at once.
        let killed = Date()
        browsers[0].signal(SIGKILL)
        #expect(Waiting.until(timeout: 30) { server.webRTCSessionCount == 2 }, "sessions: \(server.webRTCSessionCount)")
        let killedGone = Date().timeIntervalSince(killed)
        for page in pages.dropFirst() {
            #expect(page.until("String(!document.getElementById('tile-bob'))", is: "true"), "\(page.name) still shows bob")
        }
        #expect(Waiting.until { log.left.contains("bob") }, "\(log.lines.withLock { $0 })")

        // alice's browser hangs with its sockets open: only the client timeout removes her.
        let frozen = Date()
        browsers[1].signal(SIGSTOP)
        #expect(Waiting.until(timeout: Self.clientTimeout + 30) { server.webRTCSessionCount == 1 }, "sessions: \(server.webRTCSessionCount)")
        let frozenGone = Date().timeIntervalSince(frozen)
        #expect(pages[2].until("String(!document.getElementById('tile-alice'))", is: "true"), "carol still shows alice")
        #expect(Waiting.until { log.left.contains("alice") }, "\(log.lines.withLock { $0 })")
        // carol stays in the call, alone.
        #expect(try pages[2].evaluate("meeting.state") == "connected")
        #expect(try pages[2].evaluate("String(document.querySelectorAll('.tile').length)") == "1")
        print(
            "measured: killed browser's session closed after \(String(format: "%.2f", killedGone)) s, frozen browser's after "
                + "\(String(format: "%.2f", frozenGone)) s (client timeout \(Self.clientTimeout) s, pings every 5 s)")
    }

    @Test("100 joins and leaves of a browser leave the server's threads and resident memory near their baseline")
    func aHundredJoinsAndLeaves() throws {
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        let browser = try Browsers.browser(microphone: try Browsers.wav("bob", in: profile))
        defer { browser.close() }
        let page = try Browsers.open("bob", in: browser, server: server)

        /// Seconds from each Join click to the server's first packet of that join.
        var joinTimes: [Double] = []
        /// One join through the page, until the server takes its audio, and one leave, until its session is closed.
        func joinAndLeave(_ round: Int) throws {
            let accepted = server.mediaStatistics.accepted
            let clicked = Date()
            try Browsers.click(page, "join")
            try #require(Waiting.until(timeout: 30) { server.mediaStatistics.accepted > accepted }, "round \(round): no audio")
            joinTimes.append(Date().timeIntervalSince(clicked))
            try #require(page.until("meeting.state", is: "connected", timeout: 30), "round \(round): no connection")
            try #require(server.webRTCSessionCount == 1)
            try Browsers.click(page, "leave")
            try #require(page.until("meeting.state", is: "idle"), "round \(round): did not leave")
            try #require(Waiting.until(timeout: 30) { server.webRTCSessionCount == 0 }, "round \(round): session not closed")
            // The media loop takes the leave at its next tick; until then a last packet may still be accepted.
            let ticks = server.mediaStatistics.tickTimes.count
            try #require(Waiting.until { server.mediaStatistics.tickTimes.count >= ticks + 5 })
        }
        /// Waits until the thread count stops falling (GStreamer's and GLib's threads end a moment after a close).
        func settledThreads() -> Int {
            var last = ProcessResources.threads()
            var stable = 0
            _ = Waiting.until(timeout: 20) {
                let now = ProcessResources.threads()
                stable = now == last ? stable + 1 : 0
                last = now
                return stable >= 200  // about 1 s unchanged
            }
            return last
        }

        // The first rounds load GStreamer's plugins and warm the allocator: the baseline is after them.
        for round in 0..<3 { try joinAndLeave(round) }
        let threadsBefore = settledThreads(), residentBefore = ProcessResources.residentBytes()
        let started = Date()
        for round in 3..<103 { try joinAndLeave(round) }
        let seconds = Date().timeIntervalSince(started)
        let threadsAfter = settledThreads(), residentAfter = ProcessResources.residentBytes()
        let growth = Double(residentAfter - residentBefore) / 1_048_576
        let sorted = joinTimes.suffix(100).sorted()
        print(
            "measured: Join click to the server's first packet (page loaded, browser warm) over 100 joins: median "
                + "\(String(format: "%.3f", sorted[50])) s, 90th percentile \(String(format: "%.3f", sorted[90])) s, "
                + "range \(String(format: "%.3f", sorted[0]))–\(String(format: "%.3f", sorted[99])) s")
        print(
            "measured: 100 browser joins and leaves in \(String(format: "%.0f", seconds)) s; threads \(threadsBefore) → \(threadsAfter); "
                + "resident \(residentBefore / 1_048_576) → \(residentAfter / 1_048_576) MiB (\(String(format: "%+.1f", growth)) MiB)")
        #expect(threadsAfter <= threadsBefore + 4, "threads \(threadsBefore) → \(threadsAfter)")
        #expect(growth < 50, "resident memory grew by \(growth) MiB")
        #expect(server.webRTCSessionCount == 0)
    }
}

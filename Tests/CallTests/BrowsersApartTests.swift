import CallClient
import CallProtocol
@testable import CallServer
import Foundation
import SpeakerCore
import SpeakerEval
import SpeakerFiles
import Testing
import TestSupport

/// Issue 28's live case with real browsers: three headless Chromium publishers of a co-located meeting
/// (`CoLocatedMeeting`: every microphone hears the others at −25 dB) whose pages take their microphones
/// 250, 120 and 0 ms apart (alice, bob, carol), through the meeting page, Chromium's own audio processing
/// (noise suppression, gain control), Opus and WebRTC. The server names the speakers `detect` names on the
/// aligned files; how far apart the streams really arrived is measured on the server's recordings (the
/// microphones open later than asked, by up to ~110 ms and once 360 ms: alice's stream arrived 230–590 ms after
/// carol's in the runs of 2026-12-04). The SDK clients' version of this test (`CallEndToEndTests`) passes;
/// this one is a known issue (below). The opt-in measurement runs it with the engine's alignment off.
@Suite(
    .serialized, .realTime, .enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"),
    .enabled(if: HeadlessChromium.executable != nil, "needs chromium: bash tools/install-deps.sh"))
struct BrowsersApartTests {
    typealias Browsers = BrowserParticipantTests

    /// Seconds of each stream's own room noise before the meeting, so that every page is connected before
    /// the first word: its first second (nobody speaks before 1.24 s), played forward and backward in turn
    /// (no click where the pieces meet). Digital silence there instead made Chromium's noise suppression,
    /// meeting the room's noise anew, let bursts of it through as the meeting began.
    static let lead = 5.0

    static func withLead(_ samples: [Float], sampleRate: Int) -> [Float] {
        let noise = Array(samples[0..<sampleRate])
        var lead: [Float] = []
        for piece in 0..<Int(Self.lead) { lead += piece % 2 == 0 ? noise : noise.reversed() }
        return lead + samples
    }
    /// When each page takes its microphone after the first one (alice, bob, carol).
    static let offsets = [0.25, 0.12, 0.0]

    /// Known issue (2026-12-04): in 3 of 3 runs (streams 290–380 ms apart), and in each of 10 runs of this
    /// test's drafts, the engine named a leak at a turn's start: carol, whose stream arrives first, 0.75–0.86 s
    /// before alice as alice begins. Chromium's noise suppression reshapes a leak frame by frame, and the
    /// engine measures a leak's lag on the correlation of speech-band energy envelopes: at the true lags it
    /// is 0.20–0.56 on the recorded streams (0.80–0.90 on the files), under the 0.85 a lag needs, so no delay
    /// is found (docs/evaluation.md, "Through browsers"). `activespeaker detect` on the three runs' recordings (`ACTIVESPEAKER_KEEP_RECORDINGS=DIR`)
    /// gives the live sequence as they arrived and `detect`'s order once they are lined up again (3 of 3);
    /// `--config alignment.correlation=0.5` is not enough (0 of 3).
    @Test("Browsers whose microphones start 250, 120 and 0 ms apart are named as detect names the aligned files")
    func browsersApartAreNamedAsTheAlignedFilesAre() async throws {
        let room = try await Self.meeting(engine: EngineConfiguration())
        #expect(room.expected == ["bob", "alice", "carol", "alice", "carol"], "detect: \(room.expected)")
        #expect(room.over, "told \(room.listener)")
        // How far apart the streams arrived is printed, not asserted: on a loaded machine a microphone opened
        // ~180 ms later than asked and the streams arrived only 60 ms apart (a fresh-clone CI run, 2026-12-04).
        for (name, view) in zip(CoLocatedMeeting.names, room.pages) {
            #expect(view == room.listener, "\(name)'s page: \(view); listener: \(room.listener)")
        }
        withKnownIssue("a leak named at a turn's start: browsers' noise suppression hides the lag from the engine", isIntermittent: true) {
            #expect(room.listener == room.expected, "listener: \(room.listener); detect: \(room.expected)")
        }
    }

    /// Opt-in (`ACTIVESPEAKER_WEBRTC_MEASURE=1`): the same meeting with the engine's alignment off. Prints
    /// whether the listener's sequence matched `detect`'s; asserts nothing about it.
    @Test(
        "Browsers apart with the engine's alignment off (measurement, prints whether the listener matches detect)",
        .enabled(if: ProcessInfo.processInfo.environment["ACTIVESPEAKER_WEBRTC_MEASURE"] == "1", "set ACTIVESPEAKER_WEBRTC_MEASURE=1"))
    func measureBrowsersApartWithoutAlignment() async throws {
        var engine = EngineConfiguration()
        engine.alignment.maxDelay = 0
        let room = try await Self.meeting(engine: engine)
        print("measured: alignment off, listener matches detect: \(room.listener == room.expected)")
    }

    /// What a run of the meeting gave.
    struct Run {
        /// `detect`'s sequence on the files, started together.
        var expected: [String] = []
        /// The SDK listener's sequence and each page's (alice, bob, carol).
        var listener: [String] = [], pages: [[String]] = []
        /// Whether the listener was told the first cycle's speakers and then nobody.
        var over = false
        /// How far apart the streams arrived at the server, ms (alice, bob, carol; the earliest is 0).
        var apart: [Double] = []
    }

    /// Runs the meeting through a server with `engine`: an SDK listener, then three browsers whose pages
    /// click Join at 250, 120 and 0 ms past one instant, until the first cycle of the files is over.
    static func meeting(engine: EngineConfiguration) async throws -> Run {
        var run = Run()
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let names = CoLocatedMeeting.names
        var streams = try loadStreams(paths: CoLocatedMeeting.paths, sampleRate: 48000).map(\.samples)
        CoLocatedMeeting.removeBackchannel(from: &streams, sampleRate: 48000)
        CoLocatedMeeting.removeBackchannelLeaks(from: &streams, sampleRate: 48000)
        let files = try zip(names, streams).map { name, samples in
            let path = profile.path("\(name).wav")
            let writer = try AudioFileWriter(path: path, sampleRate: 48000, format: .wav16)
            try Self.withLead(samples, sampleRate: 48000).withUnsafeBufferPointer { try writer.write($0) }
            writer.close()
            return path
        }
        // What the engine names offline on the same files, started together.
        let sources = try loadStreams(paths: files).map(\.samples)
        run.expected = try CallEndToEndTests.detectSequence(names: names, streams: sources)

        let recordings = profile.path("recordings")
        let server = try CallTestServer.server(recordingDirectory: recordings, iceHost: "127.0.0.1", engine: engine)
        defer { server.stop() }
        // An SDK client without a microphone listens to the speaker events.
        let listener = CallEndToEndTests.meeting(server, "dave", track: nil)
        let log = CallEndToEndTests.SpeakerLog()
        listener.addEventListener(log)
        try await listener.join()
        defer { listener.leave() }

        var browsers: [HeadlessChromium] = []
        defer { browsers.forEach { $0.close() } }
        var pages: [Browsers.Page] = []
        for (name, file) in zip(names, files) {
            let browser = try Browsers.browser(microphone: file)
            browsers.append(browser)
            pages.append(try Browsers.open(name, in: browser, server: server))
        }
        // Each page clicks Join at its own instant of the shared wall clock (`Date.now()`, one machine) and
        // notes when its microphone opened: Chromium's fake microphone plays its file from then on.
        let first = Date().timeIntervalSince1970 + 2
        for (page, offset) in zip(pages, Self.offsets) {
            _ = try page.evaluate("""
                { const take = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
                  navigator.mediaDevices.getUserMedia = async (constraints) => { const stream = await take(constraints); window.micOpened = Date.now(); return stream; };
                  setTimeout(() => document.getElementById('join').click(), \(Int((first + offset) * 1000)) - Date.now()); } "scheduled"
                """)
        }
        for page in pages {
            try #require(page.until("meeting.state", is: "connected", timeout: 30), "\(page.name) did not connect")
        }
        let opened = pages.map { Double((try? $0.evaluate("String(window.micOpened)")) ?? "") ?? .nan }
        #expect(Date().timeIntervalSince1970 < first + Self.lead, "a page connected after the meeting's first words")

        // The first cycle of the files is over once the latest stream's last words (24.41 s into the meeting)
        // have played and the listener was told nobody (each file loops, after 5 s of its room's noise).
        let lastWords = first + Self.offsets.max()! + Self.lead + 24.5
        run.over = await Waiting.until(timeout: Self.lead + 25 + 40) {
            Date().timeIntervalSince1970 > lastWords && log.changes.withLock { $0.last } == .some(nil)
        }
        run.listener = log.sequence
        run.pages = pages.map { BrowserSpeakerTests.sequence(of: $0) }
        server.stop()

        // Where each participant's file lies in the server's recording of its stream (room time), to 10 ms.
        let recorded = try loadStreams(paths: names.map { "\(recordings)/room/\($0).opus" }).map(\.samples)
        let arrivals = zip(sources, recorded).map { source, audio in
            Double(ImpairedMediaLoopTests.envelopeOffset(of: source, in: audio, lags: 0...max(0, audio.count - source.count))) / 16
        }
        run.apart = arrivals.map { $0 - arrivals.min()! }
        if let keep = ProcessInfo.processInfo.environment["ACTIVESPEAKER_KEEP_RECORDINGS"] {
            // For offline replay (`activespeaker detect` on the three .opus files): one folder per run.
            let folder = "\(keep)/browsers-apart-\(Int(Date().timeIntervalSince1970))"
            try? FileManager.default.createDirectory(atPath: keep, withIntermediateDirectories: true)
            try? FileManager.default.copyItem(atPath: "\(recordings)/room", toPath: folder)
        }
        print(
            "measured: browsers apart, alignment \(engine.alignment.maxDelay > 0 ? "on" : "off"): microphones opened",
            "\(opened.map { Int($0 - opened.min()!) }) ms apart, streams arrived \(run.apart.map { Int($0.rounded()) }) ms apart",
            "(alice, bob, carol); listener \(run.listener), pages \(run.pages) (detect on the aligned files: \(run.expected))")
        return run
    }
}

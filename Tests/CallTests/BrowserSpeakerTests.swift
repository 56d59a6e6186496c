import CallClient
import CallProtocol
@testable import CallServer
import CallTransport
import Foundation
import SpeakerEval
import SpeakerFiles
import Testing
import TestSupport

/// Browsers and an SDK client in one room: all of them are told the speakers `detect` names on the
/// same files, and (opt-in) how long a talker's first words take to light up its tile in another page.
@Suite(
    .serialized, .realTime, .enabled(if: WebRTCAvailable.peer, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"),
    .enabled(if: HeadlessChromium.executable != nil, "needs chromium: bash tools/install-deps.sh"))
struct BrowserSpeakerTests {
    typealias Browsers = BrowserParticipantTests

    /// A piece of a participant's m1-clean recording (`from`…`to` s) placed at `at` s of a new file.
    struct Piece {
        let from: Double, to: Double, at: Double
    }

    /// Writes `name`'s pieces of Fixtures' m1-clean into a 48 kHz 16-bit WAV of `length` s, digital
    /// silence elsewhere (20 ms fades at the cuts), and returns its path. Chromium's fake microphone
    /// plays it from its start when the page takes the microphone, and loops it.
    static func turns(_ name: String, _ pieces: [Piece], length: Double, in profile: BrowserProfile) throws -> String {
        let rate = 48000
        let source = try loadStreams(paths: [FixturePaths.file("meetings/m1-clean/\(name).flac")], sampleRate: rate)[0].samples
        var samples = [Float](repeating: 0, count: Int(length * Double(rate)))
        let fade = rate / 50
        for piece in pieces {
            let start = Int(piece.from * Double(rate)), end = Int(piece.to * Double(rate)), at = Int(piece.at * Double(rate))
            precondition(at + end - start <= samples.count && end <= source.count, "a piece outside the file")
            for i in 0..<(end - start) {
                let gain = Float(min(1, Double(min(i, end - start - 1 - i)) / Double(fade)))
                samples[at + i] += source[start + i] * gain
            }
        }
        let path = profile.path("\(name)-turns.wav")
        let writer = try AudioFileWriter(path: path, sampleRate: rate, format: .wav16)
        try samples.withUnsafeBufferPointer { try writer.write($0) }
        writer.close()
        return path
    }

    /// The named speakers of a page's history (`highlight`'s list: `id@t`, `-` for nobody), nobody and
    /// repeats dropped.
    static func sequence(of page: Browsers.Page) -> [String] {
        let text = (try? page.evaluate("Array.from(document.querySelectorAll('#history li')).map((l) => l.textContent).join(' ')")) ?? ""
        return collapsed(text.split(separator: " ").map { String($0.split(separator: "@").first ?? "") })
    }

    static func collapsed(_ names: [String?]) -> [String] {
        names.compactMap { $0 == "-" ? nil : $0 }.reduce(into: []) { if $0.last != $1 { $0.append($1) } }
    }

    /// The largest `audioLevel` and the packets of the page's inbound audio so far (`getStats`).
    static func inbound(of page: Browsers.Page) -> (packets: Int, level: Double) {
        let text = (try? page.evaluate("""
            (async () => { let n = 0, level = 0; if (!window.meeting || !meeting.pc) return "0 0";
              (await meeting.pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "audio") { n += r.packetsReceived; level = Math.max(level, r.audioLevel || 0); } });
              return n + " " + level; })()
            """)) ?? ""
        let parts = text.split(separator: " ")
        return (parts.first.flatMap { Int($0) } ?? -1, parts.last.flatMap { Double($0) } ?? -1)
    }

    /// Puts an analyser (`window.analyser`, 4,096-point FFT) on the page's audio element, which plays the
    /// server's track.
    static func analyseRemoteAudio(in page: Browsers.Page) throws {
        _ = try page.evaluate("""
            window.context = new AudioContext(); window.analyser = context.createAnalyser(); analyser.fftSize = 4096;
            context.createMediaStreamSource(document.getElementById('remote').srcObject).connect(analyser); "ok"
            """)
    }

    /// A script giving the analyser's level (dB) at each frequency, the largest of three bins around it,
    /// space-separated.
    static func peaks(at frequencies: [Int]) -> String {
        """
        (() => { const d = new Float32Array(analyser.frequencyBinCount); analyser.getFloatFrequencyData(d);
          const peak = (f) => { const b = Math.round(f * analyser.fftSize / context.sampleRate); return Math.max(d[b - 1], d[b], d[b + 1]); };
          return \(frequencies).map((f) => peak(f).toFixed(1)).join(" "); })()
        """
    }

    /// The meeting's turns (m1-clean's speech, speech.rttm), moved apart: 4 s of digital silence between
    /// turns, longer than the joins' spread, so each turn ends for everyone before the next begins.
    static let plan: [(String, [Piece])] = [
        ("bob", [Piece(from: 1.1, to: 4.6, at: 1.0)]),
        ("alice", [Piece(from: 11.3, to: 14.4, at: 8.5), Piece(from: 18.7, to: 21.2, at: 22.5)]),
        ("carol", [Piece(from: 15.05, to: 18.2, at: 15.5)]),
    ]
    static let length = 28.0

    @Test("Three browsers and an SDK client in one room all get the speaker sequence detect gives on the same files, and hear each other")
    func aMixedRoomAgreesWithDetect() async throws {
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let names = Self.plan.map(\.0)
        let files = try Self.plan.map { try Self.turns($0.0, $0.1, length: Self.length, in: profile) }
        let room = try await Self.mixedRoom(names: names, files: files, length: Self.length)
        #expect(room.expected == ["bob", "alice", "carol", "alice"], "detect: \(room.expected)")
        #expect(room.told, "\(room.views); server: \(room.serverSpeakers)")
        for (who, view) in room.views {
            #expect(Array(view.prefix(room.expected.count)) == room.expected, "\(who): \(view); detect: \(room.expected)")
        }
        for (name, heard) in room.heard { #expect(heard, "\(name) heard no audio (getStats)") }
        #expect(names.allSatisfy { (room.received[$0] ?? 0) > 50 }, "\(room.received)")
        print("measured: joins began within \(Int(room.spread)) ms; speaker sequences \(room.views); detect \(room.expected); SDK client received \(room.received)")
    }

    @Test("A browser hears two SDK clients talking at once: the server mixes them into its one track")
    func aBrowserHearsTwoTalkersAtOnce() async throws {
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        // alice hums 500 Hz and bob 1300 Hz, both at once and equally loud (20 s at 48 kHz).
        var meetings: [Meeting] = []
        defer { meetings.forEach { $0.leave() } }
        for (name, frequency) in [("alice", 500.0), ("bob", 1300.0)] {
            let tone = (0..<(20 * 48000)).map { Float(0.1 * sin(2 * Double.pi * frequency * Double($0) / 48000)) }
            let track = CustomMicrophoneTrack(source: FileMicrophone(samples: tone), label: name)
            meetings.append(CallEndToEndTests.meeting(server, name, track: track))
        }
        try await CallEndToEndTests.joinTogether(meetings)

        let browser = try Browsers.browser(microphone: "/dev/null")
        defer { browser.close() }
        let page = try Browsers.open("viewer", in: browser, server: server, role: .subscriber)
        try Browsers.click(page, "join")
        try #require(page.until("meeting.state", is: "connected", timeout: 30), "the page did not connect")
        try #require(page.until("String(!!document.getElementById('remote').srcObject)", is: "true"))
        try Self.analyseRemoteAudio(in: page)
        let spectrum = Self.peaks(at: [500, 1300, 900])
        var last = ""
        // Both tones stand 20 dB above the spectrum between them, in the same analysis window.
        let both = await Waiting.until(timeout: 30) {
            last = (try? page.evaluate(spectrum)) ?? ""
            let levels = last.split(separator: " ").compactMap { Double($0) }
            return levels.count == 3 && levels[0] > levels[2] + 20 && levels[1] > levels[2] + 20 && levels[0] > -80 && levels[1] > -80
        }
        #expect(both, "dB at 500, 1300 and 900 Hz: \(last)")
        #expect(server.mediaStatistics.mixed > 0)
        let metrics = String(decoding: server.handle(HTTPRequest(method: "GET", path: "/metrics"), from: PeerAddress(host: "127.0.0.1", port: 50000)).body, as: UTF8.self)
        #expect(metrics.contains("\nactivespeaker_rtp_packets_mixed_total "), "\(metrics)")
        print("measured: the browser's spectrum of the server's mix, dB at 500 Hz (alice), 1300 Hz (bob), 900 Hz (neither): \(last)")
    }

    /// Issue 29: a client on the server's host (a local user, or anyone behind a same-host reverse proxy)
    /// joined room a with `rtpPort` set to a room-b browser's relay socket, and the listen-only browser
    /// heard room a's tone instead of its own room. Now the join is refused, and the browser hears its
    /// room's 1300 Hz and nothing of room a's 500 Hz.
    @Test("A browser keeps its own room: a join naming its relay socket is refused, and it hears none of the other room")
    func aBrowserKeepsItsOwnRoom() async throws {
        let server = try CallTestServer.server(rooms: ["a", "b"], iceHost: "127.0.0.1")
        defer { server.stop() }
        var meetings: [Meeting] = []
        defer { meetings.forEach { $0.leave() } }
        for (name, frequency, room) in [("alice", 500.0, "a"), ("bob", 1300.0, "b")] {
            let tone = (0..<(40 * 48000)).map { Float(0.1 * sin(2 * Double.pi * frequency * Double($0) / 48000)) }
            let track = CustomMicrophoneTrack(source: FileMicrophone(samples: tone), label: name)
            let meeting = CallEndToEndTests.meeting(server, name, track: track, room: room)
            try await meeting.join()
            meetings.append(meeting)
        }

        let browser = try Browsers.browser(microphone: "/dev/null")
        defer { browser.close() }
        let page = try Browsers.open("viewer", in: browser, server: server, role: .subscriber, room: "b")
        try Browsers.click(page, "join")
        try #require(page.until("meeting.state", is: "connected", timeout: 30), "the page did not connect")
        try #require(page.until("String(!!document.getElementById('remote').srcObject)", is: "true"))

        // mallory, on the server's host, names the browser's relay socket for room a's audio.
        let relay = try #require(server.webRTCSessions.relayEndpoints.first)
        let mallory = try RawCallClient(server, "mallory", rtpPort: relay.port, room: "a")
        #expect(await Waiting.until { mallory.errorCode != nil })
        let refusal = mallory.errorCode, malloryJoined = mallory.joined, malloryMessages = String(describing: mallory.messages)
        #expect(refusal == .malformedMessage && !malloryJoined, "\(malloryMessages)")

        try Self.analyseRemoteAudio(in: page)
        let spectrum = Self.peaks(at: [1300, 500, 900])
        // Room b's tone stands 20 dB above the spectrum, then for 3 s of analysis windows room a's never
        // rises 10 dB above the floor between them.
        var last = ""
        let own = await Waiting.until(timeout: 30) {
            last = (try? page.evaluate(spectrum)) ?? ""
            let levels = last.split(separator: " ").compactMap { Double($0) }
            return levels.count == 3 && levels[0] > levels[2] + 20 && levels[0] > -80
        }
        #expect(own, "dB at 1300 (room b), 500 (room a) and 900 Hz: \(last)")
        // carol listens in room a with an RTP socket of her own: room a's audio flows meanwhile.
        let carol = try RawCallClient(server, "carol", role: .subscriber, room: "a")
        try #require(await Waiting.until { carol.joined })
        var worst = -Double.infinity, samples: [String] = []
        for _ in 0..<30 {
            let levels = ((try? page.evaluate(spectrum)) ?? "").split(separator: " ").compactMap { Double($0) }
            guard levels.count == 3 else { continue }
            samples.append(levels.map { String(format: "%.0f", $0) }.joined(separator: "/"))
            worst = max(worst, levels[1] - levels[2])
            usleep(100_000)
        }
        #expect(samples.count >= 20, "\(samples)")
        #expect(worst < 10, "500 Hz rose \(worst) dB above 900 Hz: \(samples)")
        let roomA = carol.takeDatagrams()
        #expect(roomA >= 50, "room a forwarded \(roomA) packets to carol")
        print("measured: room-b browser, dB at 1300 Hz (own room) / 500 Hz (room a) / 900 Hz, every 0.1 s: \(samples.prefix(10)); 500 Hz above 900 Hz at most \(String(format: "%.1f", worst)) dB")
    }

    /// Opt-in (`ACTIVESPEAKER_WEBRTC_MEASURE=1`): the same room with m1-clean's recordings as they are
    /// (25 s, turns that abut: alice's ends where carol's begins), whose order the joins' spread could
    /// change. Prints whether each view matched `detect`; asserts nothing about it.
    @Test(
        "The mixed room on the original recordings (measurement, prints whether the views match detect)",
        .enabled(if: ProcessInfo.processInfo.environment["ACTIVESPEAKER_WEBRTC_MEASURE"] == "1", "set ACTIVESPEAKER_WEBRTC_MEASURE=1"),
        .enabled(if: HeadlessChromium.sox != nil, "needs sox"))
    func measureMixedRoomOnTheOriginalRecordings() async throws {
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let names = ["bob", "alice", "carol"]
        let files = try names.map { try Browsers.wav($0, in: profile) }
        let room = try await Self.mixedRoom(names: names, files: files, length: 25)
        let matches = room.views.map { "\($0.0): \(Array($0.1.prefix(room.expected.count)) == room.expected)" }
        print("measured: original recordings, joins began within \(Int(room.spread)) ms; detect \(room.expected); views \(room.views); match \(matches)")
    }

    /// What a mixed room gave: `detect`'s sequence on the files, each participant's view, what was heard.
    struct MixedRoom {
        var expected: [String] = []
        var told = false
        var views: [(String, [String])] = []
        var serverSpeakers: Set<String> = []
        var spread = 0.0
        var heard: [String: Bool] = [:]
        var received: [String: Int] = [:]
    }

    /// Runs `RoomReplay` on `files` (started together), then a room of an SDK client without a microphone
    /// (joined first) and one browser per file (pages loaded, then the Join clicks one after the other),
    /// until every view has as many speakers as `detect` named (at most `length` + 40 s).
    static func mixedRoom(names: [String], files: [String], length: Double) async throws -> MixedRoom {
        var room = MixedRoom()
        // What the engine names offline on the same files, started together.
        let streams = try loadStreams(paths: files)
        let replay = try RoomReplay(streams: zip(names, streams).map { ReplayStream(id: $0, samples: $1.samples) })
        while !replay.isAtEnd { replay.tick() }
        replay.finish()
        var detected: [String?] = []
        replay.consumeEvents { event in
            if case .dominant(let stream, _) = event { detected.append(stream.map { names[$0] }) }
        }
        let expected = Self.collapsed(detected)
        room.expected = expected
        try #require(expected.count >= 3, "detect: \(detected)")

        let log = Browsers.Log()
        let server = try CallTestServer.server(iceHost: "127.0.0.1") { log.append($0) }
        defer { server.stop() }
        // The SDK client joins first, without a microphone, and listens.
        let client = CallEndToEndTests.meeting(server, "dave", track: nil)
        let clientLog = CallEndToEndTests.SpeakerLog()
        client.addEventListener(clientLog)
        try await client.join()
        defer { client.leave() }

        var browsers: [HeadlessChromium] = []
        defer { browsers.forEach { $0.close() } }
        var pages: [Browsers.Page] = []
        for (name, file) in zip(names, files) {
            let browser = try Browsers.browser(microphone: file)
            browsers.append(browser)
            pages.append(try Browsers.open(name, in: browser, server: server))
        }
        // All pages are loaded; the joins follow each other within milliseconds, and each microphone
        // starts when its page takes it.
        for page in pages { try Browsers.click(page, "join") }
        for page in pages {
            try #require(page.until("meeting.state", is: "connected", timeout: 30), "\(page.name) did not connect")
        }
        // How far apart the joins began (each page's Join click, wall clock ms), for the record.
        let clicks = pages.compactMap { Double((try? $0.evaluate("String(performance.timeOrigin + meeting.joinedAt)")) ?? "") }
        room.spread = (clicks.max() ?? 0) - (clicks.min() ?? 0)

        // Everyone has been told at least the first cycle's turns; a later cycle starts with bob again.
        room.told = await Waiting.until(timeout: length + 40) {
            clientLog.sequence.count >= expected.count && pages.allSatisfy { Self.sequence(of: $0).count >= expected.count }
        }
        room.views = [("dave (SDK)", clientLog.sequence)] + pages.map { ("\($0.name) (page)", Self.sequence(of: $0)) }
        room.serverSpeakers = log.speakers

        // Each browser hears the others (the server forwards one of them at a time), and so does the SDK client.
        for page in pages {
            room.heard[page.name] = await Waiting.until(timeout: 20) {
                let inbound = Self.inbound(of: page)
                return inbound.packets > 0 && inbound.level > 0
            }
        }
        room.received = client.receivedPackets
        return room
    }

    /// Opt-in (`ACTIVESPEAKER_WEBRTC_MEASURE=1`): from a talker's speech onset in its file to its tile's
    /// highlight (the blue border, class `speaking`) in a listener's page, on one wall clock (both
    /// browsers' `Date.now()`). Two anchors for the onset: the talker's page watching its own microphone
    /// track turn loud (an `AnalyserNode`), and the server's first packet from the talker plus the onset's
    /// offset in the file (late by however long the file played before the connection was up).
    @Test(
        "Mouth to highlight: a talker's speech onset to its tile's highlight in another browser (measurement, prints figures)",
        .enabled(if: ProcessInfo.processInfo.environment["ACTIVESPEAKER_WEBRTC_MEASURE"] == "1", "set ACTIVESPEAKER_WEBRTC_MEASURE=1"))
    func measureMouthToHighlight() throws {
        let profile = try BrowserProfile()
        defer { profile.remove() }
        // bob's speech in three turns of 2.5 s with 4 s of silence between, looped every 19.5 s.
        let onsets = [2.0, 8.5, 15.0], cycle = 19.5
        let file = try Self.turns(
            "bob", [Piece(from: 1.24, to: 3.74, at: 2.0), Piece(from: 3.74, to: 6.24, at: 8.5), Piece(from: 6.24, to: 8.28, at: 15.0)],
            length: cycle, in: profile)
        let server = try CallTestServer.server(iceHost: "127.0.0.1")
        defer { server.stop() }
        let listenerBrowser = try Browsers.browser(microphone: file)
        defer { listenerBrowser.close() }
        let listener = try Browsers.open("viewer", in: listenerBrowser, server: server, role: .subscriber)
        // The listener's page notes (Date.now(), ms) each time bob's tile gains the highlight.
        _ = try listener.evaluate("""
            window.lit = []; new MutationObserver((changes) => { for (const c of changes) {
              if (c.target.id === "tile-bob" && c.target.classList.contains("speaking") && !(c.oldValue || "").includes("speaking")) window.lit.push(Date.now()); } })
              .observe(document.getElementById("tiles"), {subtree: true, attributes: true, attributeFilter: ["class"], attributeOldValue: true}); "ok"
            """)
        let talkerBrowser = try Browsers.browser(microphone: file)
        defer { talkerBrowser.close() }
        let talker = try Browsers.open("bob", in: talkerBrowser, server: server)
        try Browsers.click(talker, "join")
        try #require(Waiting.until(timeout: 30) { server.mediaStatistics.accepted > 0 })
        let firstPacket = Date().timeIntervalSince1970
        // The talker's page notes when its own microphone track (what it sends, after Chromium's audio
        // processing) turns loud: RMS of 512 samples above −40 dBFS after 1.5 s below −50 dBFS, polled every 5 ms.
        _ = try talker.evaluate("""
            window.onsets = []; { const context = new AudioContext(), analyser = context.createAnalyser(); analyser.fftSize = 512;
              context.createMediaStreamSource(meeting.stream).connect(analyser); const buffer = new Float32Array(512);
              let loud = false, lastHeard = 0;
              setInterval(() => { analyser.getFloatTimeDomainData(buffer); let energy = 0; for (const x of buffer) energy += x * x;
                const rms = Math.sqrt(energy / buffer.length), now = Date.now();
                if (!loud && rms > 0.01) { loud = true; window.onsets.push(now); }
                if (rms > 0.00316) lastHeard = now; if (loud && now - lastHeard > 1500) loud = false; }, 5); } "ok"
            """)
        let cycles = 3
        let wanted = onsets.count * cycles
        let lit = Waiting.until(timeout: cycle * Double(cycles) + 30) {
            (Int((try? listener.evaluate("String(window.lit.length)")) ?? "") ?? 0) >= wanted
        }
        func times(_ page: Browsers.Page, _ list: String) -> [Double] {
            ((try? page.evaluate("window.\(list).join(' ')")) ?? "").split(separator: " ").compactMap { Double($0) }.map { $0 / 1000 }
        }
        let highlights = times(listener, "lit"), heard = times(talker, "onsets")
        #expect(lit, "highlights: \(highlights.count)")
        // Anchored on the talker's browser: its own track turning loud, to the listener's highlight.
        let delays = heard.compactMap { onset in highlights.first { $0 > onset && $0 < onset + 4 }.map { $0 - onset } }.sorted()
        #expect(delays.count >= wanted - 1, "onsets \(heard), highlights \(highlights)")
        guard !delays.isEmpty else { return }
        print(
            "measured: mouth to highlight (the talker's track turning loud to the listener's highlight) over \(delays.count) turns: median "
                + "\(String(format: "%.2f", delays[delays.count / 2])) s, range \(String(format: "%.2f", delays.first!))–"
                + "\(String(format: "%.2f", delays.last!)) s; the talker's first onset came \(String(format: "%.2f", (heard.first ?? 0) - firstPacket)) s after the server's first packet (2.0 s into the file)")

        // The engine's own part: the file replayed offline, from the same loudness rule (10 ms hops above
        // −40 dBFS) to the engine's `dominant` event.
        let samples = try loadStreams(paths: [file])[0].samples
        let replay = try RoomReplay(streams: [ReplayStream(id: "bob", samples: samples)])
        while !replay.isAtEnd { replay.tick() }
        replay.finish()
        var named: [Double] = []
        replay.consumeEvents { event in
            if case .dominant(0?, let time) = event { named.append(time) }
        }
        let engine = onsets.compactMap { nominal -> Double? in
            var hop = max(0, Int((nominal - 0.1) * 100))
            while (hop + 1) * 160 <= samples.count {
                let slice = samples[(hop * 160)..<((hop + 1) * 160)]
                if (slice.reduce(0) { $0 + $1 * $1 } / 160).squareRoot() > 0.01 { break }
                hop += 1
            }
            let onset = Double(hop) / 100
            return named.first { $0 > onset && $0 < onset + 4 }.map { $0 - onset }
        }
        print("measured: the engine alone (offline replay of the file, same onset rule), onset to dominant: \(engine.map { String(format: "%.2f", $0) }) s")
    }
}

import Foundation
import Testing
import TestSupport

/// Capture devices without sound hardware: alsa-lib `type file` PCMs over the `null` PCM, reading raw
/// 16-bit samples from `infile` — a regular file (delivered as fast as it is read) or a FIFO that a
/// writer fills in real time (a device paced like a real one).
struct LiveDevices {
    let directory: TemporaryDirectory
    /// The configuration to pass with `--alsa-config`, or to append to alsa-lib's path.
    let configuration: String

    /// Defines `name` reading `raw` (and `<name>_failing`, whose reads fail with EIO), plus extra text.
    init(_ devices: [(name: String, raw: String)], extra: String = "") throws {
        directory = try TemporaryDirectory()
        var text = ""
        for (name, raw) in devices {
            text += """
                pcm.\(name) {
                    type file
                    slave.pcm "null"
                    file "/dev/null"
                    infile "\(raw)"
                    format "raw"
                    hint { show on description "test device \(name)" }
                }
                pcm.\(name)_failing {
                    type file
                    slave.pcm "null"
                    file "/dev/full"
                    infile "\(raw)"
                    format "raw"
                }

                """
        }
        configuration = directory.path("asoundrc")
        try (text + extra).write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    /// The environment that makes alsa-lib itself load the configuration (for `--list-devices` and
    /// device watching): the system file first, or `null` and every other system PCM would be unknown.
    var environment: [String: String] { ["ALSA_CONFIG_PATH": "/usr/share/alsa/alsa.conf:\(configuration)"] }

    /// Interleaves equal-length channels as 16-bit little-endian samples.
    static func raw(_ channels: [[Float]]) -> Data {
        var samples = [Int16](repeating: 0, count: channels[0].count * channels.count)
        for (channel, values) in channels.enumerated() {
            for (frame, value) in values.enumerated() {
                samples[frame * channels.count + channel] = Int16((max(-1, min(1, value)) * 32767).rounded()).littleEndian
            }
        }
        return samples.withUnsafeBytes { Data($0) }
    }
}

/// Writes raw audio into a FIFO at real-time pace (10 ms chunks on a wall-clock schedule).
final class PacedWriter: @unchecked Sendable {
    // @unchecked Sendable: `stopped` is only set to true; the thread reads it between chunks.
    private var stopped = false
    private let done = DispatchSemaphore(value: 0)

    /// Creates the FIFO at `path` and starts writing `data` (frames of `bytesPerFrame`) at `rate`.
    init(path: String, data: Data, bytesPerFrame: Int, rate: Int) throws {
        try #require(mkfifo(path, 0o600) == 0, "mkfifo failed")
        signal(SIGPIPE, SIG_IGN)  // the reader closing the FIFO must not end the test runner
        let chunk = bytesPerFrame * rate / 100
        Thread.detachNewThread { [self] in
            let descriptor = open(path, O_WRONLY)  // waits for the reader (the device opening)
            defer {
                if descriptor >= 0 { close(descriptor) }
                done.signal()
            }
            guard descriptor >= 0 else { return }
            let start = DispatchTime.now().uptimeNanoseconds
            var offset = 0, index: UInt64 = 0
            while offset < data.count && !stopped {
                let end = min(offset + chunk, data.count)
                let written = data[offset..<end].withUnsafeBytes { write(descriptor, $0.baseAddress, end - offset) }
                if written <= 0 { return }
                offset = end
                index += 1
                let due = start + index * 10_000_000
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now { usleep(UInt32((due - now) / 1000)) }
            }
        }
    }

    /// Stops writing and waits for the writer to close the FIFO.
    func stop() {
        stopped = true
        _ = done.wait(timeout: .now() + 5)
    }
}

@Suite("activespeaker live (file-backed ALSA devices)", .serialized, .realTime)
struct LiveTests {
    /// Runs `command` (a shell command line) with a terminal (util-linux `script`), at most 30 s, and
    /// returns its exit status and what it drew (the transcript, written to `transcript`).
    static func onTerminal(_ command: String, transcript: String) throws -> (status: Int32, screen: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", command, "/dev/null"]
        _ = FileManager.default.createFile(atPath: transcript, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: transcript))
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return (process.terminationStatus, try String(contentsOfFile: transcript, encoding: .utf8))
    }

    /// Alice and Bob, padded to 9 s, as a stereo 16 kHz device and as two WAV files.
    static func room(in directory: TemporaryDirectory) throws -> (left: [Float], right: [Float], talks: [String: [ClosedRange<Double>]]) {
        let (paths, talks) = try TestAudio.writeRoom(TestAudio.aliceAndBob, in: directory)
        var alice = try TestAudio.speechSamples(paths[0]), bob = try TestAudio.speechSamples(paths[1])
        bob += Synthesis.noise(seconds: 3, levelDBFS: -60, seed: 9)
        alice = Array(alice.prefix(144_000))
        bob = Array(bob.prefix(144_000))
        try TestAudio.writeWAV([alice], to: directory.path("alice.wav"))
        try TestAudio.writeWAV([bob], to: directory.path("bob.wav"))
        return (alice, bob, talks)
    }

    @Test func liveGivesTheEventsDetectGivesOnTheSameAudio() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob, _) = try Self.room(in: directory)
        let raw = directory.path("room.raw")
        try LiveDevices.raw([alice, bob]).write(to: URL(fileURLWithPath: raw))
        let devices = try LiveDevices([("room", raw)])
        defer { devices.directory.remove() }

        let detect = try CLI.run(["detect", directory.path("alice.wav"), directory.path("bob.wav")])
        try #require(detect.status == 0, "\(detect.stderr)")
        let live = try LiveRunner.run([
            "live", "--alsa-config", devices.configuration, "--device", "room", "--id", "alice=1", "--id", "bob=2",
            "--duration", "9", "--stats", "--device-poll", "0",
        ])
        try #require(live.status == 0, "\(live.stderr)")
        let output = try LiveOutputLines(live.lines)
        let expected = try DetectOutput(lines: detect.lines)
        output.events.checkInvariants(ids: ["alice", "bob"])
        #expect(output.events.events == expected.events, "the same engine on the same samples decides the same")
        #expect(output.dominantSequence == ["alice", "bob", "alice"])
        let opened = try #require(output.device.first)
        #expect(opened["event"] as? String == "opened" && opened["rate"] as? Int == 16000 && opened["channels"] as? Int == 2)
        #expect((opened["period"] as? Double ?? 1) <= 0.010)
        let stats = try #require(output.stats?["devices"] as? [String: [String: Int]])
        // The capture thread reads ahead of the engine (up to its 2 s queue) until the stop.
        #expect(stats["room"]?["overruns"] == 0 && stats["room"]?["droppedHops"] == 0)
        #expect((stats["room"]?["frames"] ?? 0) >= 144_000)
        #expect(output.stats?["duration"] as? Double == 9)
    }

    @Test func twoDevicesTickTogether() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob, _) = try Self.room(in: directory)
        try LiveDevices.raw([alice]).write(to: URL(fileURLWithPath: directory.path("alice.raw")))
        try LiveDevices.raw([bob]).write(to: URL(fileURLWithPath: directory.path("bob.raw")))
        let devices = try LiveDevices([("headset_a", directory.path("alice.raw")), ("headset_b", directory.path("bob.raw"))])
        defer { devices.directory.remove() }
        let detect = try CLI.run(["detect", directory.path("alice.wav"), directory.path("bob.wav")])
        let live = try LiveRunner.run([
            "live", "--alsa-config", devices.configuration, "--device", "headset_a", "--device", "headset_b",
            "--duration", "9", "--device-poll", "0",
        ])
        try #require(live.status == 0, "\(live.stderr)")
        let output = try LiveOutputLines(live.lines)
        // Streams of several devices are named <device>-ch<N>.
        let renamed = live.stdout.replacingOccurrences(of: "headset_a-ch1", with: "alice").replacingOccurrences(of: "headset_b-ch1", with: "bob")
        let events = try LiveOutputLines(renamed.split(separator: "\n").map(String.init)).events.events
        #expect(events == (try DetectOutput(lines: detect.lines)).events)
        #expect(output.device.count == 2)
    }

    @Test func a48kHzDeviceIsResampledAndAgreesWithDetect() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob, _) = try Self.room(in: directory)
        try TestAudio.writeWAV([alice, bob], to: directory.path("room16.wav"))
        try TestAudio.runTool("sox", ["-D", directory.path("room16.wav"), "-r", "48000", "-t", "raw", "-e", "signed", "-b", "16", directory.path("room48.raw")])
        let devices = try LiveDevices([("room48", directory.path("room48.raw"))])
        defer { devices.directory.remove() }
        let detect = try CLI.run(["detect", directory.path("alice.wav"), directory.path("bob.wav")])
        let live = try LiveRunner.run([
            "live", "--alsa-config", devices.configuration, "--device", "room48", "--rate", "48000",
            "--id", "alice=room48:1", "--id", "bob=room48:2", "--duration", "9", "--device-poll", "0",
        ])
        try #require(live.status == 0, "\(live.stderr)")
        let output = try LiveOutputLines(live.lines)
        let expected = try DetectOutput(lines: detect.lines)
        #expect(output.device.first?["rate"] as? Int == 48000)
        #expect(output.dominantSequence == ["alice", "bob", "alice"])
        // Resampled twice (sox up, libsoxr down): each decision within 30 ms of detect's.
        let got = output.events.events.filter { if case .levels = $0 { false } else { true } }
        try #require(got.count == expected.events.count, "\(live.stdout)")
        for (a, b) in zip(got, expected.events) {
            #expect(abs(a.t - b.t) <= 0.03, "\(a) vs \(b)")
        }
    }

    @Test func aFailingDeviceGivesAnEventAndAClearError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let raw = directory.path("speech.raw")
        try LiveDevices.raw([try TestAudio.speech("hello everyone this is a long sentence to keep talking", voice: "en-us")]).write(to: URL(fileURLWithPath: raw))
        let devices = try LiveDevices([("mic", raw)])
        defer { devices.directory.remove() }
        let result = try LiveRunner.run(["live", "--alsa-config", devices.configuration, "--device", "mic_failing", "--device-poll", "0"], timeout: 20)
        #expect(result.status == 1)
        #expect(result.errorLines == ["activespeaker: device mic_failing: snd_pcm_readi failed (alsa-lib: Input/output error)"])
        let output = try LiveOutputLines(result.lines)
        #expect(output.device.last?["event"] as? String == "failed")
        #expect(output.device.last?["error"] as? String == "device mic_failing: snd_pcm_readi failed (alsa-lib: Input/output error)")
        output.events.checkInvariants(ids: ["ch1"])
    }

    @Test func unknownDevicesFailBeforeAnyOutput() throws {
        let result = try CLI.run(["live", "--device", "no_such_device_here", "--device-poll", "0"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines == ["activespeaker: device no_such_device_here: no such device (alsa-lib: No such file or directory)"])
    }

    @Test("help fits 80 columns and documents the options", arguments: [["live", "--help"], ["listen", "--help"], ["help", "live"]])
    func help(arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 0)
        #expect(result.lines.filter { $0.count > 80 }.isEmpty)
        let options = arguments.contains("listen")
            ? ["--udp HOST:PORT", "--mode decode|levels", "--extmap-audio-level ID", "--ssrc ID=SSRC", "--jitter MS", "--stats"]
            : ["--device NAME", "--channels LIST", "--id ID=[DEVICE:]CHANNEL", "--list-devices", "--alsa-config FILE", "--device-poll MS"]
        for option in options { #expect(result.stdout.contains(option), "documents \(option)") }
        #expect(result.stdout.contains(#""type":"device""#) || result.stdout.contains(#""type":"stream""#))
    }

    @Test("command-line mistakes", arguments: [
        ["live"], ["live", "--device", "x", "--channels", "0"], ["live", "--device", "x", "--channels", "2-1"],
        ["live", "--device", "a", "--device", "b", "--id", "alice=1"], ["live", "--device", "x", "--id", "=1"],
        ["live", "--device", "x", "--rate", "5"], ["live", "--device", "x", "--duration", "-1"],
        ["live", "--device", "x", "--levels", "15"], ["live", "--device", "x", "--channels", "1", "--id", "a=1"],
    ])
    func usageErrors(arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
    }

    @Test func ctrlCStopsCleanlyAndFlushesTheLastEvents() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob, _) = try Self.room(in: directory)
        let fifo = directory.path("room.fifo")
        let devices = try LiveDevices([("paced", fifo)])
        defer { devices.directory.remove() }
        let writer = try PacedWriter(path: fifo, data: LiveDevices.raw([alice, bob]), bytesPerFrame: 4, rate: 16000)
        defer { writer.stop() }
        let live = try LiveRunner.Running([
            "live", "--alsa-config", devices.configuration, "--device", "paced", "--id", "alice=1", "--id", "bob=2",
            "--device-poll", "0",
        ])
        // Alice speaks from 0.4 s to 3.3 s; stop in the middle of her first sentence.
        #expect(live.waitForOutput(#""stream":"alice","active":true"#, timeout: 10))
        Thread.sleep(forTimeInterval: 0.5)
        live.interrupt()
        let result = try live.finish(timeout: 5)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        output.events.checkInvariants(ids: ["alice", "bob"])
        let speech = output.events.speechEvents
        try #require(speech.count == 2, "\(result.stdout)")
        guard case .speech(let t, "alice", false, _) = speech[1] else {
            Issue.record("the last event ends Alice's utterance: \(speech)")
            return
        }
        #expect(t > 0.9 && t < 3.3, "the run stopped about when Ctrl-C came, inside the sentence (t = \(t))")
        #expect(output.dominantSequence == ["alice"])
        #expect(output.events.dominant(at: .infinity) == nil, "the floor is released at the stop")
    }

    @Test func devicesAppearingAndDisappearingAreReported() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let fifo = directory.path("paced.fifo")
        let devices = try LiveDevices([("paced", fifo)])
        defer { devices.directory.remove() }
        let writer = try PacedWriter(
            path: fifo, data: LiveDevices.raw([Synthesis.noise(seconds: 8, levelDBFS: -60, seed: 4)]), bytesPerFrame: 2, rate: 16000)
        defer { writer.stop() }
        // alsa-lib reloads the files of ALSA_CONFIG_PATH when their modification time changes.
        let live = try LiveRunner.Running(
            ["live", "--device", "paced", "--device-poll", "100", "--json"], environment: devices.environment)
        // The run has started and listed its devices once it reports the opened microphone.
        #expect(live.waitForOutput(#""event":"opened""#, timeout: Waiting.defaultTimeout))
        let original = try String(contentsOfFile: devices.configuration, encoding: .utf8)
        let plugged = original + """
            pcm.usbmic {
                type file
                slave.pcm "null"
                file "/dev/null"
                infile "/dev/null"
                format "raw"
                hint { show on description "hot-plugged microphone" }
            }

            """
        try plugged.write(toFile: devices.configuration, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(2)], ofItemAtPath: devices.configuration)
        #expect(live.waitForOutput(#""event":"added""#, timeout: 5))
        try original.write(toFile: devices.configuration, atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(4)], ofItemAtPath: devices.configuration)
        #expect(live.waitForOutput(#""event":"removed""#, timeout: 5))
        live.interrupt()
        let result = try live.finish(timeout: 5)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        let changes = output.device.compactMap { line -> String? in
            guard let event = line["event"] as? String, event != "opened" else { return nil }
            return "\(event) \(line["device"] as? String ?? "") \(line["description"] as? String ?? "")"
        }
        #expect(changes == ["added usbmic hot-plugged microphone", "removed usbmic hot-plugged microphone"])
    }

    @Test func listDevicesUsesAlsaLib() throws {
        let devices = try LiveDevices([("listed", "/dev/null")])
        defer { devices.directory.remove() }
        let result = try LiveRunner.run(["live", "--list-devices"], environment: devices.environment)
        #expect(result.status == 0)
        let objects = result.lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(objects.count == result.lines.count)
        let listed = try #require(objects.first { $0["device"] as? String == "listed" })
        #expect(listed["description"] as? String == "test device listed")
        #expect(listed["capture"] as? Bool == true)
        #expect(listed["captureChannels"] as? String != nil, "the device was opened to read its channel range")
        #expect(objects.contains { $0["device"] as? String == "null" })
    }

    @Test(.enabled(if: LiveRunner.canRun(needing: "script"), "needs util-linux script (a terminal for the run)"))
    func aTerminalGetsTheLiveView() throws {
        try #require(LiveRunner.has("script"), "util-linux script gives the run a terminal")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob, _) = try Self.room(in: directory)
        let raw = directory.path("room.raw")
        try LiveDevices.raw([alice, bob]).write(to: URL(fileURLWithPath: raw))
        let devices = try LiveDevices([("room", raw)])
        defer { devices.directory.remove() }
        let executable = try #require(CLI.executable).path
        let command = "\(executable) live --alsa-config \(devices.configuration) --device room --id alice=1 --id bob=2 --duration 9 --device-poll 0"
        let (status, screen) = try Self.onTerminal(command, transcript: directory.path("transcript"))
        #expect(status == 0)
        #expect(screen.contains("dominant: alice") && screen.contains("dominant: bob"))
        #expect(screen.contains("\u{1B}[7m▶ alice"), "the dominant speaker's row is highlighted")
        #expect(screen.contains("● speaking"))
        #expect(!screen.contains("\"type\":\"speech\""), "no JSON on a terminal")
    }

    /// The view ends where the JSON Lines of the same run end (the floor released when the run stops
    /// mid-turn), and its status line is words, not a JSON line under the table.
    @Test(.enabled(if: LiveRunner.canRun(needing: "script"), "needs util-linux script (a terminal for the run)"))
    func theViewEndsAsTheEventsEnd() throws {
        try #require(LiveRunner.has("script"), "util-linux script gives the run a terminal")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (alice, bob, _) = try Self.room(in: directory)
        let raw = directory.path("room.raw")
        try LiveDevices.raw([alice, bob]).write(to: URL(fileURLWithPath: raw))
        let devices = try LiveDevices([("room", raw)])
        defer { devices.directory.remove() }
        // Stop at 5 s, while Bob holds the floor.
        let arguments = [
            "live", "--alsa-config", devices.configuration, "--device", "room", "--id", "alice=1", "--id", "bob=2",
            "--duration", "5", "--device-poll", "0", "--stats",
        ]
        let json = try CLI.run(arguments)
        #expect(json.status == 0, "\(json.stderr)")
        let events = try LiveOutputLines(json.lines).events
        #expect(events.dominant(at: 4.9) == "bob", "the run stops in Bob's turn: \(json.stdout)")
        let lastDominant = events.dominant(at: .infinity) ?? "nobody"

        let executable = try #require(CLI.executable).path
        let (status, screen) = try Self.onTerminal(([executable] + arguments).joined(separator: " "), transcript: directory.path("transcript"))
        #expect(status == 0)
        #expect(!screen.contains("{\""), "no JSON on the view: \(screen.suffix(600))")
        #expect(screen.contains("device room opened: rate 16000, channels 2"))
        #expect(screen.contains("stats: 5.000 s; room "), "the stats note is drawn")
        let shown = try #require(screen.ranges(of: "dominant: ").last.map { screen[$0.upperBound...].prefix { !$0.isWhitespace } })
        #expect(String(shown) == lastDominant, "the view ends on \(shown), the events on \(lastDominant)")
    }
}

extension TestAudio {
    /// The samples of a 16-bit mono WAV file written by `writeWAV`.
    static func speechSamples(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { bytes in
            (0..<(data.count - 44) / 2).map { Float(Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: 44 + 2 * $0, as: Int16.self))) / 32767 }
        }
    }
}

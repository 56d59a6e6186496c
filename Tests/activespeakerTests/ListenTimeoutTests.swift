import Foundation
import Testing
import TestSupport

/// `activespeaker listen --stream-timeout`: a stream whose SSRC stops sending is removed, and comes back
/// as a new stream when it sends again. Real RTP from an in-process sender on loopback, level-only mode
/// (a loud RFC 6464 level is speech, so no encoder is needed).
@Suite("activespeaker listen --stream-timeout", .serialized, .realTime)
struct ListenTimeoutTests {
    static let ssrc: UInt32 = 0x0A0B_0C0D

    /// `listen` in level-only mode with a 0.5 s stream timeout and a `levels` line every 100 ms.
    static func listen() throws -> (LiveRunner.Running, UInt16) {
        let listen = try LiveRunner.Running([
            "listen", "--udp", "127.0.0.1:0", "--mode", "levels", "--extmap-audio-level", "1", "--json", "--stats",
            "--stream-timeout", "0.5", "--levels", "100", "--ssrc", "alice=0x0a0b0c0d",
            // Only a bound: each test stops it with SIGINT once it has seen what it waits for.
            "--duration", "60",
        ])
        let port = try #require(listen.receivingAddresses().first.flatMap { UInt16(ListenTests.port($0)) }, "\(listen.stderr)")
        return (listen, port)
    }

    /// The lines of standard output so far that parse as JSON objects.
    static func objects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Waits until `listen` has written `count` `removed` lines and then a `levels` line 0.3 s (30 ticks)
    /// after the last of them: the positive event that shows the run went on without the stream.
    static func waitForRemoval(_ count: Int, of listen: LiveRunner.Running) -> Bool {
        Waiting.until(timeout: 30) {
            let lines = objects(listen.stdout)
            let removals = lines.filter { $0["type"] as? String == "stream" && $0["event"] as? String == "removed" }
            guard removals.count >= count, let removedAt = removals[count - 1]["t"] as? Double else { return !listen.process.isRunning }
            return lines.contains { $0["type"] as? String == "levels" && ($0["t"] as? Double ?? 0) >= removedAt + 0.3 }
        }
    }

    /// The streams a `levels` line names, by its time.
    static func levelNames(_ output: LiveOutputLines) -> [(t: Double, names: Set<String>)] {
        output.events.levelEvents.compactMap { event in
            if case .levels(let t, let levels) = event { (t, Set(levels.keys)) } else { nil }
        }
    }

    @Test func aStreamThatStopsSendingIsRemovedAfterTheTimeout() throws {
        let (listen, port) = try Self.listen()
        ListenTests.sendLevels(port: port, level: 20, seconds: 1, ssrc: Self.ssrc)
        let removed = Self.waitForRemoval(1, of: listen)
        listen.interrupt()
        let result = try listen.finish(timeout: 10)
        try #require(removed, "no removal: \(result.stdout)")
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        output.events.checkInvariants(ids: ["alice"])

        #expect(output.stream.map { $0["event"] as? String } == ["added", "removed"], "\(result.stdout)")
        #expect(output.stream.allSatisfy { $0["stream"] as? String == "alice" && $0["ssrc"] as? String == "0x0a0b0c0d" })
        let added = try #require(output.stream.first?["t"] as? Double)
        let removal = try #require(output.stream.last)
        let removedAt = try #require(removal["t"] as? Double), lastPacket = try #require(removal["lastPacket"] as? Double)
        // Removed exactly 0.5 s (50 ticks) after the last accepted packet, which came about 1 s (50 packets
        // of 20 ms) after the first: the packets while it sent kept it.
        #expect(abs(removedAt - lastPacket - 0.5) < 1e-9, "\(removal)")
        #expect(lastPacket - added > 0.7, "\(removal), added at \(added)")

        // Alice spoke, held the floor while silent, and lost it with her removal.
        #expect(output.events.speechSegments.map(\.speaker) == ["alice"], "\(result.stdout)")
        #expect(output.dominantSequence == ["alice"])
        #expect(output.events.dominant(at: removedAt - 0.01) == "alice", "\(result.stdout)")
        #expect(output.events.dominantEvents.last == .dominant(t: removedAt, stream: nil), "\(result.stdout)")

        // Levels lines name her until her removal, and not after it (the last 0.3 s or more of the run).
        let levels = Self.levelNames(output)
        #expect(levels.contains { $0.t < removedAt && $0.names == ["alice"] })
        let after = levels.filter { $0.t >= removedAt }
        #expect(after.count >= 3 && after.allSatisfy { $0.names.isEmpty }, "\(after)")

        let stats = try #require(output.stats)
        let alice = try #require((stats["streams"] as? [String: [String: Int]])?["alice"], "\(stats)")
        #expect(alice["packets"] == 50 && alice["removed"] == 1, "\(alice)")
    }

    @Test func theSameSSRCSendingAgainIsAStreamAgain() throws {
        let (listen, port) = try Self.listen()
        ListenTests.sendLevels(port: port, level: 20, seconds: 1, ssrc: Self.ssrc)
        let first = Self.waitForRemoval(1, of: listen)
        if first { ListenTests.sendLevels(port: port, level: 20, seconds: 1, ssrc: Self.ssrc) }
        let second = first && Self.waitForRemoval(2, of: listen)
        listen.interrupt()
        let result = try listen.finish(timeout: 10)
        try #require(first && second, "not removed twice: \(result.stdout)")
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        output.events.checkInvariants(ids: ["alice"])

        #expect(output.stream.map { $0["event"] as? String } == ["added", "removed", "added", "removed"], "\(result.stdout)")
        #expect(output.stream.allSatisfy { $0["stream"] as? String == "alice" && $0["ssrc"] as? String == "0x0a0b0c0d" })
        let times = output.stream.compactMap { $0["t"] as? Double }
        try #require(times.count == 4)
        #expect(times == times.sorted())

        // Analysed again: she speaks and takes the floor once in each of her two lives, and the levels lines
        // name her in each.
        let segments = output.events.speechSegments.filter { $0.speaker == "alice" }
        #expect(segments.count == 2, "\(result.stdout)")
        #expect(segments.last.map { $0.start > times[2] } == true, "\(segments), added again at \(times[2])")
        #expect(output.dominantSequence == ["alice", "alice"], "\(result.stdout)")
        let levels = Self.levelNames(output)
        #expect(levels.contains { $0.t > times[2] && $0.t < times[3] && $0.names == ["alice"] })
        #expect(levels.filter { $0.t > times[1] && $0.t < times[2] }.allSatisfy { $0.names.isEmpty })
        #expect(levels.filter { $0.t >= times[3] }.allSatisfy { $0.names.isEmpty })

        // The stats add up both lives.
        let stats = try #require(output.stats)
        let alice = try #require((stats["streams"] as? [String: [String: Int]])?["alice"], "\(stats)")
        #expect(alice["packets"] == 100 && alice["removed"] == 2, "\(alice)")
    }

    /// On a terminal, a removed stream's row leaves the view (the lines it used are cleared) while the
    /// stream that still sends keeps its row, and the status line says what happened.
    @Test(.enabled(if: LiveRunner.canRun(needing: "script"), "needs util-linux script (a terminal for the run)"))
    func theViewDropsARemovedStream() throws {
        try #require(LiveRunner.has("script"), "util-linux script gives the run a terminal")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let transcript = directory.path("transcript")
        _ = FileManager.default.createFile(atPath: transcript, contents: nil)
        let executable = try #require(CLI.executable).path
        let script = Process()
        script.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        // Alice stops after 1 s and is removed 0.5 s later; Bob sends for 4 s from after the start, so he is
        // still there when the run ends at 4 s.
        script.arguments = [
            "-qec",
            "\(executable) listen --udp 127.0.0.1:0 --mode levels --extmap-audio-level 1 --stream-timeout 0.5 --duration 4 "
                + "--ssrc alice=0x0a0b0c0d --ssrc bob=0x0a0b0c0e",
            "/dev/null",
        ]
        script.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: transcript))
        script.standardInput = FileHandle.nullDevice
        try script.run()
        defer {
            if script.isRunning { script.terminate() }
            script.waitUntilExit()
        }
        let screen = { (try? String(contentsOfFile: transcript, encoding: .utf8)) ?? "" }
        var port: UInt16?
        _ = Waiting.until {
            port = screen().firstMatch(of: /receiving RTP on 127\.0\.0\.1:(\d+)/).flatMap { UInt16($0.1) }
            return port != nil || !script.isRunning
        }
        let bound = try #require(port, "no port: \(screen())")
        let bob = DispatchGroup()
        DispatchQueue.global().async(group: bob) { ListenTests.sendLevels(port: bound, level: 30, seconds: 4, ssrc: 0x0A0B_0C0E) }
        ListenTests.sendLevels(port: bound, level: 20, seconds: 1, ssrc: Self.ssrc)
        bob.wait()
        #expect(Waiting.until { !script.isRunning }, "listen did not end")
        let text = screen()

        // Each drawing starts with its title line and ends with the status line.
        let frames = text.components(separatedBy: "activespeaker  ").dropFirst()
        let row = { (name: String, frame: String) in frame.contains(try! Regex("\(name) +[█░]")) }
        #expect(frames.contains { row("alice", $0) }, "alice had a row")
        let removal = try #require(
            frames.firstIndex { $0.contains("stream alice removed: ssrc 0x0a0b0c0d, lastPacket ") }, "\(text.suffix(600))")
        // From the first drawing that says so on: no row for her, his row still there; that first drawing,
        // one row shorter than the last, clears the old lines below it.
        #expect(frames[removal].contains("\u{1B}[J"), "\(frames[removal])")
        #expect(frames[removal...].allSatisfy { !row("alice", $0) && row("bob", $0) }, "\(frames.last ?? "")")
    }

    @Test("bad --stream-timeout values are command-line mistakes", arguments: [
        ("0", "--stream-timeout 0: expected a positive number of seconds"),
        ("-1", "--stream-timeout -1: expected a positive number of seconds"),
        ("abc", "--stream-timeout abc: expected a positive number of seconds"),
        ("nan", "--stream-timeout nan: expected a positive number of seconds"),
        ("0.05", "--stream-timeout 0.05: must be longer than the jitter delay (60 ms)"),
    ])
    func badTimeouts(value: String, message: String) throws {
        let result = try CLI.run(["listen", "--udp", "127.0.0.1:0", "--stream-timeout=\(value)", "--duration", "1"])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines == ["activespeaker: \(message); see 'activespeaker listen --help'"])
    }

    @Test func theTimeoutIsInTheHelp() throws {
        let result = try CLI.run(["listen", "--help"])
        #expect(result.status == 0)
        #expect(result.stdout.contains("--stream-timeout SECONDS"))
        #expect(result.stdout.contains(#""event":"removed""#))
    }
}

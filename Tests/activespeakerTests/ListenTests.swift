import Foundation
import Testing
import TestSupport

/// `activespeaker listen` against real RTP senders no one here wrote — GStreamer (Opus with RFC 6464
/// levels) and ffmpeg (Opus without levels) — on loopback addresses only, several at once.
@Suite("activespeaker listen (GStreamer and ffmpeg senders on loopback)", .serialized, .realTime)
struct ListenTests {
    /// Talkers taking turns: each file holds silence, then the talker's speech at `at`, then silence.
    static func turns(in directory: TemporaryDirectory, length: Double = 9.5) throws -> [String: String] {
        let script: [(String, String, Double, String)] = [
            ("alice", "good morning everyone and welcome to the weekly call", 0.5, "en-gb+f3"),
            ("bob", "thanks alice the numbers look good this week", 3.9, "en-us"),
            ("carol", "i agree with both of you", 7.2, "en-gb+f4"),
        ]
        var paths: [String: String] = [:]
        for (name, text, at, voice) in script {
            var samples = [Float](repeating: 0, count: Int(length * 16000))  // digital silence around the speech
            Synthesis.add(try TestAudio.speech(text, voice: voice), into: &samples, at: at)
            let path = directory.path("\(name).wav")
            try TestAudio.writeWAV([Array(samples.prefix(Int(length * 16000)))], to: path)
            paths[name] = path
        }
        return paths
    }

    /// The port of a `HOST:PORT` or `[V6]:PORT` address as `listen` reports it.
    static func port(_ address: String) -> String { String(address.split(separator: ":").last ?? "") }

    static func sender(_ script: String, _ arguments: [String]) throws -> LiveRunner.Helper {
        try LiveRunner.Helper("bash", [LiveRunner.tools.appendingPathComponent("network").appendingPathComponent(script).path] + arguments)
    }

    @Test(.enabled(if: LiveRunner.canRun(needing: "gst-launch-1.0", "ffmpeg"), "needs gst-launch-1.0 and ffmpeg: bash tools/install-deps.sh"))
    func decodeModeFollowsThreeSendersOverIPv4AndIPv6() throws {
        try #require(LiveRunner.has("gst-launch-1.0") && LiveRunner.has("ffmpeg"), "run tools/install-deps.sh")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try Self.turns(in: directory)
        let listen = try LiveRunner.Running([
            // A generous jitter delay and duration: the machine may be busy with other tests.
            "listen", "--udp", "127.0.0.1:0", "--udp", "[::1]:0", "--duration", "14", "--stats", "--jitter", "200",
            "--ssrc", "alice=0x1001", "--ssrc", "bob=0x1002", "--ssrc", "carol=0x1003",
        ])
        let addresses = listen.receivingAddresses()
        try #require(addresses.count == 2, "\(listen.stderr)")
        let (v4, v6) = (Self.port(addresses[0]), Self.port(addresses[1]))
        let senders = [
            try Self.sender("rtp_send_gstreamer.sh", [files["alice"]!, "127.0.0.1", v4, "0x1001"]),
            try Self.sender("rtp_send_gstreamer.sh", [files["bob"]!, "::1", v6, "0x1002"]),
            try Self.sender("rtp_send_ffmpeg.sh", [files["carol"]!, "127.0.0.1", v4, "0x1003"]),
        ]
        for sender in senders { #expect(sender.wait(timeout: 20) == 0) }
        let result = try listen.finish(timeout: 15)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        output.events.checkInvariants(ids: ["alice", "bob", "carol"])
        #expect(Set(output.stream.compactMap { $0["stream"] as? String }) == ["alice", "bob", "carol"])
        #expect(output.dominantSequence == ["alice", "bob", "carol"], "\(result.stdout)")
        // Each talker's speech is found near where it is in the file, counted from its stream's first packet
        // (a sender process starts when the machine lets it: on a loaded machine ffmpeg started 1.2 s after
        // listen): after it, by the 200 ms jitter delay and the decision, so by well under a second.
        let starts = Dictionary(grouping: output.events.speechSegments, by: \.speaker).mapValues { $0.map(\.start).min()! }
        let firstPackets = Dictionary(
            output.stream.filter { $0["event"] as? String == "added" }.compactMap { line -> (String, Double)? in
                guard let name = line["stream"] as? String, let t = line["t"] as? Double else { return nil }
                return (name, t)
            }, uniquingKeysWith: min)
        for (name, at) in [("alice", 0.5), ("bob", 3.9), ("carol", 7.2)] {
            let start = try #require(starts[name], "\(name) never spoke: \(result.stdout)")
            let firstPacket = try #require(firstPackets[name], "no stream line for \(name): \(result.stdout)")
            #expect(start - firstPacket > at && start - firstPacket < at + 1.0, "\(name) starts at \(start), its first packet at \(firstPacket)")
        }
        let stats = try #require(output.stats)
        #expect((stats["malformed"] as? [String: Int])?.values.allSatisfy { $0 == 0 } == true)
        #expect((stats["packets"] as? Int ?? 0) > 3 * 400, "three 9.5 s streams of 20 ms packets")
    }

    /// A new RTP stream starts after the digital silence before its first packet (issue 13): the room's
    /// noise starting is not speech, and a talker is found where `detect` finds him in the same file.
    /// Before the engine's resume gate, pink and brown noise "spoke" within 0.1 s of their first packet.
    /// `config`: nil runs the defaults; the gate switched off shows that the test can fail.
    @Test(
        .enabled(if: LiveRunner.canRun(needing: "gst-launch-1.0", "ffmpeg"), "needs gst-launch-1.0 and ffmpeg: bash tools/install-deps.sh"),
        arguments: [nil, "vad.resumeGate=false"] as [String?])
    func aNewStreamsNoiseIsNotSpeech(config: String?) throws {
        try #require(LiveRunner.has("gst-launch-1.0") && LiveRunner.has("ffmpeg"), "run tools/install-deps.sh")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let pink = directory.path("pink.wav"), brown = directory.path("brown.wav")
        try TestAudio.writeWAV([Synthesis.colouredNoise(.pink, seconds: 5, levelDBFS: -45, seed: 31)], to: pink)
        try TestAudio.writeWAV([Synthesis.colouredNoise(.brown, seconds: 5, levelDBFS: -35, seed: 32)], to: brown)
        // Room noise, his first words at 1.24 s: the first 5 s.
        let bob = directory.path("bob.wav")
        let trim = try LiveRunner.Helper("sox", [FixturePaths.file("meetings/m1-clean/bob.flac"), bob, "trim", "0", "5"])
        try #require(trim.wait(timeout: 20) == 0)
        let listen = try LiveRunner.Running(
            ["listen", "--udp", "127.0.0.1:0", "--duration", "9", "--jitter", "200",
             "--ssrc", "pink=0x2001", "--ssrc", "brown=0x2002", "--ssrc", "pinkff=0x2003", "--ssrc", "bob=0x2004"]
                + (config.map { ["--config", $0] } ?? []))
        let port = try #require(listen.receivingAddresses().first.map(Self.port), "\(listen.stderr)")
        let senders = [
            try Self.sender("rtp_send_gstreamer.sh", [pink, "127.0.0.1", port, "0x2001"]),
            try Self.sender("rtp_send_gstreamer.sh", [brown, "127.0.0.1", port, "0x2002"]),
            try Self.sender("rtp_send_ffmpeg.sh", [pink, "127.0.0.1", port, "0x2003"]),
            try Self.sender("rtp_send_gstreamer.sh", [bob, "127.0.0.1", port, "0x2004"]),
        ]
        for sender in senders { #expect(sender.wait(timeout: 40) == 0) }
        let result = try listen.finish(timeout: 20)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        let added = Dictionary(output.stream.compactMap { line in
            (line["stream"] as? String).flatMap { name in (line["t"] as? Double).map { (name, $0) } }
        }, uniquingKeysWith: min)
        let starts = Dictionary(grouping: output.events.speechSegments, by: \.speaker).mapValues { $0.map(\.start).min()! }
        // Bob is found in the file as `detect` finds him (1.22 s), after his stream's first packet.
        let bobAdded = try #require(added["bob"], "\(result.stdout)")
        let bobStart = try #require(starts["bob"], "bob never spoke: \(result.stdout)")
        if config == nil {
            for noise in ["pink", "brown", "pinkff"] {
                #expect(added[noise] != nil, "\(noise) never arrived: \(result.stdout)")
                #expect(starts[noise] == nil, "\(noise) speaks \((starts[noise] ?? 0) - (added[noise] ?? 0)) s after its first packet")
            }
            #expect(bobStart - bobAdded > 1.1 && bobStart - bobAdded < 2.2, "bob from \(bobStart - bobAdded) s after his first packet")
        } else {
            // The defect without the gate: some noise, or bob's room noise, speaks at once.
            let early = ["pink", "brown", "pinkff"].contains { starts[$0] != nil } || bobStart - bobAdded < 1.1
            #expect(early, "\(result.stdout)")
        }
    }

    @Test(.enabled(if: LiveRunner.canRun(needing: "gst-launch-1.0"), "needs gst-launch-1.0: bash tools/install-deps.sh"))
    func levelModeCopesWithGStreamersSilenceLevel() throws {
        try #require(LiveRunner.has("gst-launch-1.0"), "run tools/install-deps.sh")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try Self.turns(in: directory, length: 7)
        let listen = try LiveRunner.Running([
            "listen", "--udp", "127.0.0.1:0", "--mode", "levels", "--extmap-audio-level", "1", "--duration", "10",
            "--jitter", "200",
            "--levels", "500", "--ssrc", "alice=4097", "--ssrc", "bob=0x1002",
        ])
        let port = try #require(listen.receivingAddresses().first.map(Self.port), "\(listen.stderr)")
        let senders = [
            try Self.sender("rtp_send_gstreamer.sh", [files["alice"]!, "127.0.0.1", port, "0x1001"]),
            try Self.sender("rtp_send_gstreamer.sh", [files["bob"]!, "127.0.0.1", port, "0x1002"]),
        ]
        for sender in senders { #expect(sender.wait(timeout: 20) == 0) }
        let result = try listen.finish(timeout: 15)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        output.events.checkInvariants(ids: ["alice", "bob"])
        #expect(output.dominantSequence == ["alice", "bob"], "\(result.stdout)")
        // Bob's digital silence (level 59) while Alice talks is not speech: one utterance each.
        let segments = output.events.speechSegments
        #expect(segments.filter { $0.speaker == "alice" }.count == 1)
        #expect(segments.filter { $0.speaker == "bob" }.count == 1)
        // GStreamer reports digital silence as −59 dBov, which the levels lines show.
        let silentLevels = output.events.levelEvents.compactMap { event -> Double? in
            if case .levels(let t, let levels) = event, t < 3 { return levels["bob"] }
            return nil
        }
        #expect(silentLevels.contains(-59))
    }

    /// Sends `seconds` of 20 ms RTP packets to 127.0.0.1:`port` in real time, each with an RFC 6464
    /// level (`level` −dBov, V flag set) in a one-byte header extension of id 1.
    static func sendLevels(port: UInt16, level: UInt8, seconds: Double, ssrc: UInt32 = 0x0A0B_0C0D) {
        let packets = (0..<Int(seconds * 50)).map { index -> [UInt8] in
            let sequence = UInt16(index), timestamp = UInt32(960 * index)
            var packet: [UInt8] = [0x90, 96, UInt8(sequence >> 8), UInt8(sequence & 0xFF)]
            packet += withUnsafeBytes(of: timestamp.bigEndian, Array.init) + withUnsafeBytes(of: ssrc.bigEndian, Array.init)
            packet += [0xBE, 0xDE, 0, 1, 0x10, 0x80 | level, 0, 0]  // one element (id 1, one byte), padding
            packet += [0xF8, 0xFF, 0xFE]  // an Opus frame, not decoded in levels mode
            return packet
        }
        send(packets, toLoopbackPort: port, every: 20_000_000)
    }

    /// Sends `datagrams` to 127.0.0.1:`port` from a fresh UDP socket: at once, or the k-th due
    /// `(k + 1) × interval` nanoseconds after the start (real-time pacing, absolute due times).
    static func send(_ datagrams: [[UInt8]], toLoopbackPort port: UInt16, every interval: UInt64? = nil) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let start = DispatchTime.now().uptimeNanoseconds
        for (index, datagram) in datagrams.enumerated() {
            _ = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, datagram, datagram.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard let interval else { continue }
            let due = start + UInt64(index + 1) * interval
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
        }
    }

    /// `--config` applies in level-only mode too: a loud stream is speech by default and none when
    /// `vad.minimumLevel` is above its level.
    @Test(arguments: [(nil as String?, 1), ("vad.minimumLevel=-10", 0)])
    func configAppliesInLevelMode(config: String?, utterances: Int) throws {
        let listen = try LiveRunner.Running(
            ["listen", "--udp", "127.0.0.1:0", "--mode", "levels", "--extmap-audio-level", "1", "--duration", "3", "--json"]
                + (config.map { ["--config", $0] } ?? []))
        let port = try #require(listen.receivingAddresses().first.flatMap { UInt16(Self.port($0)) }, "\(listen.stderr)")
        Self.sendLevels(port: port, level: 20, seconds: 1.5)
        let result = try listen.finish(timeout: 10)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        #expect(output.events.speechSegments.count == utterances, "\(config ?? "defaults"): \(result.stdout)")
    }

    @Test func malformedPacketsAreCountedAndDropped() throws {
        let listen = try LiveRunner.Running(["listen", "--udp", "127.0.0.1:0", "--duration", "2", "--stats", "--json"])
        let port = try #require(listen.receivingAddresses().first.flatMap { UInt16(Self.port($0)) }, "\(listen.stderr)")
        var datagrams: [[UInt8]] = [
            [], [0x80], Array(repeating: 0x40, count: 20),  // too short, too short, version 1
            [0x90, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xBE, 0xDE, 0, 9, 0x10, 5],  // extension past the end
            [0x90, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xBE, 0xDE, 0, 1, 0x1F, 0, 0, 0, 0xF8],  // element past its block
            [0xA0, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xF8, 0x00],  // padding count 0
            [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2],  // no payload
            [0x80, 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0x03, 0x00],  // invalid Opus (code 3, no frames)
            [0x81, 201, 0, 1, 0, 0, 0, 2],  // RTCP receiver report: ignored, not malformed
        ]
        // And valid packets of one stream: Opus silence frames (TOC 0xF8, 20 ms CELT).
        for index in 0..<5 {
            let timestamp = UInt32(960 * index)
            datagrams.append(
                [0x80, 96, 0, UInt8(index), UInt8(timestamp >> 24), UInt8(timestamp >> 16 & 0xFF), UInt8(timestamp >> 8 & 0xFF),
                 UInt8(timestamp & 0xFF), 0, 0, 0, 7, 0xF8, 0xFF, 0xFE])
        }
        Self.send(datagrams, toLoopbackPort: port)
        let result = try listen.finish(timeout: 10)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try LiveOutputLines(result.lines)
        let stats = try #require(output.stats)
        #expect(stats["malformed"] as? [String: Int] == [
            "tooShort": 2, "badVersion": 1, "badExtensionLength": 2, "badPadding": 1, "emptyPayload": 1, "invalidOpus": 1,
        ])
        #expect(stats["ignored"] as? Int == 1)
        #expect(stats["packets"] as? Int == 6)
        let stream = try #require((stats["streams"] as? [String: [String: Int]])?["ssrc-00000007"])
        #expect(stream["packets"] == 5 && stream["played"] == 5)
    }

    @Test("command-line mistakes", arguments: [
        ["listen"], ["listen", "--udp", "127.0.0.1:5004", "--mode", "loud"],
        ["listen", "--udp", "127.0.0.1:5004", "--mode", "levels"],
        ["listen", "--udp", "127.0.0.1:5004", "--extmap-audio-level", "0"],
        ["listen", "--udp", "127.0.0.1:5004", "--ssrc", "alice"], ["listen", "--udp", "127.0.0.1:5004", "--ssrc", "a=0xZZ"],
        ["listen", "--udp", "127.0.0.1:5004", "--jitter", "5000"],
        // Not HOST:PORT, or a port out of range: command-line mistakes too, not bind failures.
        ["listen", "--udp", "127.0.0.1:80000"], ["listen", "--udp", "[::1]:65536"], ["listen", "--udp", "127.0.0.1:-1"],
        ["listen", "--udp", "127.0.0.1"], ["listen", "--udp", "::1:5004"], ["listen", "--udp", "127.0.0.1:0x10"],
    ])
    func usageErrors(arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
    }

    @Test func unusableAddressesAreClearErrors() throws {
        let bad = try CLI.run(["listen", "--udp", "127.0.0.1:80000", "--duration", "1"])
        #expect(bad.status == 64)
        #expect(bad.errorLines == [
            "activespeaker: --udp 127.0.0.1:80000: the port must be a number 0-65535; see 'activespeaker listen --help'"
        ])
        let unknown = try CLI.run(["listen", "--udp", "no-such-host.invalid:5004", "--duration", "1"])
        #expect(unknown.status == 1, "\(unknown.stderr)")
        let first = try LiveRunner.Running(["listen", "--udp", "127.0.0.1:0", "--duration", "3"])
        let taken = try #require(first.receivingAddresses().first, "\(first.stderr)")
        let second = try CLI.run(["listen", "--udp", taken, "--duration", "1"])
        #expect(second.status == 1)
        #expect(second.errorLines.first?.hasPrefix("activespeaker: \(taken): bind failed (system: Address already in use)") == true)
        first.interrupt()
        #expect(try first.finish(timeout: 5).status == 0)
    }
}

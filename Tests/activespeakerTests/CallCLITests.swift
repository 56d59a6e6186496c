import Foundation
import Testing
import TestSupport

/// `serve`, `token` and `join` as a user runs them, with real RTP senders (GStreamer, ffmpeg) joining
/// through the plain-RTP ingest. Loopback only, ports chosen by the system.
@Suite("activespeaker serve/join (three clients, GStreamer and ffmpeg ingest)", .serialized, .realTime)
struct CallCLITests {
    static let secret = "cli-test-secret-0123456789"

    /// Starts `serve` on free ports and returns it with its HTTP and RTP ports.
    static func serve(_ extra: [String] = []) throws -> (LiveRunner.Running, http: Int, rtp: Int) {
        let server = try LiveRunner.Running(["serve", "--listen", "127.0.0.1:0", "--secret", secret, "--room", "demo"] + extra)
        try #require(server.waitForOutput("\"listening\"", timeout: 10), "serve did not start: \(server.stdout)")
        let line = try #require(server.stdout.split(separator: "\n").first { $0.contains("\"listening\"") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return (server, try #require(object["http"] as? Int), try #require(object["rtp"] as? Int))
    }

    static func token(_ participant: String, room: String = "demo", role: String = "publisher") throws -> String {
        let result = try CLI.run(["token", "--secret", secret, "--room", room, "--participant", participant, "--role", role])
        try #require(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The JSON lines of a `join` run.
    static func events(_ stdout: String) -> [[String: Any]] {
        stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    /// Named speakers in order, nobody and repeats dropped.
    static func speakers(_ events: [[String: Any]]) -> [String] {
        events.filter { $0["type"] as? String == "speaker-changed" }.compactMap { $0["participant"] as? String }
            .reduce(into: []) { if $0.last != $1 { $0.append($1) } }
    }

    @Test func threeJoinClientsAllReceiveTheSpeakerSequence() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try ListenTests.turns(in: directory)
        let (server, http, _) = try Self.serve()
        var clients: [(String, LiveRunner.Running)] = []
        // The files play in step from a common instant, however long each client takes to join.
        let startAt = String(format: "%.3f", Date().timeIntervalSince1970 + 5)
        for name in ["alice", "bob", "carol"] {
            let arguments = [
                "join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", try Self.token(name),
                "--mic", files[name]!, "--silence-after", "1.5", "--start-at", startAt,
            ]
            clients.append((name, try LiveRunner.Running(arguments)))
        }
        for (name, client) in clients {
            let result = try client.finish(timeout: 40)
            #expect(result.status == 0, "\(name): \(result.stderr)")
            let events = Self.events(result.stdout)
            #expect(Self.speakers(events) == ["alice", "bob", "carol"], "\(name): \(result.stdout)")
            let left = try #require(events.last { $0["type"] as? String == "left" }, "\(result.stdout)")
            let packets = try #require(left["packets"] as? [String: Int])
            // Every client heard the other two (forwarded RTP), about 50 packets a second.
            #expect(Set(packets.keys) == Set(["alice", "bob", "carol"]).subtracting([name]), "\(packets)")
            #expect(packets.values.allSatisfy { $0 > 200 }, "\(packets)")
        }
        server.interrupt()
        let served = try server.finish(timeout: 10)
        #expect(served.status == 0, "\(served.stderr)")
        #expect(served.stdout.contains(#""type":"stats""#))
    }

    @Test(.enabled(if: LiveRunner.canRun(needing: "gst-launch-1.0", "ffmpeg", "curl"), "needs gst-launch-1.0, ffmpeg and curl: bash tools/install-deps.sh"))
    func gstreamerAndFfmpegPublishThroughTheIngest() throws {
        try #require(LiveRunner.has("gst-launch-1.0") && LiveRunner.has("ffmpeg") && LiveRunner.has("curl"), "run tools/install-deps.sh")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try ListenTests.turns(in: directory)
        let (server, http, rtp) = try Self.serve()
        let admin = try Self.token("admin", room: "*", role: "moderator")
        for (id, ssrc) in [("gst", 0x2001), ("ffmpeg", 0x2002)] {
            let body = #"{"participantId":"\#(id)","displayName":"\#(id) sender","source":"127.0.0.1","ssrc":\#(ssrc)}"#
            let status = try LiveRunner.httpStatus([
                "-X", "POST", "-H", "Authorization: Bearer \(admin)", "-H", "Content-Type: application/json",
                "--data", body, "http://127.0.0.1:\(http)/v1/rooms/demo/ingest",
            ])
            #expect(status == "201", "ingest \(id): HTTP \(status)")
        }
        let listener = try LiveRunner.Running([
            "join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", try Self.token("listener", role: "subscriber"),
            "--mic", "none", "--duration", "13",
        ])
        #expect(listener.waitForOutput(#""type":"joined""#, timeout: Waiting.defaultTimeout))
        let senders = [
            try ListenTests.sender("rtp_send_gstreamer.sh", [files["alice"]!, "127.0.0.1", "\(rtp)", "0x2001"]),
            try ListenTests.sender("rtp_send_ffmpeg.sh", [files["bob"]!, "127.0.0.1", "\(rtp)", "0x2002"]),
            // Not bound to anyone: dropped.
            try ListenTests.sender("rtp_send_gstreamer.sh", [files["carol"]!, "127.0.0.1", "\(rtp)", "0x2003"]),
        ]
        for sender in senders { #expect(sender.wait(timeout: 25) == 0) }
        let result = try listener.finish(timeout: 20)
        #expect(result.status == 0, "\(result.stderr)")
        let events = Self.events(result.stdout)
        #expect(Self.speakers(events) == ["gst", "ffmpeg"], "\(result.stdout)")
        let left = try #require(events.last { $0["type"] as? String == "left" }, "\(result.stdout)")
        let packets = try #require(left["packets"] as? [String: Int])
        #expect(Set(packets.keys) == ["gst", "ffmpeg"] && packets.values.allSatisfy { $0 > 200 }, "\(packets)")
        server.interrupt()
        let served = try server.finish(timeout: 10)
        let stats = try #require(Self.events(served.stdout).last { $0["type"] as? String == "stats" }, "\(served.stdout)")
        #expect((stats["unknownSSRC"] as? Int ?? 0) > 200, "\(stats)")
    }

    /// `--levels MS`, as in detect, live and listen: audio-levels lines at most every MS (the server
    /// sends them every 200 ms).
    @Test func joinPrintsLevelsEveryMS() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let mic = directory.path("mic.wav")
        try TestAudio.writeWAV([Synthesis.noise(seconds: 3, levelDBFS: -20, seed: 3)], to: mic)
        let (server, http, _) = try Self.serve()
        defer { _ = try? server.finish(timeout: 5) }
        defer { server.interrupt() }
        let result = try CLI.run([
            "join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", try Self.token("levels"), "--mic", mic,
            "--levels", "600",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let times = Self.events(result.stdout).filter { $0["type"] as? String == "audio-levels" }.compactMap { $0["t"] as? Double }
        #expect(times.count >= 2, "\(result.stdout)")
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 0.5 }, "\(times)")
        for bad in ["15", "0", "x"] {
            let usage = try CLI.run(["join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", "t", "--levels", bad])
            #expect(usage.status == 64 && usage.stderr.contains("--levels \(bad)"), "\(usage.stderr)")
        }
    }

    /// join's messages name join, not serve (they share the line writer).
    @Test func joinNamesItselfWhenItsOutputFails() throws {
        let (server, http, _) = try Self.serve()
        defer { _ = try? server.finish(timeout: 5) }
        defer { server.interrupt() }
        let executable = try #require(CLI.executable)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let errors = directory.path("stderr")
        _ = FileManager.default.createFile(atPath: errors, contents: nil)
        let join = Process()
        join.executableURL = executable
        join.arguments = [
            "join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", try Self.token("full"), "--mic", "none",
            "--duration", "1",
        ]
        join.standardInput = FileHandle.nullDevice
        join.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: "/dev/full"))  // every write fails: ENOSPC
        join.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errors))
        try join.run()
        join.waitUntilExit()
        let stderr = try String(contentsOfFile: errors, encoding: .utf8)
        #expect(join.terminationStatus == 0, "\(stderr)")
        #expect(stderr.hasPrefix("activespeaker join: cannot write"), "\(stderr)")
        #expect(!stderr.contains("serve"), "\(stderr)")
    }

    @Test func joinExplainsWhyItCannotJoin() throws {
        let (server, http, _) = try Self.serve()
        defer { _ = try? server.finish(timeout: 5) }
        defer { server.interrupt() }
        let forged = try CLI.run(["token", "--secret", "some-other-secret-123456", "--room", "demo", "--participant", "x"])
        let refused = try CLI.run(["join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", forged.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "--mic", "none"])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("(4001)"), "\(refused.stderr)")
        let missing = try CLI.run(["join", "--server", "ws://127.0.0.1:\(http)", "--room", "nope", "--token", try Self.token("x", room: "nope"), "--mic", "none"])
        #expect(missing.status == 1 && missing.stderr.contains("(4003)"), "\(missing.stderr)")
        let badFile = try CLI.run(["join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", try Self.token("x"), "--mic", "/no/such.wav"])
        #expect(badFile.status == 1 && badFile.stderr.contains("/no/such.wav"), "\(badFile.stderr)")
        // A microphone that cannot be opened stops join before it joins (it used to join without one).
        let noDevice = try CLI.run([
            "join", "--server", "ws://127.0.0.1:\(http)", "--room", "demo", "--token", try Self.token("x"),
            "--mic", "alsa:no_such_pcm_here", "--duration", "2",
        ])
        #expect(noDevice.status == 1, "\(noDevice.stdout)")
        #expect(noDevice.errorLines.count == 1 && noDevice.stderr.contains("(3002)") && noDevice.stderr.contains("no_such_pcm_here"),
                "\(noDevice.stderr)")
        #expect(!noDevice.stdout.contains(#""type":"joined""#), "\(noDevice.stdout)")
        let usage = try CLI.run(["join", "--room", "demo"])
        #expect(usage.status == 64)
        let badSecret = try CLI.run(["serve", "--secret", "short"])
        #expect(badSecret.status == 64)
        let levelsRecorded = try CLI.run(["serve", "--levels-only", "--record", "/tmp/never-made"])
        #expect(levelsRecorded.status == 64 && levelsRecorded.stderr.contains("--levels-only with --record"), "\(levelsRecorded.stderr)")
        for workers in ["0", "65", "two"] {
            let badWorkers = try CLI.run(["serve", "--media-workers", workers])
            #expect(badWorkers.status == 64 && badWorkers.stderr.contains("--media-workers \(workers): expected 1-64"), "\(badWorkers.stderr)")
        }
        let noSecret = try CLI.run(["serve", "--webhook", "http://127.0.0.1:9/hooks"])
        #expect(noSecret.status == 64 && noSecret.stderr.contains("--webhook needs --webhook-secret-file"), "\(noSecret.stderr)")
        let notHTTP = try CLI.run(["serve", "--webhook", "ftp://example.org/", "--webhook-secret-file", "/dev/null"])
        #expect(notHTTP.status == 64 && notHTTP.stderr.contains("expected an http:// or https:// URL"), "\(notHTTP.stderr)")
        let alone = try CLI.run(["serve", "--webhook-secret-file", "/dev/null"])
        #expect(alone.status == 64 && alone.stderr.contains("--webhook-secret-file goes with --webhook"), "\(alone.stderr)")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let short = directory.path("short")
        try "too-short\n".write(toFile: short, atomically: true, encoding: .utf8)
        let shortSecret = try CLI.run(["serve", "--webhook", "http://127.0.0.1:9/hooks", "--webhook-secret-file", short])
        #expect(shortSecret.status == 1 && shortSecret.stderr.contains("shorter than 16 bytes"), "\(shortSecret.stderr)")
        let janusWithoutRTP = try CLI.run(["serve", "--janus", "http://127.0.0.1:8088/janus"])
        #expect(janusWithoutRTP.status == 64 && janusWithoutRTP.stderr.contains("--janus needs --rtp HOST:PORT with a fixed port"), "\(janusWithoutRTP.stderr)")
        let janusByName = try CLI.run(["serve", "--rtp", "127.0.0.1:5004", "--janus", "http://janus.local:8088/janus"])
        #expect(janusByName.status == 64 && janusByName.stderr.contains("--janus-source"), "\(janusByName.stderr)")
        let janusAlone = try CLI.run(["serve", "--janus-interval", "2"])
        #expect(janusAlone.status == 64 && janusAlone.stderr.contains("--janus-interval goes with --janus"), "\(janusAlone.stderr)")
        let janusCredentials = try CLI.run([
            "serve", "--rtp", "127.0.0.1:5004", "--janus", "http://127.0.0.1:8088/janus", "--janus-credentials", directory.path("none.json"),
        ])
        #expect(janusCredentials.status == 1 && janusCredentials.stderr.contains("cannot read the file"), "\(janusCredentials.stderr)")
        let missingSecret = try CLI.run(["serve", "--webhook", "http://127.0.0.1:9/hooks", "--webhook-secret-file", directory.path("none")])
        #expect(missingSecret.status == 1 && missingSecret.stderr.contains("cannot read the webhook secret file"), "\(missingSecret.stderr)")
    }
}

/// `join --speaker`: its values, checked before anything connects.
@Suite struct JoinSpeakerOptionTests {
    @Test(arguments: ["speaker", "alsa:", "hw:0"])
    func aSpeakerThatIsNotAlsaOrNoneIsAUsageError(value: String) throws {
        let result = try CLI.run(["join", "--server", "ws://127.0.0.1:1", "--room", "r", "--token", "t", "--mic", "none", "--speaker", value])
        #expect(result.status == 64 && result.stderr.contains("--speaker"), "\(result.stderr)")
    }
}

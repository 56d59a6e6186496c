import Foundation
import SpeakerFiles
import SpeakerIO
import SpeakerRTP
import Testing
import TestSupport

/// docs/sidecar.md's mediasoup recipe, with senders that behave as a mediasoup PlainTransport consumer does:
/// a random SSRC, no RTCP, from a port of the SFU's own choosing, and the audio level under mediasoup's
/// extension id 10. Each is named through `POST /v1/rooms/{id}/ingest` with its SSRC and `audioLevelId`,
/// in a decoded room and in a level-only one.
@Suite("The mediasoup recipe: plain RTP consumers named through the ingest API", .serialized, .realTime)
struct MediasoupRecipeTests {
    /// Plays each file as its own sender, 20 ms Opus packets paced in real time, to `port`.
    static func send(_ files: [(ssrc: UInt32, path: String)], to port: Int) throws {
        let destination = try #require(SocketAddress(host: "127.0.0.1", port: port))
        let resampler = try Resampler(inputRate: 16000, outputRate: 48000)
        let signals = try files.map { file in resampler.process(try AudioFile(path: file.path).readAllChannels()[0]) }
        let senders = try files.map { file in
            try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: file.ssrc, audioLevelID: 10, senderReportInterval: 0)
        }
        let frames = signals.map(\.count).max()! / RTPAudioSender.frameSize
        let start = DispatchTime.now().uptimeNanoseconds
        for frame in 0..<frames {
            // Paced as a real sender is: each 20 ms frame at its time (a sender, not a test waiting for an event).
            let due = start + UInt64(frame) * 20_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            for (sender, signal) in zip(senders, signals) {
                let range = frame * RTPAudioSender.frameSize..<(frame + 1) * RTPAudioSender.frameSize
                let samples = range.upperBound <= signal.count ? Array(signal[range]) : [Float](repeating: 0, count: RTPAudioSender.frameSize)
                _ = try samples.withUnsafeBufferPointer { try sender.send(frame: $0, to: destination) }
            }
        }
    }

    @Test(.enabled(if: LiveRunner.canRun(needing: "curl", "espeak-ng"), "needs curl and espeak-ng: bash tools/install-deps.sh"),
          arguments: [false, true])
    func consumersNamedWithTheirSSRCAndExtensionIDGiveTheTurns(levelsOnly: Bool) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = try ListenTests.turns(in: directory)
        let server = try LiveRunner.Running(["serve", "--listen", "127.0.0.1:0", "--secret", CallCLITests.secret])
        try #require(server.waitForOutput("\"listening\"", timeout: 10), "serve did not start: \(server.stdout)")
        let listening = try #require(CallCLITests.events(server.stdout).first { $0["type"] as? String == "listening" })
        let http = try #require(listening["http"] as? Int), rtp = try #require(listening["rtp"] as? Int)
        let admin = try CallCLITests.token("admin", room: "*", role: "moderator")
        let room = levelsOnly ? "mediasoup-levels" : "mediasoup"
        let created = try LiveRunner.httpStatus([
            "-X", "POST", "-H", "Authorization: Bearer \(admin)", "-H", "Content-Type: application/json",
            "--data", #"{"roomId":"\#(room)","levelsOnly":\#(levelsOnly)}"#, "http://127.0.0.1:\(http)/v1/rooms",
        ])
        #expect(created == "201")
        var generator = SystemRandomNumberGenerator()
        var consumers: [(ssrc: UInt32, path: String)] = []
        for name in ["alice", "bob", "carol"] {
            // What `consumer.rtpParameters.encodings[0].ssrc` would say: random.
            let ssrc = UInt32.random(in: 1...UInt32.max, using: &generator)
            let body = #"{"participantId":"\#(name)","source":"127.0.0.1","ssrc":\#(ssrc),"audioLevelId":10}"#
            let status = try LiveRunner.httpStatus([
                "-X", "POST", "-H", "Authorization: Bearer \(admin)", "-H", "Content-Type: application/json",
                "--data", body, "http://127.0.0.1:\(http)/v1/rooms/\(room)/ingest",
            ])
            #expect(status == "201", "ingest \(name): HTTP \(status)")
            consumers.append((ssrc, files[name]!))
        }
        try Self.send(consumers, to: rtp)
        // The last turn's end reaches the log within the engine's hangover after the last packet.
        #expect(server.waitForOutput(#""participant":null"#, timeout: Waiting.defaultTimeout))
        server.interrupt()
        let served = try server.finish(timeout: 10)
        let events = CallCLITests.events(served.stdout).filter { $0["room"] as? String == room }
        #expect(CallCLITests.speakers(events) == ["alice", "bob", "carol"], "\(served.stdout)")
        let stats = try #require(CallCLITests.events(served.stdout).last { $0["type"] as? String == "stats" })
        #expect(stats["unknownSSRC"] as? Int == 0 && stats["malformed"] as? Int == 0, "\(stats)")
    }
}

import CallClient
import Foundation
import SpeakerFiles
import Synchronization
import Testing
import TestSupport

/// The SDK plays what it hears: bob's speaker is a `type file` ALSA device that writes what it plays.
@Suite(.serialized, .realTime) struct PlaybackCallTests {
    @Test func aListenerHearsTheSpeakerAtItsLevelAndNothingBefore() async throws {
        let device = try FilePlaybackDevice(name: "bobspeaker")
        defer { device.remove() }

        let server = try CallTestServer.server()
        defer { server.stop() }
        // Alice says the prompt from 1.5 s after she starts; bob only listens.
        let turns: [ClosedRange<Double>] = [1.5...3.0]
        let alice = CallEndToEndTests.meeting(server, "alice", track: try CallEndToEndTests.track(turns: turns, length: 4))
        var listening = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token("bob"))
        listening.microphone = .none
        listening.speaker = .device(device.name, alsaConfigurationFile: device.configuration)
        let bob = Meeting(configuration: listening)
        let log = CallEndToEndTests.SpeakerLog()
        bob.addEventListener(log)
        let errors = Mutex<[String]>([])
        let task = Task { for await event in bob.events { if case .error(let error) = event { errors.withLock { $0.append("\(error)") } } } }
        // Bob's playback starts inside his join, alice's microphone inside hers: on a busy machine a join
        // may take seconds to return, so the prompt is due within these bounds of bob's playback clock.
        let bobJoining = Date()
        try await bob.join()
        let bobJoined = Date()
        let aliceJoining = Date()
        try await alice.join()
        let aliceJoined = Date()
        let earliest = aliceJoining.timeIntervalSince(bobJoined) + turns[0].lowerBound
        let latest = aliceJoined.timeIntervalSince(bobJoining) + turns[0].lowerBound
        // Bob has heard the whole turn once the room hands the floor back to nobody after alice.
        #expect(await Waiting.until(timeout: 30) { log.changes.withLock { $0 }.suffix(2) == ["alice", nil] })
        alice.leave()
        bob.leave()
        task.cancel()
        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0 })")

        let samples = try device.played().map { Float($0) / 32768 }
        #expect(samples.count > 16000 * 3, "played \(samples.count) samples")
        // 100 ms windows: loud ones are alice's prompt, the rest silence (nothing but her is in the room).
        let windows = stride(from: 0, to: samples.count - 1600, by: 1600).map { start in
            (samples[start..<start + 1600].reduce(0.0) { $0 + Double($1 * $1) } / 1600).squareRoot()
        }
        let loud = windows.indices.filter { windows[$0] > 0.01 }
        let prompt = try loadStreams(paths: [FixturePaths.file("formats/speech.flac")])[0].samples
        let promptRMS = (prompt.reduce(0.0) { $0 + Double($1 * $1) } / Double(prompt.count)).squareRoot()
        try #require(!loud.isEmpty, "nothing loud was played: \(windows.map { String(format: "%.3f", $0) })")
        // The prompt (1.06 s) was heard whole and once: about 0.9–1.3 s of loud windows, one stretch.
        #expect((8...13).contains(loud.count), "loud windows \(loud)")
        #expect(loud.last! - loud.first! < 14, "loud windows \(loud)")
        // At its level: the loud part's RMS within 3 dB of the prompt's (Opus at 32 kbit/s, no gain).
        let heard = (loud.map { windows[$0] * windows[$0] }.reduce(0, +) / Double(loud.count)).squareRoot()
        #expect(abs(20 * log10(heard / promptRMS)) < 3, "heard \(heard), prompt \(promptRMS)")
        // When: its first loud window at most 0.35 s after it was due (the jitter buffer's 60 ms, Opus, the
        // 10 ms ticks), never before.
        let onset = Double(loud.first!) / 10
        #expect(onset > earliest - 0.15 && onset < latest + 0.35, "heard from \(onset) s, due from \(earliest) to \(latest) s")
        // Silence before it: bob joined first, so the first second of his playback is empty.
        #expect(windows.prefix(10).allSatisfy { $0 < 0.001 }, "\(windows.prefix(10))")
    }
}

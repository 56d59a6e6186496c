import Foundation
import SpeakerCore
import SpeakerFiles
import Synchronization
import Testing
@testable import CallServer
import TestSupport

/// The recorder alone: the media thread hands hops over and never waits for the files.
@Suite struct CallRecorderTests {
    /// One 10 ms hop of a 440 Hz tone, amplitude 0.5 (RMS 0.35).
    static let tone = Synthesis.sine(seconds: AnalysisFormat.hopDuration, frequency: 440, amplitude: 0.5)

    static func rms(_ samples: [Float], from start: Double, to end: Double) -> Double {
        let slice = samples[min(samples.count, Int(start * 16000))..<min(samples.count, Int(end * 16000))]
        return (slice.reduce(0.0) { $0 + Double($1 * $1) } / Double(max(slice.count, 1))).squareRoot()
    }

    /// A writer stalled as by a slow disk: the caller's hops return at once, those past the buffer are
    /// dropped and counted (in the recorder and in the room's closing log line), and the file stays
    /// aligned on room time (a dropped hop is silence). Events keep their order.
    @Test func aStalledWriterNeitherBlocksTheCallerNorMisalignsTheFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recorder-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lines = Mutex<[String]>([])
        let recorder = try CallRecorder(directory: directory, hopCapacity: 8) { line in lines.withLock { $0.append(line) } }

        // The writer is stuck before the room's folder is even made.
        let stall = DispatchSemaphore(value: 0)
        recorder.writer.async { stall.wait() }
        recorder.roomOpened("room", tick: 0)
        recorder.event(room: "room", line: #"{"n":1}"#)

        // Twenty hops (ticks 0–19) from a thread of their own, as the media thread hands them over.
        let returned = Atomic<Bool>(false)
        Thread {
            Self.tone.withUnsafeBufferPointer { hop in
                for tick in 0..<20 {
                    recorder.hop(room: "room", participant: "alice", hop: hop, tick: tick)
                    if tick == 4 { recorder.event(room: "room", line: #"{"n":2}"#) }
                }
            }
            returned.store(true, ordering: .releasing)
        }.start()
        let handedOver = await Waiting.until { returned.load(ordering: .acquiring) }
        stall.signal()
        #expect(handedOver, "hop() waited for the stalled writer")
        #expect(recorder.droppedHops == 12)

        // Once the writer has caught up, a hop at tick 20 follows twelve hops of silence.
        recorder.writer.sync {}
        Self.tone.withUnsafeBufferPointer { recorder.hop(room: "room", participant: "alice", hop: $0, tick: 20) }
        recorder.event(room: "room", line: #"{"n":3}"#)
        recorder.roomClosed("room", tick: 21)
        recorder.finish(tick: 21)
        #expect(recorder.droppedHops == 12)

        let folder = directory + "/room"
        #expect(try String(contentsOfFile: folder + "/events.jsonl", encoding: .utf8) == "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
        let samples = try AudioFile(path: folder + "/alice.opus").readAllChannels()[0]
        #expect(abs(samples.count - 21 * AnalysisFormat.hopSize) <= AnalysisFormat.hopSize, "\(samples.count) samples")
        #expect(Self.rms(samples, from: 0.01, to: 0.07) > 0.1)
        #expect(Self.rms(samples, from: 0.1, to: 0.19) < 0.01)
        #expect(Self.rms(samples, from: 0.202, to: 0.208) > 0.05)

        let closed = try #require(lines.withLock { $0 }.first { $0.contains(#""type":"recording-closed""#) }, "\(lines.withLock { $0 })")
        let fields = try #require(try JSONSerialization.jsonObject(with: Data(closed.utf8)) as? [String: Any])
        #expect(fields["room"] as? String == "room" && fields["droppedHops"] as? Int == 12, "\(closed)")
        #expect(fields["folder"] as? String == folder)
    }

    /// Nothing is dropped while the writer keeps up, and every room's closing line says so.
    @Test func aWriterThatKeepsUpDropsNothing() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recorder-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lines = Mutex<[String]>([])
        let recorder = try CallRecorder(directory: directory, hopCapacity: 4) { line in lines.withLock { $0.append(line) } }
        recorder.roomOpened("room", tick: 0)
        Self.tone.withUnsafeBufferPointer { hop in
            for tick in 0..<50 {
                recorder.hop(room: "room", participant: "bob", hop: hop, tick: tick)
                // A media thread hands over one hop per participant every 10 ms; here the writer is let catch up.
                if tick % 4 == 3 { recorder.writer.sync {} }
            }
        }
        recorder.finish(tick: 50)
        #expect(recorder.droppedHops == 0)
        let samples = try AudioFile(path: directory + "/room/bob.opus").readAllChannels()[0]
        #expect(abs(samples.count - 50 * AnalysisFormat.hopSize) <= AnalysisFormat.hopSize, "\(samples.count) samples")
        #expect(lines.withLock { $0 }.contains { $0.contains(#""droppedHops":0"#) && $0.contains(#""type":"recording-closed""#) })
    }

    /// Issue 29: a participant who joined a room 12 s in made the writer encode 12 s of silence, and one
    /// who joins a day-old room 12 minutes of it, during which every room's hops were dropped. Now the
    /// late joiner's leading silence and a long mute take a few dozen encoder calls whatever their length,
    /// and the file is still aligned on room time.
    @Test func aLateJoinerAndALongMuteCostTheWriterAFewFrames() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("recorder-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let recorder = try CallRecorder(directory: directory, hopCapacity: 256) { _ in }
        let joined = 6_000, unmuted = joined + 24_000  // a minute in; four minutes muted
        recorder.roomOpened("room", tick: 0)
        Self.tone.withUnsafeBufferPointer { hop in
            for tick in joined..<(joined + 50) { recorder.hop(room: "room", participant: "carol", hop: hop, tick: tick) }
            for tick in unmuted..<(unmuted + 50) { recorder.hop(room: "room", participant: "carol", hop: hop, tick: tick) }
        }
        recorder.finish(tick: unmuted + 50)
        #expect(recorder.droppedHops == 0)
        // 100 hops of tone are 50 frames; each silence adds at most a dozen (and the end one more).
        #expect(recorder.encodedFrames <= 50 + 2 * 12 + 2, "\(recorder.encodedFrames) frames encoded")

        // The file, second by second: the tone in seconds 60 and 300, silence elsewhere.
        let file = try AudioFile(path: directory + "/room/carol.opus")
        #expect(file.frameCount == (unmuted + 50) * AnalysisFormat.hopSize, "\(file.frameCount) frames")
        var second = [Float](repeating: 0, count: AnalysisFormat.sampleRate)
        var loud: [Int] = []
        for index in 0... {
            let count = try second.withUnsafeMutableBufferPointer { try file.readFrames(into: $0) }
            if count == 0 { break }
            if second[..<count].reduce(0.0, { $0 + Double($1 * $1) }) / Double(count) > 0.01 { loud.append(index) }
        }
        #expect(loud == [60, 300], "seconds with sound: \(loud)")
    }
}

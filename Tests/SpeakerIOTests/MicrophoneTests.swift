import Foundation
import SpeakerDevices
import SpeakerFiles
import SpeakerIO
import Synchronization
import Testing
import TestSupport

/// A clock that only moves when told to: `sleep(until:)` jumps to the instant and records it.
final class ManualClock: PacingClock {
    private let state: Mutex<(now: UInt64, sleeps: [UInt64])>

    init(now: UInt64) { state = Mutex((now, [])) }

    func now() -> UInt64 { state.withLock { $0.now } }

    func sleep(until instant: UInt64) {
        state.withLock {
            $0.sleeps.append(instant)
            $0.now = max($0.now, instant)
        }
    }

    /// The caller is busy for `nanoseconds`.
    func advance(by nanoseconds: UInt64) { state.withLock { $0.now += nanoseconds } }

    /// The instants slept until so far, then forgotten.
    func takeSleeps() -> [UInt64] { state.withLock { sleeps in defer { sleeps.sleeps = [] }; return sleeps.sleeps } }
}

@Suite("Microphone sources")
struct MicrophoneTests {
    static let millisecond: UInt64 = 1_000_000

    /// Reads until the source stops delivering (at most `limit` frames).
    static func readAll(_ source: any MicrophoneSource, limit: Int = 10_000) throws -> (frames: [[Float]], end: MicrophoneRead) {
        var frames: [[Float]] = []
        var frame = [Float](repeating: 0, count: source.frameSize)
        while frames.count < limit {
            let status = try frame.withUnsafeMutableBufferPointer { try source.read(into: $0) }
            guard status == .frame else { return (frames, status) }
            frames.append(frame)
        }
        return (frames, .frame)
    }

    /// Writes 16 kHz mono 16-bit WAV.
    static func writeWAV(_ samples: [Float], to url: URL) throws {
        var data = FormatFixtures.wavHeader(dataBytes: UInt32(samples.count * 2))
        for sample in samples {
            withUnsafeBytes(of: Int16((max(-1, min(1, sample)) * 32767).rounded()).littleEndian) { data.append(contentsOf: $0) }
        }
        try data.write(to: url)
    }

    @Test func aFileGivesEveryFrameAt48kHzThenItsSilence() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("tone.wav")
        // 1.5 s at 16 kHz = 72000 samples at 48 kHz = 75 frames; 0.51 s of silence = 24480 samples:
        // 96480 samples in all, 100.5 frames, so 101 with the last one half zeros.
        try Self.writeWAV(Signals.tone(frequency: 440, sampleRate: 16000, count: 24000), to: url)
        let clock = ManualClock(now: 0)
        let microphone = try FileMicrophone(path: url.path, silenceAfter: 0.51, clock: clock)
        #expect(microphone.sampleRate == 48000 && microphone.frameSize == 960)
        #expect(microphone.samples.count == 72000 && microphone.framesPerPass == 101)
        var frame = [Float](repeating: 0, count: 960)
        #expect(frame.withUnsafeMutableBufferPointer { microphone.read(into: $0) } == .stopped, "not started")
        microphone.start()
        let (frames, end) = try Self.readAll(microphone)
        #expect(frames.count == 101 && end == .finished)
        #expect(frame.withUnsafeMutableBufferPointer { microphone.read(into: $0) } == .finished)
        let played = frames.flatMap { $0 }
        #expect(Array(played[..<72000]) == microphone.samples)
        #expect(played[72000...].allSatisfy { $0 == 0 })
        // The 48 kHz tone keeps the file's level: amplitude 0.5, RMS 0.354.
        #expect(abs(Signals.rms(played, 4800..<67200) - 0.5 / 2.0.squareRoot()) < 0.002)
        #expect(Signals.correlation(Array(played[4800..<67200]), Signals.tone(frequency: 440, sampleRate: 48000, count: 72000)[4800..<67200].map { $0 }) > 0.999)
    }

    @Test func aFixtureOfAnyFormatIsResampledTo48kHz() throws {
        let path = FormatFixtures.path("speech.flac")
        let file = try AudioFile(path: path)
        let microphone = try FileMicrophone(path: path, clock: ManualClock(now: 0))
        let expected = Int((Double(file.frameCount) * 48000 / Double(file.sampleRate)).rounded())
        #expect(microphone.samples.count == expected)
        microphone.start()
        #expect(try Self.readAll(microphone).frames.count == (expected + 959) / 960)
    }

    @Test func framesAreDueOnAnAbsoluteScheduleThatNeverDrifts() throws {
        let start: UInt64 = 5_000 * Self.millisecond
        let clock = ManualClock(now: start - 3 * Self.millisecond)
        let ramp = (0..<144_000).map { Float($0) / 144_000 }
        let microphone = FileMicrophone(samples: ramp, clock: clock)
        microphone.start(at: start)
        var frame = [Float](repeating: 0, count: 960)
        func read() -> MicrophoneRead { frame.withUnsafeMutableBufferPointer { microphone.read(into: $0) } }
        for _ in 0..<3 { #expect(read() == .frame) }
        // Frame k is due when its 20 ms have passed: start + (k + 1) × 20 ms.
        #expect(clock.takeSleeps() == [20, 40, 60].map { start + $0 * Self.millisecond })
        // The caller is 55 ms late: the two frames already due come at once, then the schedule resumes.
        clock.advance(by: 55 * Self.millisecond)
        for _ in 0..<3 { #expect(read() == .frame) }
        #expect(clock.takeSleeps() == [start + 120 * Self.millisecond])
        // A slow caller (19 ms of work per frame) never pushes the schedule later.
        for _ in 0..<100 {
            clock.advance(by: 19 * Self.millisecond)
            #expect(read() == .frame)
        }
        let sleeps = clock.takeSleeps()
        #expect(sleeps.count == 100 && sleeps.last == start + 2120 * Self.millisecond)
        #expect(zip(sleeps, sleeps.dropFirst()).allSatisfy { $1 - $0 == 20 * Self.millisecond })
        #expect(frame.first == ramp[105 * 960], "frame 105 of the ramp")

        // Stopped: nothing; restarted: the file goes on, on the new schedule.
        microphone.stop()
        #expect(read() == .stopped)
        let restart: UInt64 = 9_000 * Self.millisecond
        microphone.start(at: restart)
        #expect(read() == .frame)
        #expect(clock.takeSleeps() == [restart + 20 * Self.millisecond])
        #expect(frame.first == ramp[106 * 960])
    }

    @Test func aScheduledFirstStartWaitsForItsInstantOnce() {
        let clock = ManualClock(now: 1_000 * Self.millisecond)
        let microphone = FileMicrophone(samples: [Float](repeating: 0.5, count: 9600), clock: clock)
        let instant: UInt64 = 4_000 * Self.millisecond
        microphone.startFirst(at: instant)
        microphone.start()
        var frame = [Float](repeating: 0, count: 960)
        #expect(frame.withUnsafeMutableBufferPointer { microphone.read(into: $0) } == .frame)
        // Nothing before the instant: the first frame is due 20 ms after it.
        #expect(clock.takeSleeps() == [instant + 20 * Self.millisecond])
        // A later start (after a stop) begins at once, as usual.
        microphone.stop()
        clock.advance(by: 1_000 * Self.millisecond)
        let restart = clock.now()
        microphone.start()
        #expect(frame.withUnsafeMutableBufferPointer { microphone.read(into: $0) } == .frame)
        #expect(clock.takeSleeps() == [restart + 20 * Self.millisecond])
    }

    @Test func loopingPassesAreSeamless() throws {
        let ramp = (0..<1000).map { Float($0) }
        let microphone = FileMicrophone(samples: ramp, loop: true, silenceAfter: 0.001, clock: ManualClock(now: 0))
        // A pass: 1000 samples and 48 zeros.
        microphone.start()
        let frames = try Self.readAll(microphone, limit: 30).frames
        #expect(frames.count == 30)
        let pass = ramp + [Float](repeating: 0, count: 48)
        let played = frames.flatMap { $0 }
        #expect(played.indices.allSatisfy { played[$0] == pass[$0 % pass.count] })
    }

    @Test func anALSADeviceGives48kHzFrames() throws {
        let tone = Signals.tone(frequency: 440, sampleRate: 48000, count: 48000, amplitude: 0.25)
        let devices = try FileBackedDevices([("mic48", [tone, tone.map { -$0 }], 48000)])
        defer { devices.remove() }
        let microphone = try ALSAMicrophone(device: "mic48", channel: 2, configurationFile: devices.configuration)
        #expect(microphone.deviceRate == 48000)
        var frame = [Float](repeating: 0, count: 960)
        #expect(try frame.withUnsafeMutableBufferPointer { try microphone.read(into: $0) } == .stopped, "not started")
        try microphone.start()
        let frames = try Self.readAll(microphone, limit: 40).frames
        microphone.stop()
        #expect(frames.count == 40)
        let quantised = tone.map { Float(Int16((-$0 * 32767).rounded())) / 32768 }
        #expect(frames.flatMap { $0 } == Array(quantised[..<38400]), "channel 2, sample-exact")
        #expect(try frame.withUnsafeMutableBufferPointer { try microphone.read(into: $0) } == .stopped)
        // Started again: the device is opened anew (a file-backed one starts its file again).
        try microphone.start()
        #expect(try frame.withUnsafeMutableBufferPointer { try microphone.read(into: $0) } == .frame)
        #expect(frame == Array(quantised[..<960]))
        microphone.stop()
    }

    @Test func unknownAndFailingALSADevicesAreClearErrors() throws {
        let devices = try FileBackedDevices([("mic16", [Signals.tone(frequency: 500, sampleRate: 16000, count: 1600)], 16000)])
        defer { devices.remove() }
        let missing = #expect(throws: SpeakerIOError.self) {
            try ALSAMicrophone(device: "nosuchmic", configurationFile: devices.configuration)
        }
        #expect(missing?.subject == .device("nosuchmic") && missing?.kind == .noSuchDevice)
        // Reads of the `_failing` device fail with EIO: `read` throws the capture's failure, then is stopped.
        let microphone = try ALSAMicrophone(device: "mic16_failing", configurationFile: devices.configuration)
        try microphone.start()
        var frame = [Float](repeating: 0, count: 960)
        let failure = #expect(throws: SpeakerIOError.self) {
            while try frame.withUnsafeMutableBufferPointer({ try microphone.read(into: $0) }) == .frame {}
        }
        #expect(failure?.subject == .device("mic16_failing") && failure?.kind == .deviceFailed(operation: "snd_pcm_readi"))
        #expect(try frame.withUnsafeMutableBufferPointer { try microphone.read(into: $0) } == .stopped)
    }
}

import Foundation
import SpeakerDevices
import SpeakerIO
import Testing
import TestSupport

/// File-backed ALSA capture devices for tests: alsa-lib's `type file` PCM over the `null` PCM, reading
/// raw samples from `infile`. No sound hardware is needed. The definitions live in a configuration file
/// loaded over the system's for one open (`AudioCapture(configurationFile:)`), so nothing global changes.
///
/// Such a device is not paced by a clock: it delivers as fast as it is read, and after the end of the
/// file it repeats stale data, so tests read exactly the file's length.
struct FileBackedDevices {
    let directory: URL
    let configuration: String

    /// Writes `channels` (equal lengths, in [-1, 1]) as interleaved 16-bit raw files and a configuration
    /// defining `name` for each; also `failing`, whose output goes to /dev/full (reads fail with EIO).
    init(_ devices: [(name: String, channels: [[Float]], sampleRate: Int)]) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("alsa-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var text = ""
        for device in devices {
            let path = directory.appendingPathComponent("\(device.name).raw").path
            var samples = [Int16](repeating: 0, count: device.channels[0].count * device.channels.count)
            for (channel, values) in device.channels.enumerated() {
                for (frame, value) in values.enumerated() {
                    samples[frame * device.channels.count + channel] = Int16((max(-1, min(1, value)) * 32767).rounded()).littleEndian
                }
            }
            try samples.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: path))
            text += """
                pcm.\(device.name) {
                    type file
                    slave.pcm "null"
                    file "/dev/null"
                    infile "\(path)"
                    format "raw"
                }
                pcm.\(device.name)_failing {
                    type file
                    slave.pcm "null"
                    file "/dev/full"
                    infile "\(path)"
                    format "raw"
                }

                """
        }
        configuration = directory.appendingPathComponent("asoundrc").path
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

@Suite("ALSA capture from a file-backed device")
struct AudioCaptureTests {
    /// Holds the only reference to a capture, so another thread can drop it.
    final class Holder: @unchecked Sendable {
        // @unchecked Sendable: handed to one thread at a time (the test's, then `returns`'s).
        var capture: AudioCapture?
        init(_ capture: AudioCapture) { self.capture = capture }
    }

    /// Runs `body` on a thread of its own; whether it returned within `Waiting.defaultTimeout` seconds.
    static func returns(_ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        return done.wait(timeout: .now() + Waiting.defaultTimeout) == .success
    }

    /// Reads `hops` hop blocks; returns the rows (one array per selected channel).
    static func record(_ capture: AudioCapture, hops: Int) -> [[Float]] {
        var rows = [[Float]](repeating: [], count: capture.channels.count)
        var block = [Float](repeating: 0, count: capture.hopBlockSize)
        capture.start()
        var taken = 0
        while taken < hops {
            let status = block.withUnsafeMutableBufferPointer { capture.nextHop(into: $0, timeout: 1) }
            if status == .finished { break }
            guard status == .hop else { continue }
            for row in rows.indices { rows[row] += block[row * 160..<(row + 1) * 160] }
            taken += 1
        }
        capture.stop()
        return rows
    }

    @Test func capturesChannelsAt16kHzSampleExact() throws {
        let left = Synthesis.voice(seconds: 1, f0: 120, levelDBFS: -20, seed: 1)
        let right = Synthesis.sine(seconds: 1, frequency: 440, amplitude: 0.25)
        let devices = try FileBackedDevices([("stereo", [left, right], 16000)])
        defer { devices.remove() }
        let capture = try AudioCapture(device: "stereo", channels: [2, 1], configurationFile: devices.configuration)
        #expect(capture.format.sampleRate == 16000)
        #expect(capture.format.channelCount == 2)
        #expect(capture.format.sampleFormat == "S16_LE")
        #expect(capture.format.periodDuration <= 0.010 + 1e-9)
        let rows = Self.record(capture, hops: 100)
        let quantised = { (x: Float) in Float(Int16((max(-1, min(1, x)) * 32767).rounded())) / 32768 }
        #expect(rows[0] == right.map(quantised))
        #expect(rows[1] == left.map(quantised))
        #expect(capture.failure == nil && capture.overruns == 0)
    }

    @Test func channelsAreHopSourcesOfTheBlocks() throws {
        let left = Synthesis.voice(seconds: 0.5, f0: 120, levelDBFS: -20, seed: 1)
        let right = Synthesis.sine(seconds: 0.5, frequency: 440, amplitude: 0.25)
        let devices = try FileBackedDevices([("stereo", [left, right], 16000)])
        defer { devices.remove() }
        let capture = try AudioCapture(device: "stereo", channels: [2, 1], configurationFile: devices.configuration)
        let hops = CaptureHops(capture)
        let sources = [hops.channel(0), hops.channel(1)]
        var rows: [[Float]] = [[], []]
        var hop = [Float](repeating: 0, count: AnalysisFormat.hopSize)
        capture.start()
        var tick = 0
        while tick < 50 {
            let status = hops.next(timeout: 1)
            if status == .finished { break }
            guard status == .hop else { continue }
            for (row, source) in sources.enumerated() {
                #expect(hop.withUnsafeMutableBufferPointer { source.pull(tick: tick, into: $0) } == .audio)
                rows[row] += hop
            }
            tick += 1
        }
        capture.stop()
        let quantised = { (x: Float) in Float(Int16((max(-1, min(1, x)) * 32767).rounded())) / 32768 }
        #expect(tick == 50)
        #expect(rows[0] == Array(right.map(quantised).prefix(8000)))
        #expect(rows[1] == Array(left.map(quantised).prefix(8000)))
    }

    @Test func resamples48kHzTo16kHz() throws {
        let tone16 = Synthesis.sine(seconds: 1, frequency: 500, amplitude: 0.5)
        let tone48 = Synthesis.sine(seconds: 1, frequency: 500, amplitude: 0.5).indices.flatMap { index -> [Float] in
            (0..<3).map { Float(0.5 * sin(2 * Double.pi * 500 * (Double(index) + Double($0) / 3) / 16000)) }
        }
        let devices = try FileBackedDevices([("mono48", [tone48], 48000)])
        defer { devices.remove() }
        let capture = try AudioCapture(device: "mono48", sampleRate: 48000, configurationFile: devices.configuration)
        #expect(capture.format.sampleRate == 48000 && capture.channels == [1])
        let rows = Self.record(capture, hops: 90)
        // After the resampler settles, the output is the 16 kHz tone, time-aligned.
        let settled = Array(rows[0][800..<14000]), reference = Array(tone16[800..<14000])
        #expect(Signals.correlation(settled, reference) > 0.999)
    }

    @Test func aFailingDeviceEndsTheCaptureWithAnError() throws {
        let devices = try FileBackedDevices([("speech", [Synthesis.noise(seconds: 2, levelDBFS: -30, seed: 2)], 16000)])
        defer { devices.remove() }
        let capture = try AudioCapture(device: "speech_failing", configurationFile: devices.configuration)
        let rows = Self.record(capture, hops: 1000)
        #expect(rows[0].count < 16000, "the device fails before the file ends")
        let failure = try #require(capture.failure)
        #expect(failure.subject == .device("speech_failing"))
        #expect(failure.kind == .deviceFailed(operation: "snd_pcm_readi"))
        #expect(failure.description == "device speech_failing: snd_pcm_readi failed (alsa-lib: Input/output error)")
    }

    @Test func unknownDevicesAndChannelsAreClearErrors() throws {
        let devices = try FileBackedDevices([("speech", [Synthesis.noise(seconds: 0.1, levelDBFS: -30, seed: 2)], 16000)])
        defer { devices.remove() }
        let missing = #expect(throws: SpeakerIOError.self) {
            try AudioCapture(device: "no_such_pcm", configurationFile: devices.configuration)
        }
        #expect(missing?.description == "device no_such_pcm: no such device (alsa-lib: No such file or directory)")
        let badFile = #expect(throws: SpeakerIOError.self) {
            try AudioCapture(device: "speech", configurationFile: devices.directory.appendingPathComponent("nope").path)
        }
        #expect(badFile?.kind == .cannotOpen)
        let noCard = #expect(throws: SpeakerIOError.self) { try AudioCapture(device: "hw:97,0") }
        #expect(noCard?.subject == .device("hw:97,0"))
    }

    @Test func stopEndsTheThreadPromptly() throws {
        let devices = try FileBackedDevices([("long", [Synthesis.noise(seconds: 5, levelDBFS: -30, seed: 3)], 16000)])
        defer { devices.remove() }
        let capture = try AudioCapture(device: "long", queueHops: 4, configurationFile: devices.configuration)
        capture.start()
        // Nobody reads: once five hops are read, four fill the queue and the capture thread waits for room
        // for the fifth. Stop must still return.
        #expect(Waiting.until { capture.framesRead >= 5 * capture.hopSize })
        // Returns at all (a hang is the bug; how fast is not measured here: the machine may be loaded).
        #expect(Self.returns { capture.stop() })
        var block = [Float](repeating: 0, count: capture.hopBlockSize)
        var taken = 0
        while block.withUnsafeMutableBufferPointer({ capture.nextHop(into: $0, timeout: 0.1) }) == .hop { taken += 1 }
        #expect(taken == 4, "the queued hops can still be taken")
        #expect(capture.droppedHops == 1)
    }

    /// An owner may drop a running capture or watcher without `stop()`: `deinit` stops the thread, and
    /// the thread must not touch the object being destroyed (it did once, through `unowned self`, which
    /// traps).
    @Test func releasingARunningCaptureOrWatcherStopsItsThread() throws {
        let devices = try FileBackedDevices([("long", [Synthesis.noise(seconds: 5, levelDBFS: -30, seed: 4)], 16000)])
        defer { devices.remove() }
        for _ in 0..<3 {
            let holder = Holder(try AudioCapture(device: "long", configurationFile: devices.configuration))
            holder.capture!.start()
            var block = [Float](repeating: 0, count: holder.capture!.hopBlockSize)
            #expect(block.withUnsafeMutableBufferPointer { holder.capture!.nextHop(into: $0, timeout: 1) } == .hop)
            // The last reference goes on another thread, so that a hang in deinit fails the test rather
            // than stopping the suite (how fast it returns is not measured: the machine may be loaded).
            #expect(Self.returns { holder.capture = nil })
        }
        for _ in 0..<3 {
            var watcher: DeviceWatcher? = DeviceWatcher(interval: 0.01) { _ in }
            watcher!.start()
            Thread.sleep(forTimeInterval: 0.05)
            watcher = nil
        }
    }

    @Test func deviceChangesAreReportedByName() {
        let a = AudioDevice(name: "hw:0,0", description: "A", card: 0, device: 0, canCapture: true, canPlay: true)
        let b = AudioDevice(name: "usbmic", description: "B", canCapture: true, canPlay: false)
        let c = AudioDevice(name: "hw:1,0", description: "C", card: 1, device: 0, canCapture: true, canPlay: false)
        #expect(DeviceWatcher.changes(from: [a, b], to: [a, c]) == [.removed(b), .added(c)])
        #expect(DeviceWatcher.changes(from: [a], to: [a]).isEmpty)
    }
}

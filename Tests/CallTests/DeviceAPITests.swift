@testable import CallClient
import CallProtocol
import CallServer
import Foundation
import SpeakerDevices
import SpeakerFiles
import SpeakerIO
import Synchronization
import Testing
import TestSupport

/// Microphones without sound hardware, visible to alsa-lib itself (so to `AudioDevices.list()` and to
/// `getMics()`): `type file` PCMs over the `null` PCM, each with a `hint` so that the name hints list it.
///
/// A `type file` PCM over `null` delivers as fast as it is read; to pace the working ones like real
/// devices their `infile` is a FIFO that a writer thread fills at 48 kHz in real time, reopening it for
/// each new reader (the SDK opens a device more than once). The configuration is appended to alsa-lib's
/// path once per process with `ALSA_CONFIG_PATH` (alsa-lib re-reads the variable on every configuration
/// update, so it need not be set before the first load); the writers live as long as the process, so an
/// open of one of these devices never waits for a writer.
enum TestMicrophones {
    /// Reads digital silence.
    static let quiet = "activespeaker_test_quiet"
    /// Reads a real voice: the Asterisk prompt "Activated." of Fixtures/formats (1.06 s) and 0.6 s of
    /// quiet room noise, looped. (Real speech: the engine's sound classifier, trained on real voices, does
    /// not take a synthetic buzz for speech.)
    static let voice = "activespeaker_test_voice"
    /// Listed, but its `infile` does not exist: opening it fails.
    static let broken = "activespeaker_test_broken"
    static let labels = [quiet: "Test quiet microphone", voice: "Test voice microphone", broken: "Test broken microphone"]

    private static let setUp: Result<String, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("activespeaker-devices-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let prompt = try loadStreams(paths: [FixturePaths.file("formats/speech.flac")])[0].samples
        let pause = Synthesis.noise(seconds: 0.6, levelDBFS: -60, seed: 77)
        let voiceSamples = try Resampler(inputRate: 16000, outputRate: 48000)
            .process(Array([[Float]](repeating: prompt + pause, count: 3).joined()))
        let sources: [(String, String?, [Float])] = [
            (quiet, directory.appendingPathComponent("quiet.fifo").path, [Float](repeating: 0, count: 48000)),
            (voice, directory.appendingPathComponent("voice.fifo").path, voiceSamples),
            (broken, nil, []),
        ]
        var text = ""
        for (name, fifo, samples) in sources {
            if let fifo { try RealTimeFIFO.serve(path: fifo, samples: samples) }
            text += """
                pcm.\(name) {
                    type file
                    slave.pcm "null"
                    file "/dev/null"
                    infile "\(fifo ?? directory.appendingPathComponent("missing.raw").path)"
                    format "raw"
                    hint { show on description "\(labels[name]!)" }
                }

                """
        }
        let configuration = directory.appendingPathComponent("asoundrc").path
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
        setenv("ALSA_CONFIG_PATH", "/usr/share/alsa/alsa.conf:\(configuration)", 1)
        return configuration
    }

    /// Makes the devices known to alsa-lib (once per process).
    static func install() throws {
        _ = try setUp.get()
    }
}

/// Feeds a FIFO with 16-bit mono audio at 48 kHz in real time (10 ms writes on a wall-clock schedule),
/// looping the samples, to one reader after another, until the process ends.
enum RealTimeFIFO {
    static func serve(path: String, samples: [Float]) throws {
        guard mkfifo(path, 0o600) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
        signal(SIGPIPE, SIG_IGN)  // a reader closing the FIFO must not end the test runner
        let pcm = samples.map { Int16((max(-1, min(1, $0)) * 32767).rounded()).littleEndian }
        let chunk = 480  // 10 ms
        Thread.detachNewThread {
            var position = 0
            while true {
                let descriptor = open(path, O_WRONLY)  // waits for the next reader
                guard descriptor >= 0 else {
                    usleep(10_000)
                    continue
                }
                var start = DispatchTime.now().uptimeNanoseconds
                var index: UInt64 = 0
                var buffer = [Int16](repeating: 0, count: chunk)
                while true {
                    for offset in 0..<chunk {
                        buffer[offset] = pcm[position]
                        position = (position + 1) % pcm.count
                    }
                    let written = buffer.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                    if written <= 0 { break }  // the reader closed the device
                    index += 1
                    let now = DispatchTime.now().uptimeNanoseconds
                    let due = start + index * 10_000_000
                    if due > now {
                        usleep(UInt32((due - now) / 1000))
                    } else if now - due > 100_000_000 {
                        start = now - index * 10_000_000  // blocked on a full pipe: no burst to catch up
                    }
                }
                close(descriptor)
            }
        }
    }
}

/// What one meeting reported, in order.
final class DeviceEventLog: MeetingEventListener {
    let entries = Mutex<[String]>([])
    let errors = Mutex<[MeetingError]>([])
    let levels = Mutex<[String: Double]>([:])
    let speakingWhileMuted = Atomic<Int>(0)
    /// `audio-levels` reports received (one every 0.2 s of the server's clock).
    let levelReports = Atomic<Int>(0)

    func onStreamEnabled(participantId: String, kind: StreamKind) { entries.withLock { $0.append("enabled \(participantId) \(kind)") } }
    func onStreamDisabled(participantId: String, kind: StreamKind) { entries.withLock { $0.append("disabled \(participantId) \(kind)") } }
    func onAudioLevels(_ levels: [String: Double]) {
        self.levels.withLock { $0.merge(levels) { $1 } }
        levelReports.add(1, ordering: .relaxed)
    }
    func onSpeakingWhileMuted() { speakingWhileMuted.add(1, ordering: .relaxed) }
    func onError(_ error: MeetingError) { errors.withLock { $0.append(error) } }

    nonisolated var all: [String] { entries.withLock { $0 } }
    nonisolated func level(_ participant: String) -> Double? { levels.withLock { $0[participant] } }
    nonisolated func count(_ entry: String) -> Int { all.filter { $0 == entry }.count }
}

/// The device-switching API of `Meeting` on file-backed ALSA microphones, with a room server in the process.
@Suite(.serialized, .realTime) struct DeviceAPITests {
    init() throws {
        try TestMicrophones.install()
    }

    static func meeting(_ server: RoomServer, _ participant: String, microphone: MicrophoneChoice, micEnabled: Bool) -> Meeting {
        var configuration = MeetingConfiguration(
            server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token(participant))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = microphone
        configuration.micEnabled = micEnabled
        return Meeting(configuration: configuration)
    }

    /// A meeting that never joins, for the calls that need no server.
    static func offline() -> Meeting {
        Meeting(configuration: MeetingConfiguration(server: "ws://127.0.0.1:9", roomId: "room", token: "x"))
    }

    // MARK: Listing and output selection

    @Test func getMicsListsTheSpeakerThenTheALSACaptureDevices() throws {
        let mics = Self.offline().getMics()
        #expect(mics.first == AudioDeviceInfo.speaker)
        // As the device-switching guide filters it: id and label "Speaker".
        #expect(mics.first?.deviceId == "Speaker" && mics.first?.label == "Speaker" && mics.first?.kind == .speaker)
        #expect(mics.first?.kind.rawValue == "audiooutput" && mics.last?.kind.rawValue == "audioinput")
        #expect(mics.dropFirst().allSatisfy { $0.kind == .microphone })
        // Every capture device but ALSA's `null`, which records nothing.
        let expected = AudioDevices.list().filter { $0.canCapture && $0.name != "null" }.map(\.name)
        #expect(mics.dropFirst().map(\.deviceId) == expected)
        for name in [TestMicrophones.quiet, TestMicrophones.voice, TestMicrophones.broken] {
            let device = try #require(mics.first { $0.deviceId == name }, "\(name) not in \(mics.map(\.deviceId))")
            #expect(device.label == TestMicrophones.labels[name])
        }
    }

    @Test func setAudioDeviceSelectsTheSpeakerAndRefusesAMicrophone() async throws {
        let meeting = Self.offline()
        let log = DeviceEventLog()
        meeting.addEventListener(log)
        #expect(meeting.getSelectedAudioDevice(kind: .speaker) == .speaker)
        #expect(meeting.getSelectedAudioDevice()?.kind == .microphone, "before any choice: the microphone")
        try meeting.setAudioDevice(.speaker)
        #expect(meeting.getSelectedAudioDevice(kind: .speaker) == .speaker)
        // Issue 32, friction 9: seed 002 marks the device selected last; the Speaker entry was never it.
        #expect(meeting.getSelectedAudioDevice() == .speaker)
        try await meeting.changeMic(deviceId: TestMicrophones.voice)
        #expect(meeting.getSelectedAudioDevice()?.deviceId == TestMicrophones.voice)
        try meeting.setAudioDevice(.speaker)
        let microphone = try #require(meeting.getMics().first { $0.deviceId == TestMicrophones.voice })
        #expect(throws: MeetingError.self) { try meeting.setAudioDevice(microphone) }
        do {
            try meeting.setAudioDevice(microphone)
        } catch {
            #expect(error.code == .actionNotSupported)
        }
        #expect(meeting.getSelectedAudioDevice(kind: .speaker) == .speaker, "a refused device is not selected")
        // Issue 32, friction 9: an output nobody listed was accepted, silently.
        let unknown = AudioDeviceInfo(deviceId: "hdmi-7", label: "HDMI 7", kind: .speaker)
        do {
            try meeting.setAudioDevice(unknown)
            Issue.record("an unknown output was accepted")
        } catch {
            #expect(error.code == .invalidArgument)
        }
        #expect(meeting.getSelectedAudioDevice(kind: .speaker) == .speaker)
        // Each refusal is an error event too (two for the microphone, one for the unknown output).
        #expect(await Waiting.until(timeout: 5) { log.errors.withLock { $0.map(\.code) } == [.actionNotSupported, .actionNotSupported, .invalidArgument] },
                "\(log.errors.withLock { $0.map(\.code) })")
    }

    @Test func deviceChangeListenerIsCalledAtOnceAfterEachChangeSeriallyAndCanBeReplacedOrRemoved() async throws {
        let meeting = Self.offline()
        let first = Mutex<[(AudioDeviceInfo?, [AudioDeviceInfo])]>([])
        let offMain = Atomic<Int>(0)
        let second = Mutex<Int>(0)
        let inside = Atomic<Int>(0)
        let overlapped = Atomic<Bool>(false)

        meeting.setAudioDeviceChangeListener { selected, devices in
            if !MainQueue.isCurrent { offMain.add(1, ordering: .relaxed) }
            if inside.add(1, ordering: .acquiringAndReleasing).newValue > 1 { overlapped.store(true, ordering: .relaxed) }
            usleep(5_000)
            first.withLock { $0.append((selected, devices)) }
            inside.subtract(1, ordering: .acquiringAndReleasing)
        }
        #expect(await Waiting.until(timeout: 5) { first.withLock { $0.count } == 1 }, "called at once with the current state")
        let initial = try #require(first.withLock { $0.first })
        #expect(initial.0 == meeting.getSelectedAudioDevice(), "the selected microphone")
        #expect(initial.0?.kind == .microphone && initial.0?.deviceId != "null")
        #expect(initial.1 == meeting.getMics())

        for _ in 0..<5 { try meeting.setAudioDevice(.speaker) }
        #expect(await Waiting.until(timeout: 5) { first.withLock { $0.count } == 6 }, "called after each change")
        let didOverlap = overlapped.load(ordering: .relaxed)
        #expect(!didOverlap, "calls never overlap (one serial queue)")
        #expect(offMain.load(ordering: .relaxed) == 0, "called on the main queue")

        meeting.setAudioDeviceChangeListener { _, _ in second.withLock { $0 += 1 } }
        #expect(await Waiting.until(timeout: 5) { second.withLock { $0 } == 1 })
        try meeting.setAudioDevice(.speaker)
        #expect(await Waiting.until(timeout: 5) { second.withLock { $0 } == 2 })
        // The calls are serial: the replacement has had the change, so the replaced one would have by now.
        #expect(first.withLock { $0.count } == 6, "a replaced listener is no longer called")

        meeting.setAudioDeviceChangeListener(nil)
        try meeting.setAudioDevice(.speaker)
        // A third listener's first call is queued after that change's: once it came, the change was delivered.
        let third = Mutex<Int>(0)
        meeting.setAudioDeviceChangeListener { _, _ in third.withLock { $0 += 1 } }
        #expect(await Waiting.until(timeout: 5) { third.withLock { $0 } >= 1 })
        #expect(second.withLock { $0 } == 2, "a removed listener is no longer called")
    }

    // MARK: Switching microphones

    @Test func changeMicRestartsALiveMicrophoneAndFailuresKeepThePreviousOne() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .device(TestMicrophones.quiet), micEnabled: true)
        let bob = Self.meeting(server, "bob", microphone: .none, micEnabled: false)
        let aliceLog = DeviceEventLog(), bobLog = DeviceEventLog()
        alice.addEventListener(aliceLog)
        bob.addEventListener(bobLog)
        let deviceCalls = Atomic<Int>(0)
        alice.setAudioDeviceChangeListener { _, _ in deviceCalls.add(1, ordering: .relaxed) }
        try await bob.join()
        defer { bob.leave() }
        try await alice.join()
        defer { alice.leave() }
        func received() -> Int { bob.receivedPackets["alice"] ?? 0 }

        // The quiet microphone publishes: bob receives packets, at the level of silence.
        #expect(await Waiting.until { received() > 25 && bobLog.level("alice") != nil }, "\(bob.receivedPackets)")
        #expect((bobLog.level("alice") ?? 0) < -60, "\(String(describing: bobLog.level("alice")))")

        // No id: the next microphone of the list, the voice.
        let mics = alice.getMics().filter { $0.kind == .microphone }.map(\.deviceId)
        let quietIndex = try #require(mics.firstIndex(of: TestMicrophones.quiet))
        try #require(mics[(quietIndex + 1) % mics.count] == TestMicrophones.voice, "\(mics)")
        let callsBefore = deviceCalls.load(ordering: .relaxed)
        try await alice.changeMic()

        // Listeners hear events on the meeting's event queue, shortly after the call returns.
        #expect(
            await Waiting.until(timeout: 5) { aliceLog.all.filter { $0.hasSuffix("alice audio") } == ["disabled alice audio", "enabled alice audio"] },
            "\(aliceLog.all)")
        #expect(await Waiting.until(timeout: 5) { bobLog.all.filter { $0.hasSuffix("alice audio") }.count == 2 })
        #expect(bobLog.all.filter { $0.hasSuffix("alice audio") } == ["disabled alice audio", "enabled alice audio"], "the server was told")
        #expect(await Waiting.until(timeout: 5) { deviceCalls.load(ordering: .relaxed) > callsBefore }, "the device listener hears of the change")

        // Bob keeps receiving, now the voice from the new device.
        let acceptedAfterSwitch = server.mediaStatistics.accepted
        let receivedAfterSwitch = received()
        #expect(await Waiting.until { received() > receivedAfterSwitch + 50 })
        #expect(await Waiting.until { server.mediaStatistics.accepted > acceptedAfterSwitch + 50 })
        #expect(await Waiting.until { (bobLog.level("alice") ?? -127) > -45 }, "\(String(describing: bobLog.level("alice")))")
        #expect(aliceLog.errors.withLock { $0 }.isEmpty, "\(aliceLog.errors.withLock { $0 })")

        // A listed device that cannot be opened: 3002, thrown and reported; the voice keeps publishing.
        await #expect(throws: MeetingError.self) { try await alice.changeMic(deviceId: TestMicrophones.broken) }
        do {
            try await alice.changeMic(deviceId: TestMicrophones.broken)
        } catch {
            #expect(error.code == .audioDeviceFailed)
        }
        #expect(await Waiting.until(timeout: 5) { aliceLog.errors.withLock { $0 }.count == 2 })
        #expect(aliceLog.errors.withLock { $0 }.map(\.code) == [.audioDeviceFailed, .audioDeviceFailed])
        #expect(aliceLog.count("disabled alice audio") == 1, "the live microphone was not interrupted")
        let receivedAfterFailure = received()
        #expect(await Waiting.until { received() > receivedAfterFailure + 50 }, "the previous microphone still publishes")
        #expect((bobLog.level("alice") ?? -127) > -45, "still the voice")

        // An id no device has: 3059.
        do {
            try await alice.changeMic(deviceId: "no_such_microphone")
            Issue.record("changed to an unknown microphone")
        } catch {
            #expect(error.code == .noMicrophoneFound)
        }
        #expect(await Waiting.until(timeout: 5) { aliceLog.errors.withLock { $0 }.last?.code == .noMicrophoneFound })
        #expect(aliceLog.count("disabled alice audio") == 1)
    }

    @Test func changeMicToACustomTrackWhileLive() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .device(TestMicrophones.quiet), micEnabled: true)
        let log = DeviceEventLog()
        alice.addEventListener(log)
        try await alice.join()
        defer { alice.leave() }
        #expect(await Waiting.until { server.mediaStatistics.accepted > 25 })
        let voice = try Resampler(inputRate: 16000, outputRate: 48000).process(Synthesis.voice(seconds: 2, f0: 200, levelDBFS: -22, seed: 5))
        try await alice.changeMic(customMicrophoneTrack: CustomMicrophoneTrack(source: FileMicrophone(samples: voice, loop: true), label: "voice"))
        // Listeners hear events on the meeting's event queue, shortly after the call returns.
        #expect(await Waiting.until(timeout: 5) { log.all == ["disabled alice audio", "enabled alice audio"] }, "\(log.all)")
        let accepted = server.mediaStatistics.accepted
        #expect(await Waiting.until { server.mediaStatistics.accepted > accepted + 50 })
        #expect(log.errors.withLock { $0 }.isEmpty)
    }

    /// Issue 32, friction 9: choosing a custom track turns a muted microphone on (seed 002 does), and
    /// choosing the Speaker output while nothing plays starts playback on the default output (this
    /// machine has no sound card: 3002, thrown and an error event).
    @Test func aCustomTrackTurnsTheMicrophoneOnAndTheSpeakerStartsPlayback() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .device(TestMicrophones.quiet), micEnabled: false)
        let log = DeviceEventLog()
        alice.addEventListener(log)
        try await alice.join()
        defer { alice.leave() }
        #expect(alice.localParticipant?.micMuted == true)
        let voice = try Resampler(inputRate: 16000, outputRate: 48000).process(Synthesis.voice(seconds: 2, f0: 200, levelDBFS: -22, seed: 5))
        try await alice.changeMic(customMicrophoneTrack: CustomMicrophoneTrack(source: FileMicrophone(samples: voice, loop: true), label: "voice"))
        #expect(alice.localParticipant?.micMuted == false, "on when the call returns")
        #expect(await Waiting.until { server.mediaStatistics.accepted > 25 }, "and published")
        #expect(alice.getSelectedAudioDevice()?.label == "voice")

        do {
            try alice.setAudioDevice(.speaker)
            #expect(alice.getSelectedAudioDevice() == .speaker, "a machine with a sound card plays there now")
        } catch {
            #expect(error.code == .audioDeviceFailed && error.message.contains("alsa:default"), "\(error)")
            #expect(await Waiting.until(timeout: 5) { log.errors.withLock { $0 }.map(\.code) == [.audioDeviceFailed] })
            #expect(alice.getSelectedAudioDevice()?.label == "voice", "a refused output is not selected")
        }
    }

    // MARK: Speaking while muted

    @Test func speakingWhileMutedFiresWhenJoinedMutedAndNothingIsSent() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let speech = try Resampler(inputRate: 16000, outputRate: 48000).process(Synthesis.voice(seconds: 3, f0: 180, levelDBFS: -22, seed: 21))
        let track = CustomMicrophoneTrack(source: FileMicrophone(samples: speech, loop: true), label: "speech")
        let alice = Self.meeting(server, "alice", microphone: .custom(track), micEnabled: false)
        let bob = Self.meeting(server, "bob", microphone: .none, micEnabled: false)
        let log = DeviceEventLog()
        alice.addEventListener(log)
        try await bob.join()
        defer { bob.leave() }
        try await alice.join()
        defer { alice.leave() }
        #expect(alice.localParticipant?.micMuted == true)

        #expect(await Waiting.until(timeout: 8) { log.speakingWhileMuted.load(ordering: .relaxed) > 0 }, "the local engine hears the muted microphone")
        let statistics = server.mediaStatistics
        #expect(statistics.accepted == 0 && statistics.muted == 0 && statistics.wrongSource == 0, "\(statistics)")
        #expect(bob.receivedPackets.isEmpty)

        // Unmuting publishes the same capture (so the silence above was the mute, not a broken path).
        alice.unmuteMic()
        #expect(await Waiting.until { server.mediaStatistics.accepted > 25 })
        #expect(log.errors.withLock { $0 }.isEmpty, "\(log.errors.withLock { $0 })")
    }

    @Test func speakingWhileMutedFiresAfterMutingALiveMicrophone() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .device(TestMicrophones.voice), micEnabled: true)
        let log = DeviceEventLog()
        alice.addEventListener(log)
        try await alice.join()
        defer { alice.leave() }
        #expect(await Waiting.until { server.mediaStatistics.accepted > 25 })
        // A second of the voice published (five level reports) without a warning.
        let reports = log.levelReports.load(ordering: .relaxed)
        #expect(await Waiting.until { log.levelReports.load(ordering: .relaxed) >= reports + 5 })
        let warningsWhileUnmuted = log.speakingWhileMuted.load(ordering: .relaxed)
        #expect(warningsWhileUnmuted == 0, "not while unmuted")
        alice.muteMic()
        #expect(await Waiting.until(timeout: 8) { log.speakingWhileMuted.load(ordering: .relaxed) > 0 })
        // Muted: nothing more arrives while three level reports (0.6 s of the server's clock) pass.
        let accepted = server.mediaStatistics.accepted
        let later = log.levelReports.load(ordering: .relaxed)
        #expect(await Waiting.until { log.levelReports.load(ordering: .relaxed) >= later + 3 })
        #expect(server.mediaStatistics.accepted == accepted, "nothing sent while muted")
    }

    // MARK: Cameras (signalled state only)

    @Test func camerasAreTheV4L2DeviceNodes() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cameras-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for name in ["video2", "video0", "audio0", "media0"] {
            _ = FileManager.default.createFile(atPath: directory.appendingPathComponent(name).path, contents: nil)
        }
        #expect(DeviceCatalog.cameras(directory: directory.path).map(\.deviceId) == ["video0", "video2"].map { directory.path + "/" + $0 })
        let system = Self.offline().getCameras()
        #expect(system.allSatisfy { $0.deviceId.hasPrefix("/dev/video") })
        #expect(system.count == ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? []).filter { $0.hasPrefix("video") }.count)
    }

    @Test func changeCamToAnUnknownDeviceThrows3010AndReportsIt() async throws {
        let meeting = Self.offline()
        let log = DeviceEventLog()
        meeting.addEventListener(log)
        do {
            try meeting.changeCam(deviceId: "/dev/video-that-does-not-exist")
            Issue.record("changed to an unknown webcam")
        } catch {
            #expect(error.code == .noWebcamFound)
        }
        #expect(await Waiting.until(timeout: 5) { log.errors.withLock { $0 }.map(\.code) == [.noWebcamFound] })
        if let camera = meeting.getCameras().first {
            try meeting.changeCam(deviceId: camera.deviceId)
        }
    }

    @Test func enableAndDisableWebcamReachTheOtherParticipants() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .none, micEnabled: false)
        let bob = Self.meeting(server, "bob", microphone: .none, micEnabled: false)
        let bobLog = DeviceEventLog()
        bob.addEventListener(bobLog)
        try await bob.join()
        defer { bob.leave() }
        try await alice.join()
        defer { alice.leave() }
        #expect(await Waiting.until(timeout: 5) { bob.participants.contains { $0.id == "alice" } })
        #expect(bob.participants.first { $0.id == "alice" }?.videoEnabled == false)

        alice.enableWebcam()
        #expect(await Waiting.until(timeout: 5) { bobLog.all == ["enabled alice video"] }, "\(bobLog.all)")
        #expect(bob.participants.first { $0.id == "alice" }?.videoEnabled == true)
        alice.enableWebcam()  // already on: nothing more is signalled
        alice.disableWebcam()
        #expect(await Waiting.until(timeout: 5) { bobLog.all == ["enabled alice video", "disabled alice video"] }, "\(bobLog.all)")
        #expect(bob.participants.first { $0.id == "alice" }?.videoEnabled == false)
        #expect(server.mediaStatistics.accepted == 0, "video is signalled state only")
    }
}

/// A source that opens once and then refuses: it passes the check before a switch and fails when the
/// publisher starts it.
final class OpensOnceSource: MicrophoneSource, @unchecked Sendable {
    // @unchecked Sendable: `starts` and `running` are atomics; nothing else is mutable.
    let sampleRate = 48000
    let frameSize = 960
    private let starts = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)

    func start() throws {
        guard starts.add(1, ordering: .relaxed).newValue == 1 else {
            throw SpeakerIOError(.device("opens-once"), .deviceBusy)
        }
        running.store(true, ordering: .relaxed)
    }

    func stop() { running.store(false, ordering: .relaxed) }

    func read(into frame: UnsafeMutableBufferPointer<Float>) throws -> MicrophoneRead {
        guard running.load(ordering: .relaxed) else { return .stopped }
        usleep(20_000)
        frame.update(repeating: 0)
        return .frame
    }
}

extension DeviceAPITests {
    @Test func aMicrophoneThatFailsWhenThePublisherStartsItGivesBackThePreviousOne() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .device(TestMicrophones.voice), micEnabled: true)
        let bob = Self.meeting(server, "bob", microphone: .none, micEnabled: false)
        let log = DeviceEventLog(), bobLog = DeviceEventLog()
        alice.addEventListener(log)
        bob.addEventListener(bobLog)
        try await bob.join()
        defer { bob.leave() }
        try await alice.join()
        defer { alice.leave() }
        #expect(await Waiting.until { (bob.receivedPackets["alice"] ?? 0) > 25 })

        do {
            try await alice.changeMic(customMicrophoneTrack: CustomMicrophoneTrack(source: OpensOnceSource(), label: "opens once"))
            Issue.record("changed to a microphone that cannot start")
        } catch {
            #expect(error.code == .audioDeviceFailed)
        }
        #expect(await Waiting.until(timeout: 5) { log.errors.withLock { $0 }.map(\.code) == [.audioDeviceFailed] })
        // Listeners hear events on the meeting's event queue, shortly after the call returns.
        #expect(await Waiting.until(timeout: 5) { log.all == ["disabled alice audio", "enabled alice audio"] }, "\(log.all)")
        let received = bob.receivedPackets["alice"] ?? 0
        #expect(await Waiting.until { (bob.receivedPackets["alice"] ?? 0) > received + 50 }, "the previous microphone publishes again")
        #expect(await Waiting.until { (bobLog.level("alice") ?? -127) > -45 }, "it is the voice device")
    }
}

/// Whether code runs on the main queue. (On Linux the main queue, once the main thread has handed it
/// to dispatch, runs on a worker thread: `Thread.isMainThread` cannot tell.)
enum MainQueue {
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Void = DispatchQueue.main.setSpecific(key: key, value: true)

    static var isCurrent: Bool {
        _ = marked
        return DispatchQueue.getSpecific(key: key) == true
    }
}

/// A device list a test changes: the microphones a meeting sees instead of alsa-lib's.
final class FakeMicrophones: Sendable {
    let devices = Mutex<[AudioDeviceInfo]>([])

    static func microphone(_ id: String) -> AudioDeviceInfo {
        AudioDeviceInfo(deviceId: id, label: "Fake \(id)", kind: .microphone)
    }

    func set(_ ids: [String]) { devices.withLock { $0 = ids.map(Self.microphone) } }
    func list() -> [AudioDeviceInfo] { devices.withLock { $0 } }
}

extension DeviceAPITests {
    @Test func theDeviceListenerHearsMicrophonesPluggedInAndRemovedOnTheMainActor() async throws {
        let fake = FakeMicrophones()
        fake.set(["usb-headset"])
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:9", roomId: "room", token: "x")
        configuration.speaker = .none  // no sound card on the test machines
        configuration.devicePollInterval = 0.05
        let meeting = Meeting(configuration: configuration, microphones: { fake.list() })
        let calls = Mutex<[(AudioDeviceInfo?, [String])]>([])
        let offMain = Atomic<Int>(0)
        meeting.setAudioDeviceChangeListener { selected, devices in
            if !MainQueue.isCurrent { offMain.add(1, ordering: .relaxed) }
            calls.withLock { $0.append((selected, devices.map(\.deviceId))) }
        }
        #expect(await Waiting.until(timeout: 5) { calls.withLock { $0.count } == 1 })
        #expect(calls.withLock { $0[0].1 } == ["Speaker", "usb-headset"])
        #expect(calls.withLock { $0[0].0?.deviceId } == "usb-headset", "the default microphone is selected")

        // Plugged in: told without any call to refreshDevices().
        fake.set(["bluetooth", "usb-headset"])
        #expect(await Waiting.until(timeout: 5) { calls.withLock { $0.count } == 2 }, "\(calls.withLock { $0.map(\.1) })")
        #expect(calls.withLock { $0[1].1 } == ["Speaker", "bluetooth", "usb-headset"])
        // Removed.
        fake.set(["bluetooth"])
        #expect(await Waiting.until(timeout: 5) { calls.withLock { $0.count } == 3 })
        #expect(calls.withLock { $0[2].1 } == ["Speaker", "bluetooth"])
        #expect(calls.withLock { $0[2].0?.deviceId } == "bluetooth")
        #expect(offMain.load(ordering: .relaxed) == 0, "every call on the main queue")

        // Removed listener: the polling stops. A fresh listener's first call proves the time passed
        // in which the old one would have heard the change.
        meeting.setAudioDeviceChangeListener(nil)
        fake.set(["bluetooth", "webcam-mic"])
        let unchanged = Mutex<[[String]]>([])
        let later = Meeting(configuration: configuration, microphones: { fake.list() })
        later.setAudioDeviceChangeListener { _, devices in unchanged.withLock { $0.append(devices.map(\.deviceId)) } }
        fake.set(["bluetooth", "webcam-mic", "third"])
        #expect(await Waiting.until(timeout: 5) { unchanged.withLock { $0.count } >= 2 }, "the other meeting polled")
        #expect(calls.withLock { $0.count } == 3, "a removed listener is not called")
        later.setAudioDeviceChangeListener(nil)
    }

    @Test func getSelectedAudioDeviceIsTheMicrophoneAndChangeMicChangesIt() async throws {
        let meeting = Self.offline()
        let mics = meeting.getMics().filter { $0.kind == .microphone }
        // The default: the first microphone listed, never ALSA's null (alsa.conf defines it).
        #expect(AudioDevices.list().contains { $0.name == "null" && $0.canCapture }, "alsa-lib lists null")
        #expect(!mics.contains { $0.deviceId == "null" })
        #expect(meeting.getSelectedAudioDevice() == mics.first)
        #expect(meeting.getSelectedAudioDevice(kind: .microphone) == mics.first)
        #expect(meeting.getSelectedAudioDevice(kind: .speaker) == .speaker)

        let selected = Mutex<[String?]>([])
        meeting.setAudioDeviceChangeListener { device, _ in selected.withLock { $0.append(device?.deviceId) } }
        #expect(await Waiting.until(timeout: 5) { selected.withLock { $0.count } == 1 })
        try await meeting.changeMic(deviceId: TestMicrophones.voice)
        #expect(meeting.getSelectedAudioDevice()?.deviceId == TestMicrophones.voice)
        #expect(meeting.getSelectedAudioDevice()?.label == TestMicrophones.labels[TestMicrophones.voice])
        #expect(await Waiting.until(timeout: 5) { selected.withLock { $0.last } == TestMicrophones.voice }, "\(selected.withLock { $0 })")
        // With no id, changeMic() goes on through the list, which has no null to land on.
        for _ in 0..<mics.count {
            try? await meeting.changeMic()
            #expect(meeting.getSelectedAudioDevice()?.deviceId != "null")
        }
        meeting.setAudioDeviceChangeListener(nil)

        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:9", roomId: "room", token: "x")
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = .none
        #expect(Meeting(configuration: configuration).getSelectedAudioDevice() == nil)
        configuration.microphone = .custom(CustomMicrophoneTrack(source: FileMicrophone(samples: [0], loop: true), label: "bot.wav"))
        #expect(Meeting(configuration: configuration).getSelectedAudioDevice() == AudioDeviceInfo(deviceId: "custom", label: "bot.wav", kind: .microphone))
    }
}

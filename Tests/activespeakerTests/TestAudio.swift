import Foundation
import Testing
import TestSupport

/// Test recordings written to disk: synthetic rooms with known talk intervals, and broken files.
enum TestAudio {
    /// Writes 16-bit PCM WAV: `channels` are equally long, interleaved in the file.
    static func writeWAV(_ channels: [[Float]], sampleRate: Int = Synthesis.sampleRate, to path: String) throws {
        let frames = channels[0].count
        precondition(channels.allSatisfy { $0.count == frames }, "channels differ in length")
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let dataBytes = frames * channels.count * 2
        data.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(36 + dataBytes))
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16))
        append(UInt16(1))  // PCM
        append(UInt16(channels.count))
        append(UInt32(sampleRate))
        append(UInt32(sampleRate * channels.count * 2))
        append(UInt16(channels.count * 2))
        append(UInt16(16))
        data.append(contentsOf: Array("data".utf8))
        append(UInt32(dataBytes))
        var interleaved = [Int16](repeating: 0, count: frames * channels.count)
        for (index, channel) in channels.enumerated() {
            for frame in 0..<frames {
                interleaved[frame * channels.count + index] = Int16((max(-1, min(1, channel[frame])) * 32767).rounded()).littleEndian
            }
        }
        interleaved.withUnsafeBytes { data.append(contentsOf: $0) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Runs a command-line tool and fails with its standard error if it does not succeed.
    static func runTool(_ tool: String, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ToolError(description: "\(tool) failed: \(String(decoding: message, as: UTF8.self))")
        }
    }

    struct ToolError: Error, CustomStringConvertible {
        let description: String
    }

    /// Synthetic speech: `text` spoken by espeak-ng `voice`, converted by sox to 16 kHz mono (no dither).
    /// Both tools are deterministic, so the samples are the same on every run.
    static func speech(_ text: String, voice: String) throws -> [Float] {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let wav = directory.path("speech.wav"), raw = directory.path("speech.f32")
        try runTool("espeak-ng", ["-v", voice, "-w", wav, text])
        try runTool("sox", ["-D", wav, "-t", "f32", "-r", "16000", "-c", "1", raw])
        let data = try Data(contentsOf: URL(fileURLWithPath: raw))
        return data.withUnsafeBytes { bytes in
            (0..<data.count / 4).map { Float(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
        }
    }

    /// One participant of a synthetic room: −60 dBFS noise for `seconds`, and speech at given times.
    struct Participant: Sendable {
        /// What one talk says, and when it starts.
        struct Talk: Sendable {
            var at: Double
            var text: String
        }

        var name: String
        var seconds: Double
        var talks: [Talk]
        var voice: String
        var seed: UInt64

        /// The samples and, per talk, the interval where the speech is audible (above −40 dBFS),
        /// in seconds; cut at the end of the file.
        func render() throws -> (samples: [Float], talks: [ClosedRange<Double>]) {
            var signal = Synthesis.noise(seconds: seconds, levelDBFS: -60, seed: seed)
            var intervals: [ClosedRange<Double>] = []
            for talk in talks {
                let clip = try TestAudio.speech(talk.text, voice: voice)
                Synthesis.add(clip, into: &signal, at: talk.at)
                let audible = clip.indices.filter { abs(clip[$0]) > 0.01 }
                let rate = Double(Synthesis.sampleRate)
                let start = talk.at + Double(audible.first ?? 0) / rate
                let end = min(talk.at + Double(audible.last ?? 0) / rate, seconds)
                intervals.append(start...end)
            }
            return (Array(signal.prefix(Int(seconds * Double(Synthesis.sampleRate)))), intervals)
        }
    }

    /// Alice talks twice in 9 s; Bob talks once in between, and his file ends after 6 s.
    static let aliceAndBob = [
        Participant(
            name: "alice", seconds: 9,
            talks: [
                .init(at: 0.4, text: "good morning everyone and welcome to the weekly call"),
                .init(at: 6.2, text: "thank you bob that is helpful"),
            ],
            voice: "en-gb+f3", seed: 1),
        Participant(
            name: "bob", seconds: 6, talks: [.init(at: 3.6, text: "thanks alice the numbers look good")],
            voice: "en-us", seed: 2),
    ]

    /// Writes each participant to `<directory>/<name>.wav`; returns the paths and the audible talk intervals.
    static func writeRoom(
        _ participants: [Participant], in directory: TemporaryDirectory
    ) throws -> (paths: [String], talks: [String: [ClosedRange<Double>]]) {
        var paths: [String] = []
        var talks: [String: [ClosedRange<Double>]] = [:]
        for participant in participants {
            let path = directory.path(participant.name + ".wav")
            let (samples, intervals) = try participant.render()
            try writeWAV([samples], to: path)
            paths.append(path)
            talks[participant.name] = intervals
        }
        return (paths, talks)
    }

    /// Writes `seconds` of −50 dBFS noise to `<directory>/<name>.wav` and returns the path: a valid input
    /// for tests that are not about detection.
    static func writeNoise(_ name: String, seconds: Double, in directory: TemporaryDirectory) throws -> String {
        let path = directory.path(name + ".wav")
        try writeWAV([Synthesis.noise(seconds: seconds, levelDBFS: -50, seed: 12)], to: path)
        return path
    }

    /// Inputs that `detect` must refuse with exit status 1.
    enum BadInput: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case missing, notAudio, empty, truncated, noFrames, directory, duplicateID
        case fixtureNotAudio, fixtureEmpty, fixtureTruncated, fixtureHeaderOnly

        var testDescription: String { rawValue }

        /// The synthetic cases, and the `Fixtures/formats` ones whose files exist.
        static var available: [BadInput] {
            allCases.filter { $0.fixture.map { FileManager.default.fileExists(atPath: $0) } ?? true }
        }

        /// The fixture file this case uses, if it uses one.
        var fixture: String? {
            switch self {
            case .fixtureNotAudio: FixturePaths.file("formats/not-audio.wav")
            case .fixtureEmpty: FixturePaths.file("formats/empty.wav")
            case .fixtureTruncated: FixturePaths.file("formats/truncated.wav")
            case .fixtureHeaderOnly: FixturePaths.file("formats/header-only.wav")
            default: nil
            }
        }

        /// Creates the bad file in `directory` (next to a good `alice.wav` already there) and returns
        /// its path: the one the error message must name.
        func make(in directory: TemporaryDirectory) throws -> String {
            if let fixture { return fixture }
            let path = directory.path("bad.wav")
            switch self {
            case .missing:
                return directory.path("no-such-file.wav")
            case .notAudio:
                try Data("this is a text file, not audio\n".utf8).write(to: URL(fileURLWithPath: path))
            case .empty:
                try Data().write(to: URL(fileURLWithPath: path))
            case .truncated:
                try writeWAV([Synthesis.noise(seconds: 1, levelDBFS: -30, seed: 3)], to: path)
                let whole = try Data(contentsOf: URL(fileURLWithPath: path))
                try whole.prefix(44 + 8000).write(to: URL(fileURLWithPath: path))  // header says 16000 frames
            case .noFrames:
                try writeWAV([[]], to: path)
            case .directory:
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
            case .duplicateID:
                let sub = directory.url.appendingPathComponent("other")
                try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
                let duplicate = sub.appendingPathComponent("alice.wav").path
                try writeWAV([Synthesis.noise(seconds: 1, levelDBFS: -50, seed: 4)], to: duplicate)
                return duplicate
            case .fixtureNotAudio, .fixtureEmpty, .fixtureTruncated, .fixtureHeaderOnly:
                preconditionFailure("handled above")
            }
            return path
        }
    }
}

import Foundation
import SpeakerFiles
import SpeakerIO
import SpeakerOpus
import Testing
import TestSupport

/// The Ogg Opus writer: files that libsndfile and opus-tools read back exactly as written, and silence
/// that costs a few encoder calls whatever its length.
@Suite struct OggOpusWriterTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("ogg-opus-\(UUID().uuidString).opus").path
    }

    static func rms(_ samples: ArraySlice<Float>) -> Double {
        (samples.reduce(0.0) { $0 + Double($1 * $1) } / Double(max(samples.count, 1))).squareRoot()
    }

    /// A tone, silence and a tone again, in lengths that are no whole number of 20 ms frames: libsndfile
    /// reads back exactly the samples written, at their places (pre-skip and end trimming right), and the
    /// tone's waveform lines up with the input.
    @Test func libsndfileReadsBackExactlyWhatWasWritten() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let first = Synthesis.sine(seconds: 1.2345, frequency: 440, amplitude: 0.5)
        let second = Synthesis.sine(seconds: 0.7071, frequency: 660, amplitude: 0.5)
        let silence = 11_113
        let writer = try OggOpusWriter(path: path, sampleRate: 16_000)
        try first.withUnsafeBufferPointer { try writer.write($0) }
        try writer.writeSilence(silence)
        try second.withUnsafeBufferPointer { try writer.write($0) }
        try writer.close()
        #expect(writer.framesWritten == first.count + silence + second.count)

        let file = try AudioFile(path: path)
        #expect(file.sampleRate == 16_000)
        #expect(file.formatDescription == "Ogg Opus")
        #expect(file.frameCount == writer.framesWritten, "header says \(file.frameCount), written \(writer.framesWritten)")
        let samples = try file.readAllChannels()[0]
        #expect(samples.count == writer.framesWritten)
        // Aligned: the decoded tone against the input, away from the edges, within a few percent.
        let middle = 4_000..<12_000
        let error = zip(samples[middle], first[middle]).reduce(0.0) { $0 + Double(($1.0 - $1.1) * ($1.0 - $1.1)) }
        let signal = first[middle].reduce(0.0) { $0 + Double($1 * $1) }
        #expect(error / signal < 0.1, "error/signal \(error / signal): the decoded tone does not line up with the input")
        let gap = (first.count + 800)..<(first.count + silence - 800)
        #expect(Self.rms(samples[gap]) < 0.001, "silence decoded as \(Self.rms(samples[gap]))")
        let after = (first.count + silence + 800)..<(samples.count - 800)
        #expect(Self.rms(samples[after]) > 0.3, "the second tone: \(Self.rms(samples[after]))")
    }

    /// Three minutes of silence between two tones take a dozen encoder calls, not 9,000, and still decode
    /// to silence of exactly that length with the second tone at its place.
    @Test func longSilenceRepeatsOnePacket() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let tone = Synthesis.sine(seconds: 0.5, frequency: 440, amplitude: 0.5)
        let silence = 180 * 16_000 + 77
        let writer = try OggOpusWriter(path: path, sampleRate: 16_000)
        try tone.withUnsafeBufferPointer { try writer.write($0) }
        let before = writer.framesEncoded
        try writer.writeSilence(silence)
        #expect(writer.framesEncoded - before <= OggOpusWriterTests.silentFramesEncodedAtMost, "\(writer.framesEncoded - before) frames encoded for 3 minutes of silence")
        try tone.withUnsafeBufferPointer { try writer.write($0) }
        try writer.close()

        let samples = try AudioFile(path: path).readAllChannels()[0]
        #expect(samples.count == tone.count * 2 + silence)
        let gap = (tone.count + 800)..<(tone.count + silence - 800)
        #expect(Self.rms(samples[gap]) < 0.001, "silence decoded as \(Self.rms(samples[gap]))")
        let second = (tone.count + silence + 800)..<(samples.count - 800)
        #expect(Self.rms(samples[second]) > 0.3, "the tone after the silence: \(Self.rms(samples[second]))")
    }

    /// `writeSilence` encodes at most this many frames: the rest of a partial frame, the frames until the
    /// encoder has settled on silence, and nothing for the rest.
    static let silentFramesEncodedAtMost = 12

    /// opus-tools' `opusinfo` checks every page's CRC, the granule positions and the headers.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/opusinfo"), "needs opus-tools"))
    func opusinfoFindsAValidStream() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try OggOpusWriter(path: path, sampleRate: 16_000)
        let tone = Synthesis.sine(seconds: 2.5, frequency: 300, amplitude: 0.3)
        try tone.withUnsafeBufferPointer { try writer.write($0) }
        try writer.writeSilence(16_000 * 30)
        try tone.withUnsafeBufferPointer { try writer.write($0) }
        try writer.close()

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/opusinfo")
        process.arguments = [path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        #expect(!text.contains("WARNING") && !text.contains("ERROR"), "\(text)")
        #expect(text.contains("Playback length: 0m:35.000s"), "\(text)")
        #expect(text.contains("Pre-skip: 312"), "\(text)")
    }

    /// A file that cannot be created is reported with its path; writing after close is an error.
    @Test func errorsNameTheFile() throws {
        #expect {
            _ = try OggOpusWriter(path: "/nonexistent-folder/x.opus", sampleRate: 16_000)
        } throws: { error in
            "\(error)".hasPrefix("/nonexistent-folder/x.opus")
        }
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let writer = try OggOpusWriter(path: path, sampleRate: 16_000)
        try writer.close()
        #expect(throws: SpeakerIOError.self) { try writer.writeSilence(10) }
    }
}

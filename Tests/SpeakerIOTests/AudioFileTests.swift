import Foundation
import SpeakerFiles
import SpeakerIO
import Testing

@Suite("AudioFile")
struct AudioFileTests {
    @Test("reads each format: rate, channels, description, frames, levels", arguments: FormatFixtures.readable.map(\.name))
    func readsFormat(name: String) throws {
        let expected = try #require(FormatFixtures.readable.first { $0.name == name })
        let file = try AudioFile(path: FormatFixtures.path(name))
        #expect(file.sampleRate == expected.sampleRate)
        #expect(file.channelCount == expected.channels)
        #expect(file.formatDescription == expected.format)
        // The clip lasts 1.064 s in every format (17024 frames at 16 kHz).
        #expect(abs(Double(file.frameCount) / Double(file.sampleRate) - 1.064) < 0.001)

        let channels = try file.readAllChannels()
        #expect(channels.count == expected.channels)
        for channel in channels {
            #expect(channel.count == file.frameCount)
            #expect(channel.allSatisfy { abs($0) <= 1.0001 }, "normalised to ±1")
            #expect(Signals.rms(channel) > 0.001, "not silent")
        }
        #expect(file.framesRead == file.frameCount)
    }

    @Test("streaming reads in small chunks give the same interleaved samples as one full read")
    func streamingMatchesFullRead() throws {
        let path = FormatFixtures.path("stereo-48k.wav")
        let channels = try AudioFile(path: path).readAllChannels()
        let file = try AudioFile(path: path)
        var buffer = [Float](repeating: .nan, count: 1001 * file.channelCount)
        var streamed: [[Float]] = Array(repeating: [], count: file.channelCount)
        while true {
            let frames = try buffer.withUnsafeMutableBufferPointer { try file.readFrames(into: $0) }
            if frames == 0 { break }
            for frame in 0..<frames {
                for channel in 0..<file.channelCount { streamed[channel].append(buffer[frame * file.channelCount + channel]) }
            }
        }
        #expect(streamed == channels)
        let again = try buffer.withUnsafeMutableBufferPointer { try file.readFrames(into: $0) }
        #expect(again == 0, "end of file stays the end")
    }

    @Test("16-bit PCM WAV: every sample value comes out as libsndfile normalises it, v / 32768, across read blocks")
    func sixteenBitValuesAreExact() throws {
        let values = (Int(Int16.min)...Int(Int16.max)).map { Int16($0) }
        var data = FormatFixtures.wavHeader(dataBytes: UInt32(values.count * 2))
        for value in values { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let path = try FormatFixtures.temporaryDirectory().appendingPathComponent("all-values.wav").path
        try data.write(to: URL(fileURLWithPath: path))
        let file = try AudioFile(path: path)
        #expect(file.formatDescription == "WAV 16-bit PCM")
        var read: [Float] = []
        var buffer = [Float](repeating: .nan, count: 3_001)
        while true {
            let frames = try buffer.withUnsafeMutableBufferPointer { try file.readFrames(into: $0) }
            if frames == 0 { break }
            read += buffer[..<frames]
        }
        #expect(read.count == values.count)
        let mismatches = zip(read, values).filter { $0.0 != Float($0.1) / 32_768 }
        #expect(mismatches.isEmpty, "first: \(mismatches.prefix(3))")
        #expect(read.first == -1 && read.last == 32_767 / 32_768)
    }

    // MARK: - Bad input: the right kind, one line naming the file

    @Test("an empty file")
    func emptyFile() throws {
        let path = FormatFixtures.path("empty.wav")
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .emptyFile)
        #expect(error.subject == .file(path))
        #expect(error.description == "\(path): file is empty")
    }

    @Test("a file that is not audio")
    func notAudio() throws {
        let path = FormatFixtures.path("not-audio.wav")
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .notAudio)
        #expect(error.library == "libsndfile")
        #expect(error.code == 1)
        #expect(error.description == "\(path): not an audio file (libsndfile: Format not recognised.)")
    }

    @Test("the truncated WAV fixture: its header promises more frames than it holds")
    func truncatedFixture() throws {
        // Cut in the middle of the data chunk and of a sample: 17024 frames declared, 8512 whole ones present.
        // libsndfile alone would open it and report 8512 frames without complaint.
        let path = FormatFixtures.path("truncated.wav")
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .truncated(expectedFrames: 17024, readableFrames: 8512))
        #expect(error.description == "\(path): truncated: header promises 17024 frames, only 8512 readable")
    }

    @Test("a WAV whose data chunk is cut to a quarter: exact frame counts in the message")
    func truncatedWAVCounts() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("x.wav").path
        // 16000 frames promised (32000 bytes of 16-bit mono), 4000 frames present.
        try (FormatFixtures.wavHeader(dataBytes: 32000) + Data(count: 8000)).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .truncated(expectedFrames: 16000, readableFrames: 4000))
        #expect(error.description == "\(path): truncated: header promises 16000 frames, only 4000 readable")
    }

    @Test("a WAV header without samples")
    func headerOnlyFixture() throws {
        let path = FormatFixtures.path("header-only.wav")
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .noAudioFrames)
        #expect(error.description == "\(path): contains no audio frames")
    }

    @Test("a valid WAV with zero frames")
    func zeroFrames() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("silence.wav").path
        try FormatFixtures.wavHeader(dataBytes: 0).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .noAudioFrames)
        #expect(error.description == "\(path): contains no audio frames")
    }

    @Test("a path that does not exist, and a directory")
    func missingAndDirectory() throws {
        let missing = "/nonexistent/x.wav"
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: missing) }
        #expect(error.kind == .noSuchFile)
        #expect(error.description == "/nonexistent/x.wav: no such file")

        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let directoryError = try #require(throws: SpeakerIOError.self) { try AudioFile(path: directory.path) }
        #expect(directoryError.kind == .cannotOpen)
        #expect(directoryError.description == "\(directory.path): cannot open (system: is a directory)")
    }

    @Test("an Ogg stream of a codec libsndfile does not implement")
    func unsupportedEncoding() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("x.ogg").path
        try (Data("OggS".utf8) + Data(count: 200)).write(to: URL(fileURLWithPath: path))
        let error = try #require(throws: SpeakerIOError.self) { try AudioFile(path: path) }
        #expect(error.kind == .unsupportedEncoding)
        #expect(error.description.hasPrefix("\(path): unsupported encoding (libsndfile: "))
    }

    @Test("a FLAC file cut short opens, then reading it ends in .truncated")
    func truncatedFLAC() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("cut.flac").path
        let whole = try Data(contentsOf: URL(fileURLWithPath: FormatFixtures.path("speech.flac")))
        try whole.prefix(whole.count * 6 / 10).write(to: URL(fileURLWithPath: path))
        let file = try AudioFile(path: path)
        let error = try #require(throws: SpeakerIOError.self) { try file.readAllChannels() }
        guard case .truncated(let expected, let readable) = error.kind else {
            Issue.record("expected .truncated, got \(error)")
            return
        }
        #expect(expected == file.frameCount)
        #expect(readable > 0 && readable < expected)
        #expect(error.description.hasPrefix("\(path): truncated: header promises \(expected) frames"))
    }
}

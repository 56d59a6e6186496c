import Foundation
import SpeakerFiles
import SpeakerIO
import Testing

@Suite("loadStreams")
struct StreamLoaderTests {
    static let speechFiles = FormatFixtures.readable.map(\.name).filter { $0.hasPrefix("speech") }

    /// The 16 kHz reference every other format is compared with.
    static func reference() throws -> DecodedStream {
        try #require(try loadStreams(paths: [FormatFixtures.path("speech-s16.wav")]).first)
    }

    @Test("every format decodes to 16 kHz with the length of its source", arguments: speechFiles)
    func duration(name: String) throws {
        let path = FormatFixtures.path(name)
        let source = try AudioFile(path: path)
        let streams = try loadStreams(paths: [path])
        let stream = try #require(streams.first)
        #expect(streams.count == 1)
        #expect(stream.id == String(name.split(separator: ".")[0]))
        #expect(stream.sampleRate == 16000)
        #expect(stream.sourceRate == source.sampleRate)
        #expect(stream.sourceDescription == "\(source.formatDescription), \(source.sampleRate) Hz")
        let expected = Double(source.frameCount) * 16000 / Double(source.sampleRate)
        #expect(abs(Double(stream.samples.count) - expected) <= 1)
        // All formats carry the same recording: durations agree within one 10 ms hop.
        #expect(abs(stream.duration - (try Self.reference()).duration) <= 0.01)
    }

    @Test(
        "every format carries the same content as the 16-bit WAV (correlation of the 16 kHz decodes)",
        arguments: [
            // Lossless formats match to rounding (measured ≥ 0.99999999); Vorbis 0.998 and Opus 0.997 measured.
            ("speech.flac", 0.9999), ("speech-s32.wav", 0.9999), ("speech-s24-48k.wav", 0.9999),
            ("speech-f32-44k.wav", 0.9999), ("speech.ogg", 0.98), ("speech.opus", 0.98),
        ])
    func sameContent(name: String, minimumCorrelation: Double) throws {
        let reference = try Self.reference().samples
        let stream = try #require(try loadStreams(paths: [FormatFixtures.path(name)]).first)
        // libsndfile drops the Ogg Opus pre-skip itself, so no format should need a shift: search ±5 ms anyway
        // and require the best lag within 1 ms.
        let (lag, correlation) = Signals.bestLag(reference, stream.samples, maximumLag: 80)
        #expect(correlation >= minimumCorrelation, "correlation \(correlation) at lag \(lag)")
        #expect(abs(lag) <= 16, "lag \(lag) samples")
        if name == "speech.flac" { #expect(lag == 0) }
    }

    @Test("a stereo file gives <name>-ch1 and <name>-ch2, or one averaged stream when downmixed")
    func multichannel() throws {
        let path = FormatFixtures.path("stereo-48k.wav")
        let split = try loadStreams(paths: [path])
        #expect(split.map(\.id) == ["stereo-48k-ch1", "stereo-48k-ch2"])
        #expect(split.map(\.sourceRate) == [48000, 48000])
        #expect(split[0].sourceDescription.hasSuffix("48000 Hz, channel 1 of 2"))
        #expect(split[1].sourceDescription.hasSuffix("48000 Hz, channel 2 of 2"))
        #expect(split[0].samples != split[1].samples, "the channels differ")

        let mixed = try loadStreams(paths: [path], downmix: true)
        let stream = try #require(mixed.first)
        #expect(mixed.count == 1)
        #expect(stream.id == "stereo-48k")
        #expect(stream.sourceDescription.hasSuffix("2 channels averaged"))
        // Resampling is linear: the resampled average is the average of the resampled channels.
        #expect(stream.samples.count == split[0].samples.count)
        let error = zip(stream.samples, zip(split[0].samples, split[1].samples)).map { abs($0 - ($1.0 + $1.1) / 2) }
        #expect((error.max() ?? 1) < 1e-5)
    }

    @Test("another output rate")
    func otherRate() throws {
        let path = FormatFixtures.path("speech-s24-48k.wav")
        let source = try AudioFile(path: path)
        let stream = try #require(try loadStreams(paths: [path], sampleRate: 8000).first)
        #expect(stream.sampleRate == 8000)
        #expect(stream.samples.count == source.frameCount / 6)
    }

    @Test("ids: base name without the last extension, files in order")
    func ids() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = URL(fileURLWithPath: FormatFixtures.path("speech-s16.wav"))
        let names = ["alice.take2.wav", "bob.flac.wav", "carol"]
        for name in names { try FileManager.default.copyItem(at: source, to: directory.appendingPathComponent(name)) }
        let streams = try loadStreams(paths: names.map { directory.appendingPathComponent($0).path })
        #expect(streams.map(\.id) == ["alice.take2", "bob.flac", "carol"])
    }

    @Test("the same id from two files is an error naming both")
    func duplicateIDs() throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = directory.appendingPathComponent("a")
        let second = directory.appendingPathComponent("b")
        try FileManager.default.createDirectory(at: first, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: second, withIntermediateDirectories: true)
        let source = URL(fileURLWithPath: FormatFixtures.path("speech-s16.wav"))
        try FileManager.default.copyItem(at: source, to: first.appendingPathComponent("alice.wav"))
        try FileManager.default.copyItem(at: source, to: second.appendingPathComponent("alice.flac"))
        let paths = [first.appendingPathComponent("alice.wav").path, second.appendingPathComponent("alice.flac").path]

        let error = try #require(throws: SpeakerIOError.self) { try loadStreams(paths: paths) }
        #expect(error.kind == .duplicateStreamID(id: "alice", firstPath: paths[0]))
        #expect(error.description == "\(paths[1]): stream id \"alice\" is already taken by \(paths[0])")

        // A channel of a stereo file and a mono file can collide too.
        let stereo = directory.appendingPathComponent("duo.wav")
        let mono = directory.appendingPathComponent("duo-ch2.wav")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: FormatFixtures.path("stereo-48k.wav")), to: stereo)
        try FileManager.default.copyItem(at: source, to: mono)
        let channelError = try #require(throws: SpeakerIOError.self) {
            try loadStreams(paths: [stereo.path, mono.path])
        }
        #expect(channelError.kind == .duplicateStreamID(id: "duo-ch2", firstPath: stereo.path))
        #expect(try loadStreams(paths: [stereo.path, mono.path], downmix: true).map(\.id) == ["duo", "duo-ch2"])
    }

    @Test("a bad file among good ones: the error names it", arguments: ["empty.wav", "not-audio.wav", "truncated.wav"])
    func badFileNamed(name: String) throws {
        let bad = FormatFixtures.path(name)
        let error = try #require(throws: SpeakerIOError.self) {
            try loadStreams(paths: [FormatFixtures.path("speech-s16.wav"), bad])
        }
        #expect(error.subject == .file(bad))
        #expect(error.description.hasPrefix("\(bad): "))
        #expect(!error.description.contains("\n"))
    }
}

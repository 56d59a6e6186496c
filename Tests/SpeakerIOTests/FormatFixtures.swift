import Foundation
import TestSupport

/// The files of `Fixtures/formats/` (made by `tools/corpus/make_format_fixtures.py`) and small helpers for
/// files a test writes itself.
enum FormatFixtures {
    /// Good files: name, sample rate, channels and `formatDescription`, as Fixtures/README.md lists them.
    /// (`speech.opus` was encoded from the 16 kHz WAV: libsndfile decodes it at 16 kHz.)
    static let readable: [(name: String, sampleRate: Int, channels: Int, format: String)] = [
        ("speech-s16.wav", 16000, 1, "WAV 16-bit PCM"),
        ("speech-s24-48k.wav", 48000, 1, "WAV 24-bit PCM"),
        ("speech-f32-44k.wav", 44100, 1, "WAV 32-bit float"),
        ("speech-s32.wav", 16000, 1, "WAV 32-bit PCM"),
        ("speech.flac", 16000, 1, "FLAC"),
        ("speech.ogg", 16000, 1, "Ogg Vorbis"),
        ("speech.opus", 16000, 1, "Ogg Opus"),
        ("stereo-48k.wav", 48000, 2, "WAV 16-bit PCM"),
    ]

    /// The path of `Fixtures/formats/<name>`.
    static func path(_ name: String) -> String {
        FixturePaths.file("formats/\(name)")
    }

    /// A fresh temporary directory for one test.
    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("SpeakerIOTests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A canonical 44-byte WAV header for 16 kHz mono 16-bit PCM whose data chunk declares `dataBytes`.
    static func wavHeader(dataBytes: UInt32) -> Data {
        var header = Data()
        func append(_ text: String) { header.append(contentsOf: Array(text.utf8)) }
        func append32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        func append16(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        append("RIFF")
        append32(36 + dataBytes)
        append("WAVE")
        append("fmt ")
        append32(16)
        append16(1)  // PCM
        append16(1)  // channels
        append32(16000)  // frames per second
        append32(32000)  // bytes per second
        append16(2)  // bytes per frame
        append16(16)  // bits per sample
        append("data")
        append32(dataBytes)
        return header
    }
}

import SpeakerBase
import SpeakerIO
/// One mono stream decoded from a file and resampled for the engine.
public struct DecodedStream: Sendable, Equatable {
    /// The stream id: the file's base name without extension (`alice` for `talks/alice.wav`),
    /// `<basename>-ch<N>` (N from 1) for channel N of a multichannel file that is not downmixed.
    public var id: String
    /// Samples at `sampleRate`, nominally in [-1, 1].
    public var samples: [Float]
    /// Samples per second of `samples`.
    public var sampleRate: Int
    /// The file's own sample rate, in Hz.
    public var sourceRate: Int
    /// Format, rate and channel of the source, e.g. `WAV 24-bit PCM, 48000 Hz, channel 2 of 2`.
    public var sourceDescription: String
    /// The path the stream was read from, as given.
    public var sourcePath: String

    /// Duration in seconds.
    public var duration: Double { Double(samples.count) / Double(sampleRate) }
}

/// Decodes audio files into mono streams at one sample rate.
///
/// Each file gives one stream, or one per channel (`<basename>-ch1`, `-ch2`, …) unless `downmix` averages
/// the channels into one. Streams are resampled with `Resampler` (libsoxr, high quality, time-aligned) when
/// the file's rate differs from `sampleRate`. Streams come back in the order of `paths`, channels in order.
/// All files are opened and their stream ids checked before any is decoded.
///
/// - Parameters:
///   - paths: Audio files (WAV, FLAC, Ogg Vorbis, Ogg Opus, …).
///   - sampleRate: Output samples per second, > 0; the engine's 16000 by default.
///   - downmix: Average the channels of multichannel files into one stream instead of one stream each.
/// - Returns: The streams, each `round(frames × sampleRate / sourceRate)` samples long.
/// - Throws: `SpeakerIOError` naming the file: anything `AudioFile` throws, and `.duplicateStreamID` when two
///   files give the same id (the message names both files).
/// - Complexity: O(total samples) time and memory.
public func loadStreams(paths: [String], sampleRate: Int = AnalysisFormat.sampleRate, downmix: Bool = false) throws -> [DecodedStream] {
    precondition(sampleRate > 0, "sampleRate must be positive")
    var files: [(file: AudioFile, ids: [String])] = []
    var ownerOfID: [String: String] = [:]
    for path in paths {
        let file = try AudioFile(path: path)
        let base = streamBaseName(path: path)
        let ids =
            downmix || file.channelCount == 1 ? [base] : (1...file.channelCount).map { "\(base)-ch\($0)" }
        for id in ids {
            if let firstPath = ownerOfID[id] {
                throw SpeakerIOError(.file(path), .duplicateStreamID(id: id, firstPath: firstPath))
            }
            ownerOfID[id] = path
        }
        files.append((file, ids))
    }

    var streams: [DecodedStream] = []
    for (file, ids) in files {
        var channels = try file.readAllChannels()
        if downmix && channels.count > 1 { channels = [average(channels)] }
        let source = "\(file.formatDescription), \(file.sampleRate) Hz"
        for (channel, id) in zip(channels.indices, ids) {
            let detail =
                file.channelCount == 1
                ? source
                : downmix
                    ? "\(source), \(file.channelCount) channels averaged"
                    : "\(source), channel \(channel + 1) of \(file.channelCount)"
            let samples: [Float]
            do {
                samples = try Resampler.resample(channels[channel], from: file.sampleRate, to: sampleRate)
            } catch var error as SpeakerIOError {
                error.subject = .file(file.path)
                throw error
            }
            streams.append(
                DecodedStream(
                    id: id, samples: samples, sampleRate: sampleRate, sourceRate: file.sampleRate,
                    sourceDescription: detail, sourcePath: file.path))
        }
    }
    return streams
}

/// The file name without directories and without its last extension: `a/b/alice.take2.wav` → `alice.take2`.
/// A name that starts with its only dot (`.wav`) is kept whole.
func streamBaseName(path: String) -> String {
    let name = path.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? path
    guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return name }
    return String(name[..<dot])
}

/// The sample-wise mean of equally long channels.
private func average(_ channels: [[Float]]) -> [Float] {
    let scale = 1 / Float(channels.count)
    var mix = [Float](repeating: 0, count: channels[0].count)
    for channel in channels {
        for index in mix.indices { mix[index] += channel[index] }
    }
    for index in mix.indices { mix[index] *= scale }
    return mix
}

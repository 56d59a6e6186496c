import Foundation
import SpeakerCore
import SpeakerFiles

/// The fixture meeting tracks (`Fixtures/meetings/*/*.flac`, 16 kHz) in one buffer, shared by every
/// simulated stream: 10,000 streams × 20 s of their own Float32 would be 12.8 GB, so streams read the
/// few tracks at different offsets instead, looping.
///
/// Each track is stored followed by a copy of its first hop, so the hop that starts at any position
/// inside a track is contiguous in memory.
final class AudioPool {
    struct Track {
        /// `meeting/stream`, e.g. `m2-noisy/bob`.
        let name: String
        /// Index of the first sample in `samples`.
        let start: Int
        /// Samples of the track proper (the copied hop after it not counted).
        let length: Int
    }

    let tracks: [Track]
    /// All tracks, each followed by its first hop again. Never freed (lives as long as the process).
    let samples: UnsafeMutableBufferPointer<Float>

    /// Total seconds of distinct audio.
    var seconds: Double { Double(tracks.reduce(0) { $0 + $1.length }) / Double(AnalysisFormat.sampleRate) }

    init(fixtures directory: String) throws {
        let meetings = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        var paths: [(name: String, path: String)] = []
        for meeting in meetings {
            let folder = directory + "/" + meeting
            guard let files = try? FileManager.default.contentsOfDirectory(atPath: folder) else { continue }
            for file in files.sorted() where file.hasSuffix(".flac") {
                paths.append((meeting + "/" + file.dropLast(5), folder + "/" + file))
            }
        }
        guard !paths.isEmpty else { throw BenchmarkError("no .flac tracks under \(directory)") }
        // One file per call: meetings reuse stream names (alice, bob), which one call would reject.
        let streams = try paths.flatMap { try loadStreams(paths: [$0.path], sampleRate: AnalysisFormat.sampleRate) }
        let hop = AnalysisFormat.hopSize
        let total = streams.reduce(0) { $0 + $1.samples.count + hop }
        samples = .allocate(capacity: total)
        var tracks: [Track] = []
        var start = 0
        for (stream, entry) in zip(streams, paths) {
            let track = stream.samples
            precondition(track.count >= hop, "\(entry.path) is shorter than one hop")
            _ = UnsafeMutableBufferPointer(rebasing: samples[start..<start + track.count]).initialize(from: track)
            _ = UnsafeMutableBufferPointer(rebasing: samples[start + track.count..<start + track.count + hop])
                .initialize(from: track[0..<hop])
            tracks.append(Track(name: entry.name, start: start, length: track.count))
            start += track.count + hop
        }
        self.tracks = tracks
    }

    /// Finds `Fixtures/meetings` in the working directory or one above it, or next to the executable's package.
    static func locateFixtures() -> String? {
        var candidates: [String] = []
        var directory = FileManager.default.currentDirectoryPath
        for _ in 0..<4 {
            candidates.append(directory + "/Fixtures/meetings")
            directory = (directory as NSString).deletingLastPathComponent
        }
        // .build/<triple>/release/Benchmarks → package root three or four levels up.
        var executable = (executablePath() as NSString).deletingLastPathComponent
        for _ in 0..<5 {
            candidates.append(executable + "/Fixtures/meetings")
            executable = (executable as NSString).deletingLastPathComponent
        }
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }
}

/// Hands each simulated stream its next 10 ms hop from the pool: stream `s` plays track `s mod tracks`
/// from a seeded random offset, looping, so no two streams of a room are the same recording and no two
/// streams playing the same track are in step.
struct HopFeed {
    /// Keeps the samples alive.
    let pool: AudioPool
    /// `pool.samples.baseAddress`, held here so the per-hop path touches no class reference.
    private let base: UnsafeMutablePointer<Float>
    /// Per stream: first sample of its track in the pool, track length, and the next hop's position in the track.
    private var start: [Int]
    private var length: [Int]
    private var position: [Int]

    var count: Int { start.count }

    init(pool: AudioPool, streams: Int, seed: UInt64) {
        self.pool = pool
        base = pool.samples.baseAddress!
        var random = SplitMix64(seed: seed)
        start = []
        length = []
        position = []
        start.reserveCapacity(streams)
        length.reserveCapacity(streams)
        position.reserveCapacity(streams)
        for stream in 0..<streams {
            let track = pool.tracks[stream % pool.tracks.count]
            start.append(track.start)
            length.append(track.length)
            position.append(Int(random.next() % UInt64(track.length)))
        }
    }

    /// The next hop of `stream` (`AnalysisFormat.hopSize` samples), advancing it. Allocates nothing.
    @inline(__always)
    mutating func next(_ stream: Int) -> UnsafeBufferPointer<Float> {
        let hop = AnalysisFormat.hopSize
        let at = position[stream]
        var following = at + hop
        if following >= length[stream] { following -= length[stream] }
        position[stream] = following
        return UnsafeBufferPointer(start: base + start[stream] + at, count: hop)
    }

    /// The next `count` samples of `stream` copied into `output` (for encoders and file writers).
    mutating func copyNext(_ stream: Int, into output: UnsafeMutableBufferPointer<Float>) {
        var filled = 0
        while filled < output.count {
            let at = position[stream]
            let take = min(output.count - filled, length[stream] - at)
            let source = base + start[stream] + at
            (output.baseAddress! + filled).update(from: source, count: take)
            filled += take
            position[stream] = at + take == length[stream] ? 0 : at + take
        }
    }
}

/// SplitMix64: a small seeded generator (Steele, Lea & Flood 2014), for reproducible offsets.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}

/// The path of the running executable (from /proc/self/exe where it exists).
func executablePath() -> String {
    if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return resolved }
    return CommandLine.arguments[0]
}

import SpeakerCore
import SpeakerOpus

/// Scenario 3: Opus packets decoded with libopus at 16 kHz and analysed, against decoding alone.
enum OpusScenario {
    static let streams = 64
    static let roomSize = 5
    static let bitrate = 24_000
    /// Samples per 20 ms packet at 16 kHz.
    static let packetSamples = 320

    static func run(pool: AudioPool, options: Options) throws -> ScenarioResult {
        var result = ScenarioResult(id: 3, title: "Opus 16 kHz, \(streams) streams, rooms of \(roomSize), 1 worker")
        let encodeWatch = Stopwatch()
        let packets = try PacketTracks(pool: pool, bitrate: bitrate)
        let encodeSeconds = encodeWatch.elapsed().cpu
        // Two ticks per packet; a run of `ticks` ticks is ticks / 2 packets per stream.
        let packetsPerRun = max(25, options.budget.ticks(streams: streams) / 4)
        let audioSeconds = Double(streams * packetsPerRun * packetSamples) / Double(AnalysisFormat.sampleRate)

        var decodeOnly = try OpusLoad(packets: packets, streams: streams, analyse: false, configuration: options.configuration)
        var decodeAnalyse = try OpusLoad(packets: packets, streams: streams, analyse: true, configuration: options.configuration)
        decodeOnly.warmUp(packets: packetsPerRun / 4 + 10)
        decodeAnalyse.warmUp(packets: packetsPerRun / 4 + 10)
        var decodeFactor: [Double] = []
        var fullFactor: [Double] = []
        var overhead: [Double] = []
        // Alternate the two, so a noisy neighbour slows both alike.
        for _ in 0..<options.runs {
            let decodeCPU = try decodeOnly.measure(packets: packetsPerRun)
            let fullCPU = try decodeAnalyse.measure(packets: packetsPerRun)
            decodeFactor.append(audioSeconds / decodeCPU)
            fullFactor.append(audioSeconds / fullCPU)
            overhead.append((fullCPU - decodeCPU) / audioSeconds * 1e6)
        }
        var checksum = Checksum()
        checksum.add(decodeOnly.checksum.value)
        checksum.add(decodeAnalyse.finish().value)
        let decode = Summary(decodeFactor)
        let full = Summary(fullFactor)
        let analysis = Summary(overhead)
        let decodeMicroseconds = 1e6 / decode.median
        let fullMicroseconds = 1e6 / full.median
        result.table = [
            ["work", "streams/core in real time (CPU)", "CPU µs per stream-second", "share"],
            ["decode only", decode.text { Format.number($0) }, Format.significant(decodeMicroseconds),
             Format.number(100 * decodeMicroseconds / fullMicroseconds, decimals: 1) + " %"],
            ["analysis (difference)", "", analysis.text(Format.significant),
             Format.number(100 * analysis.median / fullMicroseconds, decimals: 1) + " %"],
            ["decode + analysis", full.text { Format.number($0) }, Format.significant(fullMicroseconds), "100 %"],
        ]
        var decodeRow = ResultRow(label: "decode only")
        decodeRow.parameters = ["streams": streams, "packetsPerRun": packetsPerRun, "bitrate": bitrate]
        decodeRow.metrics = ["streamsPerCoreRealTime": decode]
        var fullRow = ResultRow(label: "decode + analysis")
        fullRow.parameters = decodeRow.parameters
        fullRow.metrics = ["streamsPerCoreRealTime": full, "analysisMicrosecondsPerStreamSecond": analysis]
        result.rows = [decodeRow, fullRow]
        result.checksum = checksum.hex
        result.notes = [
            "Packets: 20 ms, \(bitrate / 1000) kbit/s VOIP, encoded once from the fixture tracks (\(Format.number(Double(packets.packetCount))) packets, mean \(Format.number(packets.meanBytes, decimals: 1)) B, \(Format.number(encodeSeconds, decimals: 1)) s to encode; not timed).",
            "Each stream has its own decoder; its 320 decoded samples feed two engine ticks. Analysis = (decode + analysis) − decode, per run pair; share of the median total.",
        ]
        return result
    }
}

/// Every pool track encoded as 20 ms Opus packets at 16 kHz, stored back to back.
struct PacketTracks {
    /// Per track: packet byte ranges into `bytes`.
    var tracks: [[Range<Int>]] = []
    var bytes: [UInt8] = []

    var packetCount: Int { tracks.reduce(0) { $0 + $1.count } }
    var meanBytes: Double { Double(bytes.count) / Double(max(packetCount, 1)) }

    init(pool: AudioPool, bitrate: Int) throws {
        let frame = OpusScenario.packetSamples
        var packet = [UInt8](repeating: 0, count: OpusPacketEncoder.maximumPacketBytes)
        for track in pool.tracks {
            let encoder = try OpusPacketEncoder(sampleRate: AnalysisFormat.sampleRate, bitrate: bitrate)
            var ranges: [Range<Int>] = []
            var at = 0
            while at + frame <= track.length {
                let pcm = UnsafeBufferPointer(start: pool.samples.baseAddress! + track.start + at, count: frame)
                let count = try packet.withUnsafeMutableBytes { try encoder.encode(pcm, into: $0) }
                ranges.append(bytes.count..<bytes.count + count)
                bytes.append(contentsOf: packet[0..<count])
                at += frame
            }
            tracks.append(ranges)
        }
    }
}

/// Streams that each decode their own packet sequence (a track from a seeded offset, looping) and,
/// when `analyse`, feed the decoded audio to an engine.
struct OpusLoad {
    let packets: PacketTracks
    let decoders: [OpusPacketDecoder]
    let load: (engine: Engine, ids: [StreamID])?
    private var track: [Int] = []
    private var position: [Int] = []
    /// `streams × 320` decoded samples of the current packet of each stream.
    private let pcm: FloatBuffer
    private(set) var checksum = Checksum()

    init(packets: PacketTracks, streams: Int, analyse: Bool, configuration: EngineConfiguration) throws {
        self.packets = packets
        decoders = try (0..<streams).map { _ in try OpusPacketDecoder(sampleRate: AnalysisFormat.sampleRate) }
        if analyse {
            let engine = try EngineFactory.make(configuration: configuration)
            load = (engine, EngineFactory.populate(engine, streams: streams, roomSize: OpusScenario.roomSize))
        } else {
            load = nil
        }
        var random = SplitMix64(seed: 3)
        for stream in 0..<streams {
            let which = stream % packets.tracks.count
            track.append(which)
            position.append(Int(random.next() % UInt64(packets.tracks[which].count)))
        }
        pcm = FloatBuffer(count: streams * OpusScenario.packetSamples)
    }

    /// Decodes one packet of every stream (and runs the two ticks it feeds).
    mutating func step() throws {
        let frame = OpusScenario.packetSamples
        let hop = AnalysisFormat.hopSize
        var sum = checksum
        let samples = pcm.samples
        for stream in decoders.indices {
            let ranges = packets.tracks[track[stream]]
            let range = ranges[position[stream]]
            position[stream] = position[stream] + 1 == ranges.count ? 0 : position[stream] + 1
            let output = UnsafeMutableBufferPointer(rebasing: samples[stream * frame..<(stream + 1) * frame])
            let decoded = try packets.bytes.withUnsafeBytes { bytes in
                try decoders[stream].decode(packet: UnsafeRawBufferPointer(rebasing: bytes[range]), into: output)
            }
            precondition(decoded == frame, "a 20 ms packet decodes to \(frame) samples")
            sum.add(output[stream % frame])
        }
        if let (engine, ids) = load {
            for half in 0..<2 {
                for stream in ids.indices {
                    let start = stream * frame + half * hop
                    engine.submit(UnsafeBufferPointer(rebasing: samples[start..<start + hop]), to: ids[stream])
                }
                engine.tick()
                engine.consumeEvents { sum.add($0) }
            }
        }
        checksum = sum
    }

    mutating func warmUp(packets count: Int) {
        for _ in 0..<count { try! step() }
    }

    /// Decodes `count` packets per stream; returns process CPU seconds.
    mutating func measure(packets count: Int) throws -> Double {
        let watch = Stopwatch()
        for _ in 0..<count { try step() }
        return watch.elapsed().cpu
    }

    mutating func finish() -> Checksum {
        if let (engine, ids) = load {
            for id in ids { checksum.add(engine.features(of: id)) }
        }
        return checksum
    }
}

/// A zeroed Float buffer freed with its owner.
final class FloatBuffer {
    let samples: UnsafeMutableBufferPointer<Float>
    init(count: Int) {
        samples = .allocate(capacity: count)
        samples.initialize(repeating: 0)
    }
    deinit { samples.deallocate() }
}

import Foundation
import SpeakerCore

/// Scenario 4: the release `activespeaker detect` over 64 one-minute WAV files (one room of 64),
/// timed as a child process: its own CPU time (wait4) and wall time, file decoding included.
enum FilesScenario {
    static let files = 64
    static let seconds = 60

    static func run(pool: AudioPool, options: Options) throws -> ScenarioResult {
        var result = ScenarioResult(id: 4, title: "Files end to end: activespeaker detect, \(files) one-minute WAV files")
        let cli = options.activespeaker ?? ((executablePath() as NSString).deletingLastPathComponent + "/activespeaker")
        guard FileManager.default.isExecutableFile(atPath: cli) else {
            result.status = "skipped"
            result.notes = [
                "SKIPPED: no activespeaker binary at \(cli).",
                "Build it beside this benchmark (swift build -c release --product activespeaker) or pass --activespeaker PATH.",
            ]
            return result
        }
        let paths = try generateFiles(pool: pool, directory: options.cacheDirectory + "/wav-\(files)x\(seconds)s")
        let arguments = ["detect", "--quiet", "--summary"] + paths
        let output = options.cacheDirectory + "/detect-summary.json"
        // Warm-up: page cache, dynamic loading.
        let first = try runTimed(cli, arguments, outputPath: output)
        guard first.status == 0 else { throw BenchmarkError("\(cli) detect exited with status \(first.status)") }
        let audioSeconds = Double(files * seconds)
        var cpuFactor: [Double] = []
        var wallFactor: [Double] = []
        var peak: [Double] = []
        for _ in 0..<options.runs {
            let child = try runTimed(cli, arguments, outputPath: output)
            guard child.status == 0 else { throw BenchmarkError("\(cli) detect exited with status \(child.status)") }
            cpuFactor.append(audioSeconds / child.cpuSeconds)
            wallFactor.append(audioSeconds / child.wallSeconds)
            peak.append(Double(child.peakResidentBytes))
        }
        var checksum = Checksum()
        for byte in (readTextFile(output) ?? "").utf8 { checksum.add(Int(byte)) }
        let cpu = Summary(cpuFactor)
        let wall = Summary(wallFactor)
        let memory = Summary(peak)
        result.table = [
            ["files", "audio", "× real time/core (CPU)", "× real time (wall)", "CPU s/run", "peak RSS"],
            [
                "\(files)", "\(files) × \(seconds) s", cpu.text { Format.number($0) }, wall.text { Format.number($0) },
                Format.number(audioSeconds / cpu.median, decimals: 2), Format.bytes(memory.median),
            ],
        ]
        var row = ResultRow(label: "\(files) files")
        row.parameters = ["files": files, "secondsPerFile": seconds]
        row.metrics = ["realTimePerCoreCPU": cpu, "realTimeWall": wall, "peakResidentBytes": memory]
        result.rows = [row]
        result.checksum = checksum.hex
        result.notes = [
            "Command: activespeaker detect --quiet --summary <\(files) files> (one room of \(files); reading, decoding and analysis; the CLI's own CPU time from wait4). Binary: \(cli).",
            "Files: 16-bit 16 kHz mono WAV made from the fixture tracks at seeded offsets, cached in \((paths[0] as NSString).deletingLastPathComponent).",
        ]
        return result
    }

    /// Writes the WAV files once (a `complete` marker records that all were written) and returns their paths.
    static func generateFiles(pool: AudioPool, directory: String) throws -> [String] {
        let paths = (0..<files).map { String(format: "%@/stream%02d.wav", directory, $0) }
        let marker = directory + "/complete"
        if FileManager.default.fileExists(atPath: marker) { return paths }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var feed = HopFeed(pool: pool, streams: files, seed: 4)
        let count = seconds * AnalysisFormat.sampleRate
        let samples = FloatBuffer(count: count)
        for (stream, path) in paths.enumerated() {
            feed.copyNext(stream, into: samples.samples)
            try writeWAV(samples.samples, to: path)
        }
        _ = FileManager.default.createFile(atPath: marker, contents: Data())
        return paths
    }

    /// A 16-bit PCM mono WAV file at the analysis rate.
    static func writeWAV(_ samples: UnsafeMutableBufferPointer<Float>, to path: String) throws {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let rate = UInt32(AnalysisFormat.sampleRate)
        let payload = UInt32(samples.count * 2)
        data.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(36) + payload)
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16))
        append(UInt16(1))  // PCM
        append(UInt16(1))  // mono
        append(rate)
        append(rate * 2)  // bytes per second
        append(UInt16(2))  // block align
        append(UInt16(16))
        data.append(contentsOf: Array("data".utf8))
        append(payload)
        data.reserveCapacity(data.count + samples.count * 2)
        for sample in samples {
            append(Int16(max(-32768, min(32767, (sample * 32768).rounded()))))
        }
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }
}

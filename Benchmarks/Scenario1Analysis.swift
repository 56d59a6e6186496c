import SpeakerCore

/// Scenario 1: full analysis (features + VAD + selection) of 16 kHz PCM already in memory, rooms of 5,
/// one worker thread.
enum AnalysisScenario {
    static let roomSize = 5

    static func run(pool: AudioPool, options: Options) throws -> ScenarioResult {
        var result = ScenarioResult(id: 1, title: "Full analysis, 16 kHz PCM in memory, rooms of \(roomSize), 1 worker")
        result.table = [[
            "streams", "ticks/run", "× real time/core (CPU)", "× real time (wall)", "ns/stream-frame",
            "tick p50 µs", "tick p99 µs", "tick max µs",
        ]]
        var checksum = Checksum()
        for streams in options.analysisStreams {
            let ticks = options.budget.ticks(streams: streams)
            var load = try EngineLoad(pool: pool, streams: streams, roomSize: roomSize, seed: UInt64(streams), configuration: options.configuration)
            load.warmUp(ticks: options.budget.warmUpTicks(streams: streams))
            var tickTimes = TickTimes(capacity: ticks * options.runs)
            var cpuFactor: [Double] = []
            var wallFactor: [Double] = []
            var nanosecondsPerFrame: [Double] = []
            for _ in 0..<options.runs {
                let (wall, cpu) = load.measure(ticks: ticks, tickTimes: &tickTimes)
                let audioSeconds = Double(streams * ticks) * AnalysisFormat.hopDuration
                cpuFactor.append(audioSeconds / cpu)
                wallFactor.append(audioSeconds / wall)
                nanosecondsPerFrame.append(cpu * 1e9 / Double(streams * ticks))
            }
            checksum.add(load.finish().value)
            var row = ResultRow(label: "\(streams) streams")
            row.parameters = ["streams": streams, "roomSize": roomSize, "ticksPerRun": ticks, "runs": options.runs]
            let cpu = Summary(cpuFactor)
            let wall = Summary(wallFactor)
            let nanoseconds = Summary(nanosecondsPerFrame)
            row.metrics = [
                "realTimePerCoreCPU": cpu, "realTimeWall": wall, "nanosecondsPerStreamFrame": nanoseconds,
            ]
            let p50 = tickTimes.percentileMicroseconds(0.5)
            let p99 = tickTimes.percentileMicroseconds(0.99)
            let maximum = tickTimes.percentileMicroseconds(1)
            row.values = ["tickP50Microseconds": p50, "tickP99Microseconds": p99, "tickMaxMicroseconds": maximum]
            result.rows.append(row)
            result.table.append([
                Format.number(Double(streams)), Format.number(Double(ticks)),
                cpu.text { Format.number($0) }, wall.text { Format.number($0) },
                nanoseconds.text(Format.significant),
                Format.significant(p50), Format.significant(p99), Format.significant(maximum),
            ])
        }
        result.checksum = checksum.hex
        result.notes = [
            "× real time/core = audio-seconds of all streams / process CPU-seconds; median [min–max] of the runs.",
            "Tick = submit every stream's 10 ms hop + tick() + consume events; a live server needs p99 well under 10,000 µs.",
            "Audio: the \(pool.tracks.count) fixture meeting tracks (\(Format.number(pool.seconds)) s), stream s plays track s mod \(pool.tracks.count) from a seeded random offset, looping.",
        ]
        return result
    }
}

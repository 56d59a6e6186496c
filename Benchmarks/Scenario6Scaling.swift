import SpeakerCore

/// Scenario 6: the same load on 1 worker thread and on 2 (`Engine(configuration:workers:)`): wall-clock
/// throughput and its ratio.
enum ScalingScenario {
    static let streams = 1_024
    static let roomSize = 5

    static func run(pool: AudioPool, options: Options) throws -> ScenarioResult {
        var result = ScenarioResult(id: 6, title: "Scaling: \(Format.number(Double(streams))) streams, rooms of \(roomSize), 1 vs 2 workers")
        let ticks = options.budget.ticks(streams: streams)
        let workerCounts = [1, 2]
        var loads = try workerCounts.map {
            try EngineLoad(pool: pool, streams: streams, roomSize: roomSize, workers: $0, seed: 6, configuration: options.configuration)
        }
        for index in loads.indices { loads[index].warmUp(ticks: options.budget.warmUpTicks(streams: streams)) }
        var wall = [[Double]](repeating: [], count: workerCounts.count)
        var cpu = [[Double]](repeating: [], count: workerCounts.count)
        var tickTimes = workerCounts.map { _ in TickTimes(capacity: ticks * options.runs) }
        let audioSeconds = Double(streams * ticks) * AnalysisFormat.hopDuration
        // Interleave the configurations run by run, so a noisy neighbour slows both alike.
        for _ in 0..<options.runs {
            for index in loads.indices {
                let (w, c) = loads[index].measure(ticks: ticks, tickTimes: &tickTimes[index])
                wall[index].append(audioSeconds / w)
                cpu[index].append(audioSeconds / c)
            }
        }
        var checksum = Checksum()
        for index in loads.indices { checksum.add(loads[index].finish().value) }
        // Ratio per run pair, then the median: pairs ran back to back under similar load.
        let ratios = Summary(zip(wall[1], wall[0]).map { $0 / $1 })
        // Audio per CPU-second of 2 workers over 1: below 1 when the second worker adds work (waiting,
        // false sharing, imbalance). What 2 free cores would give is about 2 × this.
        let efficiency = Summary(zip(cpu[1], cpu[0]).map { $0 / $1 })
        result.table = [["workers", "× real time (wall)", "× real time per CPU-second", "tick p50 µs", "tick p99 µs"]]
        for (index, workers) in workerCounts.enumerated() {
            let wallSummary = Summary(wall[index])
            let cpuSummary = Summary(cpu[index])
            var row = ResultRow(label: "\(workers) worker\(workers == 1 ? "" : "s")")
            row.parameters = ["workers": workers, "streams": streams, "roomSize": roomSize, "ticksPerRun": ticks]
            row.metrics = ["realTimeWall": wallSummary, "realTimePerCPUSecond": cpuSummary]
            let p50 = tickTimes[index].percentileMicroseconds(0.5)
            let p99 = tickTimes[index].percentileMicroseconds(0.99)
            row.values = ["tickP50Microseconds": p50, "tickP99Microseconds": p99]
            if workers == 2 {
                row.metrics["speedupOverOneWorker"] = ratios
                row.metrics["cpuEfficiencyOverOneWorker"] = efficiency
            }
            result.rows.append(row)
            result.table.append([
                "\(workers)", wallSummary.text { Format.number($0) }, cpuSummary.text { Format.number($0) },
                Format.significant(p50), Format.significant(p99),
            ])
        }
        result.table.append([
            "2 ÷ 1", ratios.text { Format.number($0, decimals: 2) } + "×",
            efficiency.text { Format.number($0, decimals: 2) } + "×", "", "",
        ])
        result.checksum = checksum.hex
        result.notes = [
            "Target: 2 workers ≥ 1.8× one (wall). Wall-clock figures need 2 idle cores: any other load (see the load average) lowers the 2-worker figure.",
            "The CPU ratio (audio per CPU-second, 2 workers ÷ 1) does not depend on idle cores: near 1.00 the second worker adds no work, and 2 idle cores would give about 2 × it.",
        ]
        return result
    }
}

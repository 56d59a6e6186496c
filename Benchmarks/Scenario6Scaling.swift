import SpeakerCore

/// Scenario 6: one worker thread against N (`Engine(configuration:workers:)`, `--workers LIST`), each
/// worker with the same number of streams (`--streams-per-worker`, 1,024), so N workers carry N times
/// the load of one: wall-clock throughput and audio per CPU-second, and their ratios to one worker.
enum ScalingScenario {
    static let roomSize = 5

    static func run(pool: AudioPool, options: Options) throws -> ScenarioResult {
        let perWorker = options.streamsPerWorker
        let workerCounts = options.workerCounts
        let list = workerCounts.map(String.init).joined(separator: ", ")
        var result = ScenarioResult(
            id: 6, title: "Scaling: \(Format.number(Double(perWorker))) streams per worker, rooms of \(roomSize), workers \(list)")
        // One worker's ticks: every configuration analyses the same audio per worker.
        let ticks = options.budget.ticks(streams: perWorker)
        var loads = try workerCounts.map {
            try EngineLoad(
                pool: pool, streams: perWorker * $0, roomSize: roomSize, workers: $0, seed: 6, configuration: options.configuration)
        }
        for index in loads.indices { loads[index].warmUp(ticks: options.budget.warmUpTicks(streams: perWorker)) }
        var wall = [[Double]](repeating: [], count: workerCounts.count)
        var cpu = [[Double]](repeating: [], count: workerCounts.count)
        var tickTimes = workerCounts.map { _ in TickTimes(capacity: ticks * options.runs) }
        // Interleave the configurations run by run, so a noisy neighbour slows all alike.
        for _ in 0..<options.runs {
            for index in loads.indices {
                let audioSeconds = Double(perWorker * workerCounts[index] * ticks) * AnalysisFormat.hopDuration
                let (w, c) = loads[index].measure(ticks: ticks, tickTimes: &tickTimes[index])
                wall[index].append(audioSeconds / w)
                cpu[index].append(audioSeconds / c)
            }
        }
        var checksum = Checksum()
        for index in loads.indices { checksum.add(loads[index].finish().value) }
        result.table = [["workers", "streams", "× real time (wall)", "× real time per CPU-second", "tick p50 µs", "tick p99 µs"]]
        var ratioRows: [[String]] = []
        for (index, workers) in workerCounts.enumerated() {
            let wallSummary = Summary(wall[index])
            let cpuSummary = Summary(cpu[index])
            var row = ResultRow(label: "\(workers) worker\(workers == 1 ? "" : "s")")
            row.parameters = ["workers": workers, "streams": perWorker * workers, "roomSize": roomSize, "ticksPerRun": ticks]
            row.metrics = ["realTimeWall": wallSummary, "realTimePerCPUSecond": cpuSummary]
            let p50 = tickTimes[index].percentileMicroseconds(0.5)
            let p99 = tickTimes[index].percentileMicroseconds(0.99)
            row.values = ["tickP50Microseconds": p50, "tickP99Microseconds": p99]
            if workers > 1 {
                // Per run pair, then the median: pairs ran back to back under similar load. Wall: N
                // workers over N times one (1.00 is perfect scaling); CPU: audio per CPU-second over one's
                // (below 1 when the workers add work: waiting, false sharing, imbalance).
                let scaling = Summary(zip(wall[index], wall[0]).map { $0 / ($1 * Double(workers)) })
                let efficiency = Summary(zip(cpu[index], cpu[0]).map { $0 / $1 })
                row.metrics["wallOverNTimesOneWorker"] = scaling
                row.metrics["cpuEfficiencyOverOneWorker"] = efficiency
                ratioRows.append([
                    "\(workers) ÷ (\(workers) × 1)", "", scaling.text { Format.number($0, decimals: 2) } + "×",
                    efficiency.text { Format.number($0, decimals: 2) } + "×", "", "",
                ])
            }
            result.rows.append(row)
            result.table.append([
                "\(workers)", Format.number(Double(perWorker * workers)), wallSummary.text { Format.number($0) },
                cpuSummary.text { Format.number($0) }, Format.significant(p50), Format.significant(p99),
            ])
        }
        result.table += ratioRows
        result.checksum = checksum.hex
        result.notes = [
            "Target (issue 17): N workers ≥ 0.9 × N × one in wall time and ≥ 0.95 in audio per CPU-second, on a machine with N idle cores. Wall-clock figures need N idle cores: any other load (see the load average) lowers them.",
            "The CPU ratio does not depend on idle cores: near 1.00 the extra workers add no work.",
        ]
        return result
    }
}

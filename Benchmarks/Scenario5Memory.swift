import Foundation
import SpeakerCore

/// Scenario 5: bytes of state per stream, as resident growth from 1,000 to 10,000 streams, divided.
///
/// Measured in a fresh child process (this executable with `--memory-probe`), so memory freed by other
/// scenarios cannot be reused and hide growth: the child loads the audio, builds 1,000 streams in rooms
/// of 5, ticks until every stream has allocated its state, reads VmRSS, adds 9,000 streams, ticks, reads again.
enum MemoryScenario {
    static let from = 1_000
    static let to = 10_000
    static let roomSize = 5
    static let ticks = 30

    struct ProbeResult: Codable {
        var residentFrom: Int
        var residentTo: Int
        var checksum: String
    }

    static func run(options: Options, fixtures: String) throws -> ScenarioResult {
        var result = ScenarioResult(id: 5, title: "Memory: resident growth from \(Format.number(Double(from))) to \(Format.number(Double(to))) streams")
        let runs = min(options.runs, 3)
        var perStream: [Double] = []
        var residentFrom: [Double] = []
        var residentTo: [Double] = []
        var checksum = Checksum()
        for _ in 0..<runs {
            let (status, output) = try runCapturing(
                executablePath(),
                ["--memory-probe", "\(from),\(to)", "--fixtures", fixtures] + (options.allowDebug ? ["--allow-debug"] : [])
                    + options.settings.flatMap { ["--config", $0] })
            guard status == 0, let line = output.split(separator: "\n").last,
                let probe = try? JSONDecoder().decode(ProbeResult.self, from: Data(line.utf8))
            else { throw BenchmarkError("memory probe failed (status \(status)): \(output)") }
            perStream.append(Double(probe.residentTo - probe.residentFrom) / Double(to - from))
            residentFrom.append(Double(probe.residentFrom))
            residentTo.append(Double(probe.residentTo))
            for byte in probe.checksum.utf8 { checksum.add(Int(byte)) }
        }
        let bytes = Summary(perStream)
        result.table = [
            ["streams", "resident", "bytes/stream", "target"],
            ["\(Format.number(Double(from)))", Format.bytes(Summary(residentFrom).median), "", ""],
            [
                "\(Format.number(Double(to)))", Format.bytes(Summary(residentTo).median),
                bytes.text { Format.number($0) } + " (" + Format.bytes(bytes.median) + ")", "≤ 16,384",
            ],
        ]
        var row = ResultRow(label: "\(from)→\(to) streams")
        row.parameters = ["from": from, "to": to, "roomSize": roomSize, "ticksAfterEachStep": ticks]
        row.metrics = [
            "bytesPerStream": bytes, "residentBytesFrom": Summary(residentFrom), "residentBytesTo": Summary(residentTo),
        ]
        result.rows = [row]
        result.checksum = checksum.hex
        result.notes = [
            "Growth of VmRSS in a fresh process after \(ticks) ticks at each size, divided by the \(Format.number(Double(to - from))) streams added; \(runs) run\(runs == 1 ? "" : "s").",
            "Includes everything a stream costs the process: engine state, room scratch, event capacity, malloc overhead.",
        ]
        return result
    }

    /// The child's side: prints one JSON line.
    static func probe(from: Int, to: Int, options: Options) throws {
        guard let fixtures = options.fixtures ?? AudioPool.locateFixtures() else { throw BenchmarkError("no fixtures") }
        let pool = try AudioPool(fixtures: fixtures)
        var feed = HopFeed(pool: pool, streams: to, seed: 5)
        let engine = try EngineFactory.make(configuration: options.configuration)
        var ids = EngineFactory.populate(engine, streams: from, roomSize: roomSize)
        var checksum = Checksum()
        func tick(_ count: Int) {
            for _ in 0..<count {
                for (index, id) in ids.enumerated() { engine.submit(feed.next(index), to: id) }
                engine.tick()
                engine.consumeEvents { checksum.add($0) }
            }
        }
        tick(ticks)
        guard let residentFrom = Probe.residentBytes() else { throw BenchmarkError("no /proc/self/status") }
        ids += EngineFactory.populate(engine, streams: to - from, roomSize: roomSize, firstIndex: from)
        tick(ticks)
        guard let residentTo = Probe.residentBytes() else { throw BenchmarkError("no /proc/self/status") }
        let result = ProbeResult(residentFrom: residentFrom, residentTo: residentTo, checksum: checksum.hex)
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
    }
}

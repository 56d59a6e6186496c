import SpeakerCore

/// An engine with streams in rooms, fed from the audio pool one 10 ms tick at a time, as a server
/// would: every stream's hop submitted, one `tick()`, every event consumed.
struct EngineLoad: TickedLoad {
    let engine: Engine
    private(set) var ids: [StreamID]
    private var feed: HopFeed
    private(set) var checksum = Checksum()
    private var ticksDone = 0

    init(
        pool: AudioPool, streams: Int, roomSize: Int, workers: Int = 1, seed: UInt64 = 1,
        configuration: EngineConfiguration
    ) throws {
        engine = try EngineFactory.make(workers: workers, configuration: configuration)
        ids = EngineFactory.populate(engine, streams: streams, roomSize: roomSize)
        feed = HopFeed(pool: pool, streams: streams, seed: seed)
    }

    /// Stream-frames per tick.
    var streams: Int { ids.count }

    /// One tick: submit every hop, tick, consume the events; folds one stream's features into the
    /// checksum (a different stream each tick). Allocates nothing once the engine is warm.
    @inline(__always)
    mutating func step() {
        var index = 0
        let count = ids.count
        while index < count {
            engine.submit(feed.next(index), to: ids[index])
            index += 1
        }
        engine.tick()
        var sum = checksum
        engine.consumeEvents { sum.add($0) }
        sum.add(engine.features(of: ids[ticksDone % count]))
        checksum = sum
        ticksDone += 1
    }

    /// Runs `ticks` ticks, recording each tick's wall time (`TickedLoad.measureTicks`).
    /// (Never inlined: profilers can start collecting at it, `--toggle-collect=*EngineLoadV7measure*`.)
    /// - Returns: wall and process CPU seconds of the whole run.
    @inline(never)
    mutating func measure(ticks: Int, tickTimes: inout TickTimes) -> (wall: Double, cpu: Double) {
        measureTicks(ticks, tickTimes: &tickTimes)
    }

    /// Folds the final state of every stream into the checksum.
    mutating func finish() -> Checksum {
        for id in ids {
            checksum.add(engine.features(of: id))
            checksum.add(engine.isSpeaking(id) ? 1 : 0)
        }
        return checksum
    }
}

/// How many ticks a scenario runs for a given number of streams: about `budget` stream-frames per run,
/// within `minimum…maximum` ticks.
struct TickBudget {
    var streamFrames: Int
    var minimum: Int
    var maximum: Int

    func ticks(streams: Int) -> Int { min(maximum, max(minimum, streamFrames / max(streams, 1))) }
    /// Warm-up: a quarter of a run, at least 20 ticks (first-tick allocations, noise estimates settle).
    func warmUpTicks(streams: Int) -> Int { max(20, ticks(streams: streams) / 4) }
}

/// A load advanced one engine tick at a time by `step()`: warm-up and the measured loop are shared.
protocol TickedLoad {
    mutating func step()
}

extension TickedLoad {
    /// Runs `ticks` ticks unmeasured (warm-up: first-tick allocations, caches, noise estimates).
    mutating func warmUp(ticks: Int) {
        for _ in 0..<ticks { step() }
    }

    /// Runs `ticks` ticks, recording each tick's wall time.
    /// - Returns: wall and process CPU seconds of the whole run.
    mutating func measureTicks(_ ticks: Int, tickTimes: inout TickTimes) -> (wall: Double, cpu: Double) {
        let watch = Stopwatch()
        for _ in 0..<ticks {
            let start = Probe.wallNanoseconds()
            step()
            tickTimes.record(Probe.wallNanoseconds() - start)
        }
        return watch.elapsed()
    }
}

import SpeakerCore

/// Scenario 2: level-only selection (RFC 6464 levels in, no audio) in rooms of 2, 10, 100 and 1,000
/// participants, one worker: level updates per second per core.
///
/// Level streams (`Engine.addLevelStream(name:room:)`, `Engine.submitLevel(_:voiceActivity:to:)`):
/// RFC 6464 levels in, no audio, our policy deciding each room.
enum LevelScenario {
    static let roomSizes = [2, 10, 100, 1_000]
    /// Participants in all rooms together (at least one room).
    static let participants = 1_000

    static func run(pool: AudioPool, options: Options) throws -> ScenarioResult {
        var result = ScenarioResult(id: 2, title: "Level-only selection, RFC 6464 levels, 1 worker")
        result.table = [["participants/room", "rooms", "ticks/run", "updates/s/core (CPU)", "ns/update", "tick p99 µs"]]
        var checksum = Checksum()
        let levels = LevelTracks(pool: pool)
        for roomSize in options.levelRoomSizes {
            let streams = max(participants, roomSize)
            let ticks = options.budget.ticks(streams: streams) * 20  // level updates are cheap: longer runs
            let warmUp = options.budget.warmUpTicks(streams: streams)
            var tickTimes = TickTimes(capacity: ticks * options.runs)
            var rates: [Double] = []
            var nanoseconds: [Double] = []
            var load = try LevelLoad(levels: levels, streams: streams, roomSize: roomSize, configuration: options.configuration)
            load.warmUp(ticks: warmUp)
            for _ in 0..<options.runs {
                let (_, cpu) = load.measure(ticks: ticks, tickTimes: &tickTimes)
                let updates = Double(streams * ticks)
                rates.append(updates / cpu)
                nanoseconds.append(cpu * 1e9 / updates)
            }
            checksum.add(load.finish().value)
            let rate = Summary(rates)
            let perUpdate = Summary(nanoseconds)
            let p99 = tickTimes.percentileMicroseconds(0.99)
            var row = ResultRow(label: "rooms of \(roomSize)")
            row.parameters = ["roomSize": roomSize, "rooms": streams / roomSize, "streams": streams, "ticksPerRun": ticks]
            row.metrics = ["updatesPerSecondPerCore": rate, "nanosecondsPerUpdate": perUpdate]
            row.values = ["tickP99Microseconds": p99]
            result.rows.append(row)
            result.table.append([
                Format.number(Double(roomSize)), Format.number(Double(streams / roomSize)), Format.number(Double(ticks)),
                rate.text { Format.number($0) }, perUpdate.text(Format.significant), Format.significant(p99),
            ])
        }
        result.checksum = checksum.hex
        result.notes.append("One update = one participant's level for one 10 ms tick; \(participants) participants in all.")
        return result
    }
}

/// The RFC 6464 level of every 10 ms hop of every pool track.
struct LevelTracks {
    var tracks: [[UInt8]] = []

    init(pool: AudioPool) {
        let hop = AnalysisFormat.hopSize
        for track in pool.tracks {
            var levels: [UInt8] = []
            var at = 0
            while at + hop <= track.length {
                var sum: Float = 0
                for index in 0..<hop {
                    let sample = pool.samples[track.start + at + index]
                    sum += sample * sample
                }
                levels.append(Levels.rfc6464Level(meanSquare: sum / Float(hop)))
                at += hop
            }
            tracks.append(levels)
        }
    }
}

/// Level-only streams fed one level per tick.
struct LevelLoad: TickedLoad {
    let engine: Engine
    let ids: [StreamID]
    let levels: LevelTracks
    private var track: [Int]
    private var position: [Int]
    private var checksum = Checksum()

    init(levels: LevelTracks, streams: Int, roomSize: Int, configuration: EngineConfiguration) throws {
        engine = try EngineFactory.make(configuration: configuration)
        var ids: [StreamID] = []
        var room = engine.addRoom(name: "r0")
        var random = SplitMix64(seed: UInt64(roomSize))
        track = []
        position = []
        for index in 0..<streams {
            if index > 0 && index % roomSize == 0 { room = engine.addRoom(name: "r\(index / roomSize)") }
            ids.append(engine.addLevelStream(name: "s\(index)", room: room))
            let which = index % levels.tracks.count
            track.append(which)
            position.append(Int(random.next() % UInt64(levels.tracks[which].count)))
        }
        self.ids = ids
        self.levels = levels
    }

    mutating func step() {
        var index = 0
        while index < ids.count {
            let levelsOfTrack = levels.tracks[track[index]]
            engine.submitLevel(levelsOfTrack[position[index]], to: ids[index])
            position[index] = position[index] + 1 == levelsOfTrack.count ? 0 : position[index] + 1
            index += 1
        }
        engine.tick()
        var sum = checksum
        engine.consumeEvents { sum.add($0) }
        checksum = sum
    }

    mutating func measure(ticks: Int, tickTimes: inout TickTimes) -> (wall: Double, cpu: Double) {
        measureTicks(ticks, tickTimes: &tickTimes)
    }

    mutating func finish() -> Checksum { checksum }
}

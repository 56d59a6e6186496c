import SpeakerCore

/// Runs an engine over whole signals, one room, all streams starting at t = 0, and collects events.
struct EngineHarness {
    struct Result {
        var events: [EngineEvent]
        var names: [StreamID: String]

        /// (time, since, active) of each speech event of `stream`.
        func speech(_ stream: String) -> [(time: Double, since: Double, active: Bool)] {
            events.compactMap {
                if case .speech(let id, let active, let time, let since) = $0, names[id] == stream {
                    return (time, since, active)
                }
                return nil
            }
        }

        /// (time, holder name or nil) of each dominant-speaker event.
        var dominant: [(time: Double, holder: String?)] {
            events.compactMap {
                if case .dominant(_, let id, let time) = $0 { return (time, id.flatMap { names[$0] }) }
                return nil
            }
        }

        /// The holder at `time` (nobody before the first event).
        func holder(at time: Double) -> String? {
            dominant.last(where: { $0.time <= time })?.holder ?? nil
        }
    }

    static func run(_ streams: [(String, [Float])], configuration: EngineConfiguration = EngineConfiguration()) throws -> Result {
        let engine = try Engine(configuration: configuration)
        let room = engine.addRoom(name: "test")
        var names: [StreamID: String] = [:]
        let ids = streams.map { name, _ -> StreamID in
            let id = engine.addStream(name: name, room: room)
            names[id] = name
            return id
        }
        let hop = AnalysisFormat.hopSize
        let frames = streams.map { $0.1.count / hop }.max() ?? 0
        var events: [EngineEvent] = []
        for frame in 0..<frames {
            for (index, (_, samples)) in streams.enumerated() where (frame + 1) * hop <= samples.count {
                samples.withUnsafeBufferPointer {
                    engine.submit(UnsafeBufferPointer(rebasing: $0[frame * hop..<(frame + 1) * hop]), to: ids[index])
                }
            }
            engine.tick()
            engine.consumeEvents { events.append($0) }
        }
        for id in ids { engine.removeStream(id) }
        engine.consumeEvents { events.append($0) }
        return Result(events: events, names: names)
    }
}

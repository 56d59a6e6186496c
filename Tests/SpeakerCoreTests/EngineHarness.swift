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

    /// Each stream is a `SignalHops` of a `RoomRunner`: its whole hops are submitted, a final partial hop is
    /// not (silence); the streams are removed after the longest one's last whole hop.
    static func run(_ streams: [(String, [Float])], configuration: EngineConfiguration = EngineConfiguration()) throws -> Result {
        let runner = try RoomRunner(configuration: configuration, roomName: "test")
        var names: [StreamID: String] = [:]
        for (name, samples) in streams {
            names[runner.handle(of: runner.add(SignalHops(samples), name: name))!] = name
        }
        let frames = streams.map { $0.1.count / AnalysisFormat.hopSize }.max() ?? 0
        var events: [EngineEvent] = []
        for _ in 0..<frames {
            runner.tick()
            runner.engine.consumeEvents { events.append($0) }
        }
        runner.finish()
        runner.engine.consumeEvents { events.append($0) }
        return Result(events: events, names: names)
    }
}

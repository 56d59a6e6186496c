import SpeakerCore
import SpeakerEval

/// Makes the engines the scenarios measure (the engine's default configuration unless `--config`
/// says otherwise).
enum EngineFactory {
    /// An engine whose rooms are shared among `workers` threads.
    static func make(workers: Int = 1, configuration: EngineConfiguration) throws -> Engine {
        try Engine(configuration: configuration, workers: workers, policies: .withBaselines)
    }

    /// Adds `streams` streams in rooms of `roomSize` (the last room may be smaller), named `s<n>` in `r<n>`.
    static func populate(_ engine: Engine, streams: Int, roomSize: Int, firstIndex: Int = 0) -> [StreamID] {
        var ids: [StreamID] = []
        ids.reserveCapacity(streams)
        var room: RoomID?
        for index in firstIndex..<firstIndex + streams {
            if room == nil || index % roomSize == 0 { room = engine.addRoom(name: "r\(index / roomSize)") }
            ids.append(engine.addStream(name: "s\(index)", room: room!))
        }
        return ids
    }
}

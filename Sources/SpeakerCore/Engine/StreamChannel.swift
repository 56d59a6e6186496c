/// Everything the engine keeps for one stream. Owned by the engine; touched by one thread per tick.
final class StreamChannel {
    let name: String
    let room: Int
    var spectral: SpectralState
    var vad = VoiceActivityDetector()
    var envelope = EnergyEnvelope()
    var tone = SustainedToneDetector()
    var activity = SpeakerObservation()
    var statistics = TalkStatistics()

    /// The hop submitted for the next tick.
    var pending: [Float]
    var hasPending = false
    /// True for a stream that carries RFC 6464 levels instead of audio.
    var carriesLevels = false
    /// A level stream's level and V flag for the next tick.
    var pendingLevel: UInt8 = 127
    var pendingVoiceActivity: Bool? = nil
    /// A level stream's noise floor.
    var levelFloor = LevelFloorTracker()

    /// Features of the last analysed frame.
    var features = FrameFeatures()
    /// Frame evidence before leakage suppression.
    var voiced = false
    var continues = false
    /// True when this frame's evidence was judged a neighbour's voice.
    var leak = false
    /// Own speech level in dBFS, learnt from frames counted as this stream's speech.
    var speechLevel: Float
    /// Smoothed mean square of the hops, for reported levels.
    var smoothedMeanSquare: Float = 0

    init(name: String, room: Int, configuration: EngineConfiguration) {
        self.name = name
        self.room = room
        spectral = SpectralState(configuration: configuration.vad)
        pending = [Float](repeating: 0, count: AnalysisFormat.hopSize)
        speechLevel = configuration.leakage.initialSpeechLevel
    }

    /// Smoothed level in dBov.
    var level: Float { Levels.dBFS(meanSquare: smoothedMeanSquare) }
}

/// The streams of one room and its floor.
final class RoomState {
    let name: String
    /// The room's `RoomID` raw value.
    let index: Int
    var members: [Int] = []
    let floor: any FloorPolicy
    /// The worker that owns this room and its streams.
    let shard: Shard
    /// Scratch for the streams with speech evidence this frame (capacity kept at the member count).
    var candidates: [Int] = []
    /// Scratch for the streams that may be the source of a leak this frame; the first `sourceCount` count.
    var sources: [Int] = []
    var sourceCount = 0

    init(name: String, index: Int, policy: any FloorPolicy, shard: Shard) {
        self.name = name
        self.index = index
        floor = policy
        self.shard = shard
    }
}

/// What one worker owns: its rooms, its FFT scratch, and the events its rooms made since they were
/// last consumed (in time order).
final class Shard {
    var rooms: [Int] = []
    let analyzer: SpectralAnalyzer
    var events: [EngineEvent] = []
    /// Read position while `Engine.consumeEvents` merges the shards.
    var cursor = 0

    init(overSubtraction: Float) {
        analyzer = SpectralAnalyzer(overSubtraction: overSubtraction)
        events.reserveCapacity(64)
    }
}

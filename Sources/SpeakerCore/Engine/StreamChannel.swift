/// Everything the engine keeps for one stream. Owned by the engine; touched by one thread per tick.
///
/// `@exclusivity(unchecked)`: the per-frame path reads and writes these properties many times per
/// stream and tick; dynamic exclusivity checks on them cost about 8 % of the engine's instructions.
/// Only the worker that owns the stream's room touches them during a tick, and the engine's API
/// touches them only between ticks, so no two accesses can overlap.
final class StreamChannel {
    let name: String
    /// The stream's id: its slot and generation.
    let id: StreamID
    let room: Int
    @exclusivity(unchecked) var spectral: SpectralState
    @exclusivity(unchecked) var vad = VoiceActivityDetector()
    @exclusivity(unchecked) var envelope = EnergyEnvelope()
    /// The evidence stage's state: sound context, classifier, tone detector, resume gate.
    @exclusivity(unchecked) var evidence = SpeechEvidence()
    @exclusivity(unchecked) var activity = SpeakerObservation()
    @exclusivity(unchecked) var statistics = TalkStatistics()

    /// The hop submitted for the next tick.
    @exclusivity(unchecked) var pending: [Float]
    @exclusivity(unchecked) var hasPending = false
    /// True for a stream that carries RFC 6464 levels instead of audio.
    @exclusivity(unchecked) var carriesLevels = false
    /// A level stream's level and V flag for the next tick.
    @exclusivity(unchecked) var pendingLevel: UInt8 = 127
    @exclusivity(unchecked) var pendingVoiceActivity: Bool? = nil
    /// A level stream's noise floor.
    @exclusivity(unchecked) var levelFloor = LevelFloorTracker()

    /// Features of the last analysed frame.
    @exclusivity(unchecked) var features = FrameFeatures()
    /// Frame evidence before leakage suppression.
    @exclusivity(unchecked) var voiced = false
    @exclusivity(unchecked) var continues = false
    /// True when this frame's evidence was judged a neighbour's voice.
    @exclusivity(unchecked) var leak = false
    /// Own speech level in dBFS, learnt from frames counted as this stream's speech.
    @exclusivity(unchecked) var speechLevel: Float
    /// Smoothed mean square of the hops, for reported levels.
    @exclusivity(unchecked) var smoothedMeanSquare: Float = 0

    /// - Parameter id: the stream's id; its slot spreads the streams' resting analyses over the ticks
    ///   (see `VoiceActivityConfiguration.restingInterval`).
    init(name: String, id: StreamID, room: Int, configuration: EngineConfiguration) {
        self.name = name
        self.id = id
        self.room = room
        spectral = SpectralState(configuration: configuration.vad, phase: id.rawValue)
        pending = [Float](repeating: 0, count: AnalysisFormat.hopSize)
        speechLevel = configuration.leakage.initialSpeechLevel
    }

    /// Smoothed level in dBov.
    var level: Float { Levels.dBFS(meanSquare: smoothedMeanSquare) }
}

/// The streams of one room and its floor. Unchecked exclusivity: as `StreamChannel`.
final class RoomState {
    let name: String
    /// The room's id; `index` is its slot.
    let id: RoomID
    var index: Int { id.rawValue }
    @exclusivity(unchecked) var members: [Int] = []
    let floor: any FloorPolicy
    /// The worker that owns this room and its streams.
    let shard: Shard
    /// Scratch, one slot per member: the streams with speech evidence this frame are the first
    /// `candidateCount`. Sized when members change, never per frame.
    @exclusivity(unchecked) var candidates: [Int] = []
    @exclusivity(unchecked) var candidateCount = 0
    /// Scratch, one slot per member: the streams that may be the source of a leak this frame; the
    /// first `sourceCount` count.
    @exclusivity(unchecked) var sources: [Int] = []
    /// Scratch: each source's loudness (see `Engine.sourceLoudness`), parallel to `sources`.
    @exclusivity(unchecked) var loudness: [Float] = []

    /// Gives the scratch buffers one slot per member (between ticks, when members change).
    func sizeScratch() {
        candidates = [Int](repeating: 0, count: members.count)
        sources = [Int](repeating: 0, count: members.count)
        loudness = [Float](repeating: 0, count: members.count)
        candidateCount = 0
        sourceCount = 0
    }
    @exclusivity(unchecked) var sourceCount = 0

    init(name: String, id: RoomID, policy: any FloorPolicy, shard: Shard) {
        self.name = name
        self.id = id
        floor = policy
        self.shard = shard
    }
}

/// What one worker owns: its rooms, its FFT scratch, and the events its rooms made since they were
/// last consumed (in time order). Unchecked exclusivity: as `StreamChannel`.
final class Shard {
    @exclusivity(unchecked) var rooms: [Int] = []
    let analyzer: SpectralAnalyzer
    @exclusivity(unchecked) var events: [EngineEvent] = []
    /// Read position while `Engine.consumeEvents` merges the shards.
    @exclusivity(unchecked) var cursor = 0

    init(overSubtraction: Float) {
        analyzer = SpectralAnalyzer(overSubtraction: overSubtraction)
        events.reserveCapacity(64)
    }
}

internal import CPrefetch
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
    /// The evidence stage's state: sound context, classifier, tone detector, resume gate.
    @exclusivity(unchecked) var evidence = SpeechEvidence()
    /// The decision stage's state of the stream, shared with its room's `RoomDecision`.
    let talker: Talker

    /// The hop submitted for the next tick.
    @exclusivity(unchecked) var pending: [Float]
    @exclusivity(unchecked) var hasPending = false
    /// Whether the hop the last tick analysed held audio (submitted, or read with audio in it); `pending`
    /// still holds it until the next submit.
    @exclusivity(unchecked) var heard = false
    /// Where the stream's worker reads each hop during the tick, instead of `pending` being submitted
    /// (`Engine.attach(_:to:)`); nil for a stream fed by `submit`.
    @exclusivity(unchecked) var source: (any ConcurrentHopSource)?
    /// True for a stream that carries RFC 6464 levels instead of audio.
    @exclusivity(unchecked) var carriesLevels = false
    /// A level stream's level and V flag for the next tick.
    @exclusivity(unchecked) var pendingLevel: UInt8 = 127
    @exclusivity(unchecked) var pendingVoiceActivity: Bool? = nil
    /// Whether the level stream's sender has set the RFC 6464 V flag on a packet, and cleared it on one: once
    /// it has done both, the flag is its voice decision (`Engine.submitLevel(_:to:)`).
    @exclusivity(unchecked) var voiceFlagSet = false
    @exclusivity(unchecked) var voiceFlagCleared = false
    /// A level stream's noise floor.
    @exclusivity(unchecked) var levelFloor = LevelFloorTracker()

    /// Features of the last analysed frame.
    @exclusivity(unchecked) var features = FrameFeatures()
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
        evidence = SpeechEvidence(model: configuration.vad.speechModel ? SpeechModel.shipped : nil)
        talker = Talker(
            id: id, initialSpeechLevel: configuration.leakage.initialSpeechLevel,
            historyFrames: RoomAlignment.historyFrames(for: configuration.alignment))
        // The buffers are made once and mutated in place, never replaced: their addresses hold.
        let buffers = Self.bufferAddresses(pending: pending, spectral: spectral)
        prefetchTargets = (
            talker: UnsafeRawPointer(Unmanaged.passUnretained(talker).toOpaque()),
            pending: buffers.pending, window: buffers.window, noise: buffers.noise,
            noiseBytes: spectral.noise.prefetchTarget.bytes)
    }

    /// Where the pending hop, the window and the noise tracker's rows start now.
    private static func bufferAddresses(pending: [Float], spectral: SpectralState) -> (
        pending: UnsafeRawPointer, window: UnsafeRawPointer, noise: UnsafeRawPointer
    ) {
        (pending.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) },
         spectral.history.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) },
         spectral.noise.prefetchTarget.address)
    }

    /// Where the state `prefetch()` asks for lives, taken at creation (reading the buffers' addresses
    /// per frame would copy the spectral state or count references). Hints only: never dereferenced.
    private let prefetchTargets:
        (talker: UnsafeRawPointer, pending: UnsafeRawPointer, window: UnsafeRawPointer, noise: UnsafeRawPointer, noiseBytes: Int)

    /// Smoothed level in dBov.
    var level: Float { Levels.dBFS(meanSquare: smoothedMeanSquare) }

    /// Whether the buffers are still where `prefetchTargets` says (checked in debug builds after each
    /// analysed frame: a change that replaced one would silently prefetch the wrong memory).
    var prefetchTargetsHold: Bool {
        let now = Self.bufferAddresses(pending: pending, spectral: spectral)
        return prefetchTargets.pending == now.pending && prefetchTargets.window == now.window
            && prefetchTargets.noise == now.noise
    }

    /// Asks the CPU to cache this stream's state before its frame is analysed: the object's own fields
    /// (about 2 KiB), the talker, the pending hop, the window and the noise tracker's rows.
    func prefetch() {
        let targets = prefetchTargets
        activespeaker_prefetch(Unmanaged.passUnretained(self).toOpaque(), 2048)
        activespeaker_prefetch(targets.talker, 512)
        activespeaker_prefetch(targets.pending, AnalysisFormat.hopSize * 4)
        activespeaker_prefetch(targets.window, AnalysisFormat.windowSize * 4)
        activespeaker_prefetch(targets.noise, targets.noiseBytes)
    }
}

/// One room: its name and id, the worker that owns it, and its decision stage (members, floor).
final class RoomState {
    let name: String
    /// The room's id; `index` is its slot.
    let id: RoomID
    var index: Int { id.rawValue }
    /// The worker that owns this room and its streams.
    let shard: Shard
    let decision: RoomDecision
    /// The member streams' slots, in join order.
    var members: [Int] { decision.members }

    init(name: String, id: RoomID, decision: RoomDecision, shard: Shard) {
        self.name = name
        self.id = id
        self.decision = decision
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

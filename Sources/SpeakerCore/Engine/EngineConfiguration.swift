import Foundation

/// Every tunable of the engine, with units and defaults. Validated once, when the engine is made,
/// so the per-frame path cannot fail.
///
/// Encodes to and decodes from JSON with the same keys (`{"vad":{"hangover":0.3}}`); a partial
/// document keeps the defaults for what it leaves out.
public struct EngineConfiguration: Codable, Sendable, Equatable {
    /// The per-frame analysis pipeline.
    public var analysis = AnalysisConfiguration()
    /// Per-stream voice activity detection.
    public var vad = VoiceActivityConfiguration()
    /// Suppression of voices that leak into other participants' microphones.
    public var leakage = LeakageConfiguration()
    /// Dominant-speaker selection per room.
    public var selection = SelectionConfiguration()
    /// Lining up a room's streams that arrive apart, before they are compared.
    public var alignment = AlignmentConfiguration()
    /// Time constant of the levels reported by `Engine.level(of:)` and ranked by
    /// `Engine.activeSpeakers(in:)`, seconds. Default 0.3 s.
    public var levelTimeConstant: Double = 0.3

    public init() {}

    /// Throws the first value found out of its range.
    public func validate() throws(ConfigurationError) {
        try vad.validate()
        try leakage.validate()
        try selection.validate()
        try alignment.validate()
        try ConfigurationError.check(
            levelTimeConstant >= 0.01 && levelTimeConstant <= 10, "levelTimeConstant", "0.01…10 s")
    }
}

/// How each audio frame is analysed.
public struct AnalysisConfiguration: Codable, Sendable, Equatable {
    /// Run the cheap first stage (`FrameCascade`: the hop's time-domain energy against the noise
    /// floor) on every frame and the spectral stage only on the frames it cannot decide: every frame
    /// inside an utterance or with sound above the floor, every `vad.restingInterval`-th resting frame,
    /// every `vad.quietRefresh`-th quiet one. Default true; false analyses every frame in full (for
    /// comparison: the same decisions up to the carried frames, at the full cost).
    public var cascade: Bool = true

    public init() {}
}

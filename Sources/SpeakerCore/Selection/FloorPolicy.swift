/// A room's dominant-speaker policy: decides the floor holder once per tick from what it observes
/// of each member. Ours is `hysteresis` (`HysteresisPolicy`); SpeakerEval adds the baselines other
/// systems use (`FloorPolicies.withBaselines`), and an application may add its own (`FloorPolicies.adding`).
///
/// Policies are classes so that the engine holds them as `any FloorPolicy` without boxing or copying on
/// the per-frame path. `update` must be real-time safe: no allocation, lock or error — the engine calls
/// it on its worker thread once per room and tick (`BaselineRealTimeSafetyTests` checks the shipped ones).
public protocol FloorPolicy: AnyObject {
    /// The stream index holding the floor, or nil for nobody.
    var holder: Int? { get }

    /// Decides the holder at frame `now`.
    /// - Parameters:
    ///   - members: the room's stream indices, in the order they joined.
    ///   - observation: what the engine measured at this frame of the member at a position of
    ///     `members` (0 for the first).
    /// - Returns: whether the holder changed, and the holder.
    func update(
        now: Int, members: UnsafeBufferPointer<Int>, observation: (Int) -> SpeakerObservation
    ) -> (changed: Bool, holder: Int?)

    /// Forgets a stream that leaves the room; returns true when it held the floor (the holder is then nobody).
    func remove(_ index: Int) -> Bool
}

/// The floor policies an engine's configuration may name (`selection.policy`), each by its name with the
/// maker of one room's policy. A value: the engine is given its set at creation and checks the configured
/// name against it, so a name no module provides is a configuration error, not a crash.
///
/// ```swift
/// var configuration = EngineConfiguration()
/// configuration.selection.policy = "loudest"
/// let engine = try Engine(configuration: configuration, policies: .withBaselines)   // SpeakerEval's
/// ```
public struct FloorPolicies: Sendable {
    /// Makes one room's policy from the selection settings.
    public typealias Maker = @Sendable (SelectionConfiguration) -> any FloorPolicy

    private var makers: [String: Maker]

    /// Ours alone: `hysteresis`.
    public static var standard: FloorPolicies {
        FloorPolicies(makers: [SelectionConfiguration.hysteresis: { HysteresisPolicy(configuration: $0) }])
    }

    private init(makers: [String: Maker]) { self.makers = makers }

    /// These policies and `maker` under `name` (replacing one of that name).
    public func adding(_ name: String, _ maker: @escaping Maker) -> FloorPolicies {
        var more = self
        more.makers[name] = maker
        return more
    }

    /// The names, sorted.
    public var names: [String] { makers.keys.sorted() }

    /// Whether `name` is one of them.
    public func contains(_ name: String) -> Bool { makers[name] != nil }

    /// A new policy of `name` for one room.
    /// - Precondition: `contains(name)`.
    func make(_ name: String, _ configuration: SelectionConfiguration) -> any FloorPolicy {
        guard let maker = makers[name] else { preconditionFailure("no floor policy is named \(name)") }
        return maker(configuration)
    }
}

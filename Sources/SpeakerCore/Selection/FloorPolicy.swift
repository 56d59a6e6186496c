/// The dominant-speaker policies a room can use.
public enum FloorPolicyKind: String, Codable, Sendable, CaseIterable {
    /// Ours: VAD speech activity after leakage suppression, with turn-taking hysteresis.
    case hysteresis
    /// Baseline: the three-time-scale method of Volfin and Cohen as Jitsi and mediasoup use it.
    case volfinCohen = "volfin-cohen"
    /// Baseline: the LiveKit server's 400 ms windows of audio levels.
    case livekit
    /// Baseline: the Amazon Chime SDK's default active-speaker policy.
    case chime
    /// Baseline: the loudest stream, with a 300 ms hold.
    case loudest
}

/// A room's dominant-speaker policy: decides the floor holder once per tick from what it observes
/// of each member.
///
/// Policies are classes so that the engine holds them as `any FloorPolicy` without boxing or
/// copying on the per-frame path. `update` must be real-time safe: no allocation, lock or error.
protocol FloorPolicy: AnyObject {
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

extension FloorPolicyKind {
    /// A new policy of this kind for one room.
    func make(_ configuration: SelectionConfiguration) -> any FloorPolicy {
        switch self {
        case .hysteresis: HysteresisPolicy(configuration: configuration)
        case .volfinCohen: VolfinCohenPolicy()
        case .livekit: LiveKitPolicy()
        case .chime: ChimePolicy()
        case .loudest: LoudestPolicy()
        }
    }
}

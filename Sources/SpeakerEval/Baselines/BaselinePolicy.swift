import SpeakerCore

/// The dominant-speaker policies of other systems, for comparison with ours (docs/evaluation.md): each a
/// `FloorPolicy`, named as `selection.policy` names it.
public enum BaselinePolicy: String, Sendable, CaseIterable {
    /// The three-time-scale method of Volfin and Cohen as Jitsi and mediasoup use it.
    case volfinCohen = "volfin-cohen"
    /// The LiveKit server's 400 ms windows of audio levels.
    case livekit
    /// The Amazon Chime SDK's default active-speaker policy.
    case chime
    /// The loudest stream, with a 300 ms hold.
    case loudest

    /// A new policy of this kind for one room.
    public func make() -> any FloorPolicy {
        switch self {
        case .volfinCohen: VolfinCohenPolicy()
        case .livekit: LiveKitPolicy()
        case .chime: ChimePolicy()
        case .loudest: LoudestPolicy()
        }
    }
}

extension FloorPolicies {
    /// Ours and the baselines: what `detect`, `eval` and the other commands accept as `selection.policy`.
    public static var withBaselines: FloorPolicies {
        var policies = FloorPolicies.standard
        for baseline in BaselinePolicy.allCases {
            policies = policies.adding(baseline.rawValue) { _ in baseline.make() }
        }
        return policies
    }
}

import SpeakerCore
import Testing
@testable import SpeakerEval

/// Plays scripted RFC 6464 levels, one per stream per 10 ms hop, through a floor policy.
struct LevelScript {
    /// Stream indices of the room, in join order.
    var members: [Int]
    /// Per hop, the level of each member (same order as `members`).
    var hops: [[UInt8]] = []

    init(streams: Int) { members = Array(0..<streams) }

    /// Appends `seconds` of hops with the given level per stream.
    mutating func add(seconds: Double, _ levels: UInt8...) {
        precondition(levels.count == members.count)
        for _ in 0..<Int((seconds * 100).rounded()) { hops.append(levels) }
    }

    /// Runs the script; returns each change of holder with the time (end of its hop, seconds).
    func run(_ policy: some FloorPolicy) -> [(time: Double, holder: Int?)] {
        var changes: [(time: Double, holder: Int?)] = []
        members.withUnsafeBufferPointer { members in
            for (frame, levels) in hops.enumerated() {
                let (changed, holder) = policy.update(now: frame, members: members) { position in
                    var observation = SpeakerObservation()
                    observation.level = levels[position]
                    return observation
                }
                if changed { changes.append((Double(frame + 1) / 100, holder)) }
                #expect(holder == policy.holder)
            }
        }
        return changes
    }
}

/// The baseline policies on scripted level sequences whose outcome follows from their published rules.
@Suite struct BaselinePolicyTests {
    // Levels: 127 digital silence, 70 a quiet noise floor (−70 dBov), 25 speech (−25 dBov).
    static let silence: UInt8 = 127
    static let noise: UInt8 = 70
    static let speech: UInt8 = 25

    // MARK: volfin-cohen

    @Test func volfinCohenScoresFollowTheBinomialExponentialForm() {
        // v = 0: ln C(13,0) + 13·ln 0.5 − ln 0.78 < 0, floored at 1e-10.
        #expect(VolfinCohenPolicy.activityScore(active: 0, of: 13, lambda: 0.78) == 1e-10)
        // v = 10 of 13: ln 286 + 13·ln 0.5 − ln 0.78 + 7.8 = 4.694.
        #expect(abs(VolfinCohenPolicy.activityScore(active: 10, of: 13, lambda: 0.78) - 4.6935) < 1e-3)
        // v = 1 of 10, λ = 47: ln 10 + 10·ln 0.5 − ln 47 + 47 = 38.521.
        #expect(abs(VolfinCohenPolicy.activityScore(active: 1, of: 10, lambda: 47) - 38.521) < 1e-3)
    }

    @Test func volfinCohenFollowsACleanTurnLate() throws {
        // 1 s of noise on both (the noise floor), bob talks 1–5 s, then alice 5–9 s.
        var script = LevelScript(streams: 2)
        script.add(seconds: 1, Self.noise, Self.noise)
        script.add(seconds: 4, Self.noise, Self.speech)
        script.add(seconds: 4, Self.speech, Self.noise)
        let changes = script.run(VolfinCohenPolicy())
        // The first decision (0.3 s) nominates the first stream; bob takes over, then alice.
        #expect(changes.first?.holder == 0 && changes.first?.time == 0.3)
        let toBob = try #require(changes.first { $0.holder == 1 })
        let toAlice = try #require(changes.last)
        #expect(toAlice.holder == 0)
        #expect(changes.count == 3, "no other switch: \(changes)")
        // Decisions every 300 ms. Alice never spoke, so two full 100 ms blocks of bob's (the next
        // decision, at 1.2 s) outweigh her on every scale; alice must wait until her long (1 s) score
        // passes bob's, who spoke throughout the last second.
        #expect(abs(toBob.time - 1.2) < 1e-9, "to bob at \(toBob.time) s")
        #expect(toAlice.time - 5 >= 0.6 && toAlice.time - 5 <= 1.5, "to alice after \(toAlice.time - 5) s")
    }

    @Test func volfinCohenNeverNamesNobody() {
        var script = LevelScript(streams: 2)
        script.add(seconds: 1, Self.noise, Self.noise)
        script.add(seconds: 2, Self.speech, Self.noise)
        script.add(seconds: 5, Self.silence, Self.silence)
        let changes = script.run(VolfinCohenPolicy())
        #expect(!changes.isEmpty)
        #expect(changes.allSatisfy { $0.holder != nil })
    }

    @Test func volfinCohenIgnoresSpeechWithinTenOfTheNoiseFloor() {
        // Bob's noise floor is volume 57 (level 70); his "speech" at level 64 is volume 63 < 57 + 10,
        // so its immediate score is 0 and he never challenges alice, who talks quietly but clearly.
        var script = LevelScript(streams: 2)
        script.add(seconds: 1, Self.noise, Self.noise)
        script.add(seconds: 3, 45, 64)
        let changes = script.run(VolfinCohenPolicy())
        #expect(changes.map(\.holder) == [0])
    }

    // MARK: loudest

    @Test func loudestSwitchesAfterItsHold() throws {
        var script = LevelScript(streams: 2)
        script.add(seconds: 2, Self.speech, Self.noise)
        script.add(seconds: 2, Self.noise, Self.speech)
        let changes = script.run(LoudestPolicy())
        #expect(changes.count == 2)
        #expect(changes[0].holder == 0 && abs(changes[0].time - 0.3) < 1e-9)
        #expect(changes[1].holder == 1)
        #expect(changes[1].time - 2 <= 0.3 + 1e-9 && changes[1].time - 2 >= 0.29, "after \(changes[1].time - 2) s")
    }

    @Test func loudestIgnoresBurstsShorterThanItsHold() {
        var script = LevelScript(streams: 2)
        script.add(seconds: 1, Self.speech, Self.noise)
        script.add(seconds: 0.29, Self.speech, 10)  // a 290 ms cough, louder than alice
        script.add(seconds: 1, Self.speech, Self.noise)
        #expect(script.run(LoudestPolicy()).map(\.holder) == [0])
    }

    @Test func loudestNamesNobodyOnlyAfterDigitalSilenceEverywhere() throws {
        var script = LevelScript(streams: 2)
        script.add(seconds: 1, Self.speech, Self.noise)
        script.add(seconds: 1, Self.silence, Self.noise)  // bob's noise is now the loudest
        script.add(seconds: 1, Self.silence, Self.silence)
        let changes = script.run(LoudestPolicy())
        #expect(changes.map(\.holder) == [0, 1, nil])
        #expect(abs(try #require(changes.last).time - 2.3) < 1e-9)
    }

    // MARK: chime

    @Test func chimeNormalisesLevelsBetweenMinus42AndMinus14() {
        #expect(ChimePolicy.normalizedVolume(level: 14) == 1)
        #expect(ChimePolicy.normalizedVolume(level: 42) == 0)
        #expect(abs(ChimePolicy.normalizedVolume(level: 28) - 0.5) < 1e-12)
        #expect(ChimePolicy.normalizedVolume(level: 100) == 0)
    }

    @Test func chimeKeepsASilentSpeakerFor44Updates() throws {
        // Alice talks for 3 s (score 1 − 0.9^30 ≈ 0.96), then everyone is quiet: her score decays by
        // 0.9 per 100 ms update and drops below the 0.01 cutoff at the 44th update (0.9^44·0.96 < 0.01
        // already at the 44th: 0.96·0.9^43 = 0.0104, 0.96·0.9^44 = 0.0093).
        var script = LevelScript(streams: 2)
        script.add(seconds: 3, Self.speech, Self.noise)
        script.add(seconds: 6, Self.noise, Self.noise)
        let changes = script.run(ChimePolicy())
        #expect(changes.count == 2)
        #expect(changes[0].holder == 0 && abs(changes[0].time - 0.1) < 1e-9)
        #expect(changes[1].holder == nil)
        #expect(abs(changes[1].time - (3 + 4.4)) < 1e-9, "released at \(changes[1].time)")
    }

    @Test func chimeTakeoverWaitsForTheListToChange() throws {
        // Alice (score ≈ 1) stops as bob starts. Bob enters the list at once, but the list is not
        // re-sorted until alice leaves it, when the takeover rate has pushed her score to 0: at the
        // 4th update her score is 0.9·0.9·0.9·(…) − 0.2 per update → 0 by the 4th, reported at the 5th.
        var script = LevelScript(streams: 2)
        script.add(seconds: 5, Self.speech, Self.noise)
        script.add(seconds: 2, Self.noise, Self.speech)
        let changes = script.run(ChimePolicy())
        let takeover = try #require(changes.last)
        #expect(takeover.holder == 1)
        #expect(abs(takeover.time - 5.5) < 1e-9, "bob named at \(takeover.time)")
    }

    // MARK: livekit

    @Test func liveKitDecidesOnFourHundredMillisecondWindows() throws {
        var script = LevelScript(streams: 2)
        script.add(seconds: 2, Self.speech, Self.noise)
        script.add(seconds: 2, Self.noise, Self.speech)
        script.add(seconds: 1, Self.noise, Self.noise)
        let changes = script.run(LiveKitPolicy())
        #expect(changes.map(\.holder) == [0, 1, nil])
        // Alice at the end of the first window; bob at the end of the window in which alice stopped
        // (her window has no active packet: smoothed level 0); nobody one window after bob stops.
        #expect(abs(changes[0].time - 0.4) < 1e-9)
        #expect(abs(changes[1].time - 2.4) < 1e-9)
        #expect(abs(changes[2].time - 4.4) < 1e-9)
    }

    @Test func liveKitNeedsFortyPercentOfAWindow() {
        // Bursts of 140 ms in each 400 ms window (35 %) never count; 180 ms (45 %) do.
        var short = LevelScript(streams: 1)
        var long = LevelScript(streams: 1)
        for _ in 0..<5 {
            short.add(seconds: 0.14, Self.speech)
            short.add(seconds: 0.26, Self.noise)
            long.add(seconds: 0.18, Self.speech)
            long.add(seconds: 0.22, Self.noise)
        }
        #expect(short.run(LiveKitPolicy()).isEmpty)
        #expect(long.run(LiveKitPolicy()).map(\.holder) == [0])
    }

    @Test func liveKitSmoothsWithTwoThirdsWeight() {
        // One full window at −25 dBov gives 2/3 · 10^(−25/20) = 0.0375 ≥ 10^(−35/20) = 0.0178: active.
        // One at −40 dBov... is not active at all (> 35). A window at −30 dBov after silence gives
        // 2/3 · 0.0316 = 0.0211: active; at −33 dBov, 2/3 · 0.0224 = 0.0149: not yet, and the next
        // window at −33 dBov reaches 0.0149 + (0.0224 − 0.0149)·2/3 = 0.0199: active.
        var script = LevelScript(streams: 1)
        script.add(seconds: 0.8, 33)
        let changes = script.run(LiveKitPolicy())
        #expect(changes.map(\.holder) == [0])
        #expect(abs(changes[0].time - 0.8) < 1e-9)
    }

    // MARK: all

    @Test(arguments: BaselinePolicy.allCases)
    func removingTheHolderNamesNobody(kind: BaselinePolicy) throws {
        let policy = kind.make()
        var script = LevelScript(streams: 2)
        script.add(seconds: 1, Self.noise, Self.noise)
        script.add(seconds: 3, Self.speech, Self.noise)
        _ = script.run(policy)
        let holder = try #require(policy.holder)
        #expect(policy.remove(holder))
        #expect(policy.holder == nil)
        #expect(!policy.remove(holder))
    }

    @Test func everyPolicyHasAName() {
        #expect(BaselinePolicy.allCases.map(\.rawValue) == ["volfin-cohen", "livekit", "chime", "loudest"])
        #expect(FloorPolicies.withBaselines.names == ["chime", "hysteresis", "livekit", "loudest", "volfin-cohen"])
        #expect(FloorPolicies.standard.names == ["hysteresis"])
    }

    /// A configuration naming a baseline needs an engine given the baselines: without them it is a
    /// configuration error naming the policies there are, not a crash.
    @Test func aBaselineNeedsAnEngineGivenTheBaselines() throws {
        var configuration = EngineConfiguration()
        configuration.selection.policy = "loudest"
        let refusal = #expect(throws: ConfigurationError.self) { try Engine(configuration: configuration) }
        #expect(refusal?.key == "selection.policy" && refusal?.allowed == "{hysteresis}")
        let engine = try Engine(configuration: configuration, policies: .withBaselines)
        let room = engine.addRoom(name: "r")
        #expect(engine.dominantSpeaker(in: room) == nil)
    }
}

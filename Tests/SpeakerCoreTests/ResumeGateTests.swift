import Testing
@testable import SpeakerCore

/// `ResumeGate`: a sound after digital silence is held until it shows whether it is steady.
@Suite struct ResumeGateTests {
    /// Steps the gate through hops of the given energies (the differenced energy equal to the energy).
    static func steps(_ energies: [Float], speaking: Bool = false) -> [ResumeGate.Step] {
        var gate = ResumeGate()
        return energies.map { energy in gate.step(energyDBFS: energy, speaking: speaking) { energy } }
    }

    static let silence = [Float](repeating: -120, count: 10)

    @Test func aSteadySoundAfterSilenceIsHeldForTheWindowThenTakenAsTheFloor() {
        let result = Self.steps(Self.silence + [Float](repeating: -40, count: 25))
        let sound = Array(result.dropFirst(10))
        #expect(sound.prefix(ResumeGate.windowFrames - 1).allSatisfy { $0 == .hold })
        #expect(sound[ResumeGate.windowFrames - 1] == .steady)
        #expect(sound.dropFirst(ResumeGate.windowFrames).allSatisfy { $0 == .open })
    }

    @Test func aSoundThatMovesIsReleasedAsSoonAsItSpreads() {
        // Settling hops are not measured; then 2 dB steps: the spread passes 6 dB on the fifth measured hop.
        let rising: [Float] = [-60, -30, -45] + (0..<10).map { -50 + 2 * Float($0) }
        let result = Array(Self.steps(Self.silence + rising).dropFirst(10))
        let released = result.firstIndex(of: .open)
        #expect(released == ResumeGate.settleFrames + 4)
        #expect(result.prefix(released ?? 0).allSatisfy { $0 == .hold })
        #expect(!result.contains(.steady))
    }

    @Test func soundWithoutSilenceBeforeItIsNeverHeld() {
        let result = Self.steps([Float](repeating: -40, count: 30))
        #expect(result.allSatisfy { $0 == .open })
        // Silence shorter than `silenceFrames` does not arm the gate either.
        let short = Self.steps([-40, -40] + [Float](repeating: -120, count: ResumeGate.silenceFrames - 1) + [-40, -40])
        #expect(short.allSatisfy { $0 == .open })
    }

    @Test func insideAnUtteranceAGapIsNotWatched() {
        let result = Self.steps(Self.silence + [Float](repeating: -40, count: 25), speaking: true)
        #expect(result.allSatisfy { $0 == .open })
    }

    @Test func aShortGapInsideAWatchedSoundPausesTheWatch() {
        // 8 sounding hops, a gap of 10 silent hops (a jitter buffer run dry), 12 more: one window of 20.
        let gap = [Float](repeating: -120, count: 10)
        let result = Array(Self.steps(Self.silence + [Float](repeating: -40, count: 8) + gap + [Float](repeating: -40, count: 12)).dropFirst(10))
        let sounding = result.enumerated().filter { $0.offset < 8 || $0.offset >= 18 }.map(\.element)
        #expect(sounding.prefix(ResumeGate.windowFrames - 1).allSatisfy { $0 == .hold })
        #expect(sounding.last == .steady)
    }

    @Test func aLongSilenceStartsTheWatchAgain() {
        let first = [Float](repeating: -40, count: 8)
        let long = [Float](repeating: -120, count: ResumeGate.rearmFrames)
        let result = Array(Self.steps(Self.silence + first + long + [Float](repeating: -40, count: 20)).suffix(20))
        #expect(result.prefix(ResumeGate.windowFrames - 1).allSatisfy { $0 == .hold })
        #expect(result.last == .steady)
    }

    @Test func afterASoundWasReleasedShortGapsAreNotWatched() {
        let rising: [Float] = [-60, -30, -45] + (0..<6).map { -50 + 2 * Float($0) }
        let gap = [Float](repeating: -120, count: 20)
        let steady = [Float](repeating: -40, count: 25)
        let result = Self.steps(Self.silence + rising + gap + steady)
        #expect(result.suffix(steady.count).allSatisfy { $0 == .open })
        // After a silence of `rearmFrames` hops the next sound is watched again.
        let rearmed = Self.steps(Self.silence + rising + [Float](repeating: -120, count: ResumeGate.rearmFrames) + steady)
        #expect(rearmed.suffix(steady.count).first == .hold)
    }
}

import Testing
@testable import CallServer

/// What a browser hears of several senders: one at a time, the louder, without flapping.
@Suite struct ForwardedSourceSelectorTests {
    /// Packets of two sources interleaved every 20 ms from `start`; returns which passed.
    static func interleave(
        _ selector: inout ForwardedSourceSelector, from start: Double, packets: Int, a: Double?, b: Double?
    ) -> [UInt32] {
        var passed: [UInt32] = []
        for index in 0..<packets {
            let now = start + Double(index) * 0.02
            if selector.admits(ssrc: 1, dBov: a, now: now) { passed.append(1) }
            if selector.admits(ssrc: 2, dBov: b, now: now + 0.001) { passed.append(2) }
        }
        return passed
    }

    @Test func theFirstSourceIsKeptWhileOthersAreNotClearlyLouder() {
        var selector = ForwardedSourceSelector()
        // b is 4 dB louder: within the margin, so a keeps the floor.
        #expect(Self.interleave(&selector, from: 0, packets: 100, a: -30, b: -26) == Array(repeating: 1, count: 100))
        #expect(selector.current == 1)
    }

    @Test func aClearlyLouderSourceTakesOverWithinAFewPackets() {
        var selector = ForwardedSourceSelector()
        _ = Self.interleave(&selector, from: 0, packets: 50, a: -30, b: -70)
        let passed = Self.interleave(&selector, from: 1, packets: 50, a: -70, b: -25)
        // a fades (smoothed) while b rises: b holds the floor after at most 10 packets, and keeps it.
        let firstOfB = passed.firstIndex(of: 2) ?? passed.count
        #expect(firstOfB <= 10, "\(passed)")
        #expect(passed[firstOfB...].allSatisfy { $0 == 2 })
        // One packet per 20 ms passes, never both streams, except in the one slot of the switch.
        #expect(passed.count == 51)
    }

    @Test func aSourceThatStopsIsGivenUp() {
        var selector = ForwardedSourceSelector()
        var passed: [Bool] = []
        passed.append(selector.admits(ssrc: 1, dBov: -20, now: 0))
        passed.append(selector.admits(ssrc: 2, dBov: -60, now: 0.1))
        // 1 sent nothing for more than `silence`: the quiet 2 takes over.
        passed.append(selector.admits(ssrc: 2, dBov: -60, now: 0.1 + ForwardedSourceSelector.silence + 0.01))
        passed.append(selector.admits(ssrc: 1, dBov: -62, now: 0.4))
        // 1 is back, and clearly louder than 2 (its loudness, smoothed, is still about -24 dBov): it takes over.
        passed.append(selector.admits(ssrc: 2, dBov: -60, now: 0.41))
        #expect(passed == [true, false, true, true, false])
    }

    @Test func packetsWithoutALevelCountAsSilence() {
        var selector = ForwardedSourceSelector()
        let first = selector.admits(ssrc: 1, dBov: nil, now: 0)
        let second = selector.admits(ssrc: 2, dBov: -40, now: 0.01)
        #expect(first && second && selector.current == 2)
    }
}

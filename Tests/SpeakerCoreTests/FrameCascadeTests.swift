import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// The first stage of the per-frame analysis (`FrameCascade`): which frames the spectral stage sees.
@Suite struct FrameCascadeTests {
    /// A configuration with the given intervals.
    static func configuration(resting: Int, quiet: Int) -> VoiceActivityConfiguration {
        var c = VoiceActivityConfiguration()
        c.restingInterval = resting
        c.quietRefresh = quiet
        return c
    }

    /// Runs `signal` through an analyzer; for each frame: carried (true) or analysed, and its features.
    static func frames(
        _ signal: [Float], configuration: VoiceActivityConfiguration, mayRest: Bool = true
    ) -> [(carried: Bool, features: FrameFeatures)] {
        let analyzer = SpectralAnalyzer(overSubtraction: 1)
        var state = SpectralState(configuration: configuration)
        return signal.withUnsafeBufferPointer { samples in
            (0..<signal.count / 160).map { frame in
                let before = state.quietSkipped
                let features = analyzer.analyze(
                    hop: UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160]), state: &state,
                    mayRest: mayRest, configuration: configuration)
                return (state.quietSkipped > before, features)
            }
        }
    }

    /// The longest run of carried frames.
    static func longestCarriedRun(_ frames: [(carried: Bool, features: FrameFeatures)]) -> Int {
        var longest = 0, run = 0
        for frame in frames {
            run = frame.carried ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    @Test func quietNoiseIsAnalysedOnEveryQuietRefreshFrame() {
        let noise = Synthesis.noise(seconds: 4, levelDBFS: -50, seed: 3)
        let frames = Self.frames(noise, configuration: Self.configuration(resting: 2, quiet: 4))[100...]
        let carried = frames.filter(\.carried).count
        // Steady noise at its floor is quiet: 3 of every 4 frames carried, never more than 3 in a row.
        #expect(carried >= 200 && carried <= 225, "\(carried) of 300")
        #expect(Self.longestCarriedRun(Array(frames)) == 3)
    }

    @Test func insideAnUtteranceEveryFrameIsAnalysed() {
        let noise = Synthesis.noise(seconds: 2, levelDBFS: -50, seed: 3)
        #expect(!Self.frames(noise, configuration: Self.configuration(resting: 4, quiet: 8), mayRest: false)
            .contains { $0.carried })
    }

    @Test func intervalsOfOneAnalyseEveryFrame() {
        let noise = Synthesis.noise(seconds: 2, levelDBFS: -50, seed: 3)
        #expect(!Self.frames(noise, configuration: Self.configuration(resting: 1, quiet: 1)).contains { $0.carried })
    }

    @Test func loudAndSoundingFramesAreAlwaysAnalysed() {
        var signal = VoiceActivityTests.background(3)
        Synthesis.add(Synthesis.voice(seconds: 1, f0: 140, levelDBFS: -26), into: &signal, at: 2)
        let frames = Self.frames(signal, configuration: Self.configuration(resting: 2, quiet: 8))
        // The background before the voice is mostly carried; the syllables never are.
        #expect(frames[50..<200].filter(\.carried).count > 100)
        let loud = frames[200...].filter { $0.features.energyDBFS > -35 }
        #expect(loud.count > 50)
        #expect(!loud.contains { $0.carried })
        // No carried frame is sounding: the last analysis it keeps stood below `voicedSNR`.
        #expect(!frames.contains { $0.carried && $0.features.segmentalSNR >= 3 })
    }

    @Test func aCarriedFrameKeepsTheLastAnalysisWithItsOwnEnergy() {
        var cascade = FrameCascade()
        var analysed = FrameFeatures()
        analysed.segmentalSNR = 1
        analysed.energyDBFS = -50
        analysed.centroidHz = 700
        analysed.bandEnergyDB = SIMD16(repeating: -60)
        cascade.analysed(analysed, differencedNoiseDBFS: -70)
        var hop = FrameFeatures()
        hop.energyDBFS = -52
        hop.meanSquare = 6.3e-6
        hop.level = 52
        hop.zeroCrossingRate = 0.4
        hop.windowEnergyDBFS = -51
        let carried = cascade.carried(hop)
        #expect(carried.energyDBFS == -52 && carried.meanSquare == 6.3e-6 && carried.level == 52)
        #expect(carried.zeroCrossingRate == 0.4 && carried.windowEnergyDBFS == -51)
        #expect(carried.centroidHz == 700 && carried.segmentalSNR == 1 && carried.bandEnergyDB == SIMD16(repeating: -60))
    }

    @Test func anOnsetOrSoundWakesTheSpectralStage() {
        let c = Self.configuration(resting: 4, quiet: 8)
        let silence = [Float](repeating: 0, count: 160)
        silence.withUnsafeBufferPointer { hop in
            var last = FrameFeatures()
            last.energyDBFS = -50
            last.segmentalSNR = 0
            var frame = FrameFeatures()
            // Quiet frames: carried on all but every 8th (phase 0: the 8th is analysed).
            var cascade = FrameCascade()
            cascade.analysed(last, differencedNoiseDBFS: -40)
            frame.energyDBFS = -50
            let routes = (0..<8).map { _ in cascade.route(frame, hop: hop, previous: 0, mayRest: true, configuration: c) }
            #expect(routes.filter { $0 == .carry }.count == 7 && routes.last == .analyse)
            // A hop more than 3 dB louder than the last analysed frame: analysed.
            frame.energyDBFS = -46.9
            #expect(cascade.route(frame, hop: hop, previous: 0, mayRest: true, configuration: c) == .analyse)
            // The last analysed frame was sounding: analysed.
            last.segmentalSNR = 3
            cascade.analysed(last, differencedNoiseDBFS: -40)
            frame.energyDBFS = -50
            #expect(cascade.route(frame, hop: hop, previous: 0, mayRest: true, configuration: c) == .analyse)
        }
    }

    @Test func quietNeedsTheHopNearTheNoiseFloor() {
        // Not quiet (the floor fed back is far below the hop): the resting interval applies.
        let c = Self.configuration(resting: 2, quiet: 8)
        let loudHop = Synthesis.noise(seconds: 0.01, levelDBFS: -40, seed: 2)
        loudHop.withUnsafeBufferPointer { hop in
            var cascade = FrameCascade()
            var last = FrameFeatures()
            last.energyDBFS = -40
            cascade.analysed(last, differencedNoiseDBFS: -90)
            var frame = FrameFeatures()
            frame.energyDBFS = -40
            let routes = (0..<8).map { _ in cascade.route(frame, hop: hop, previous: 0, mayRest: true, configuration: c) }
            #expect(routes.filter { $0 == .analyse }.count == 4)
        }
    }

    /// Carried frames repeat the newest band energies, so the flux of the next analysed frame measures
    /// the rise over 3 frames (30 ms), as without the cascade, not over 3 analyses.
    @Test func carriedFramesKeepTheFluxSpanInFrames() {
        var state = SpectralState(configuration: VoiceActivityConfiguration())
        let count = SpectralBands.count
        for row in 0..<SpectralState.fluxSpan {
            for band in 0..<count { state.bandHistory[row * count + band] = Float(row) }
        }
        // Row 2 is the newest (the oldest is row 0).
        for _ in 0..<SpectralState.fluxSpan { state.repeatNewestBands() }
        #expect(state.bandHistory.values.allSatisfy { $0 == 2 })
    }

    @Test func onsetIsFoundAndDatedWithTheCascadeOnAndOff() throws {
        var signal = VoiceActivityTests.background(6)
        Synthesis.add(Synthesis.voice(seconds: 2, f0: 140, levelDBFS: -26), into: &signal, at: 2)
        for cascade in [true, false] {
            var configuration = EngineConfiguration()
            configuration.analysis.cascade = cascade
            configuration.vad.quietRefresh = 8
            let speech = try EngineHarness.run([("a", signal)], configuration: configuration).speech("a")
            try #require(speech.count == 2, "cascade \(cascade): \(speech)")
            #expect(abs(speech[0].since - 2.0) < 0.08)
            #expect(speech[0].time - speech[0].since <= 0.07)
            #expect(abs(speech[1].since - 4.0) < 0.1)
        }
    }
}

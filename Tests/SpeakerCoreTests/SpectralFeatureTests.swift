import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// Features of signals whose answers are known.
@Suite struct SpectralFeatureTests {
    /// Runs the analyzer over `signal` and returns the features of every hop.
    static func features(_ signal: [Float]) -> [FrameFeatures] {
        let analyzer = SpectralAnalyzer(overSubtraction: 1)
        var state = SpectralState(configuration: VoiceActivityConfiguration())
        let hop = AnalysisFormat.hopSize
        return signal.withUnsafeBufferPointer { samples in
            (0..<(signal.count / hop)).map { frame in
                analyzer.analyze(hop: UnsafeBufferPointer(rebasing: samples[frame * hop..<(frame + 1) * hop]), state: &state)
            }
        }
    }

    static func median(_ values: [Float]) -> Float { values.sorted()[values.count / 2] }

    @Test func silenceIsSilent() {
        let last = Self.features([Float](repeating: 0, count: 16_000)).last!
        #expect(last.energyDBFS == -127)
        #expect(last.level == 127)
        #expect(last.periodicity == 0)
        #expect(last.segmentalSNR == 0)
    }

    @Test func sineHasItsLevelCentroidAndNoFlatness() {
        let frames = Self.features(Synthesis.sine(seconds: 1, frequency: 1000, amplitude: 0.5)).suffix(50)
        for f in frames {
            #expect(abs(f.energyDBFS - (-9.03)) < 0.05)  // mean square 0.125
            #expect(f.level == 9)
            #expect(abs(f.centroidHz - 1000) < 40)
            #expect(f.flatness < 0.05)
            #expect(f.zeroCrossingRate > 0.11 && f.zeroCrossingRate < 0.14)  // 2 per 16 samples
        }
    }

    @Test func whiteNoiseIsFlatAndAperiodic() {
        let frames = Array(Self.features(Synthesis.noise(seconds: 4, levelDBFS: -30, seed: 7)).suffix(200))
        #expect(Self.median(frames.map(\.flatness)) > 0.8)
        #expect(abs(Self.median(frames.map(\.centroidHz)) - 4000) < 300)
        #expect(Self.median(frames.map(\.periodicity)) < 0.25)
        #expect(Self.median(frames.map(\.segmentalSNR)) < 2)  // the noise floor is learnt
    }

    @Test func bandEnergiesAddUpToTheFrameEnergy() {
        let frames = Self.features(Synthesis.noise(seconds: 1, levelDBFS: -20, seed: 3)).suffix(50)
        for f in frames {
            var total: Float = 0
            for band in 0..<16 { total += Float.pow10(f.bandEnergyDB[band] / 10) }
            // The bands cover 62.5 Hz – 8 kHz; the window energy differs from the hop's by chance.
            #expect(abs(10 * log10f(total) - (-20)) < 1.5)
        }
    }

    @Test(arguments: [110.0, 150.0, 220.0])
    func voiceIsPeriodicWithItsPitch(f0: Double) {
        var signal = Synthesis.noise(seconds: 3, levelDBFS: -60, seed: 11)
        Synthesis.add(Synthesis.voice(seconds: 1.5, f0: f0, levelDBFS: -25), into: &signal, at: 1.5)
        let voiced = Array(Self.features(signal)[160..<290])
        #expect(Self.median(voiced.map(\.periodicity)) > 0.6)
        #expect(Self.median(voiced.map(\.segmentalSNR)) > 15)
        let pitch = Double(Self.median(voiced.map(\.pitchHz)))
        #expect(abs(pitch - f0) / f0 < 0.08)
    }

    @Test func stationaryHumIsNotPeriodicOnceLearnt() {
        // 50 Hz mains hum with harmonics, then periodicity after the noise tracker has learnt it.
        var hum = [Float](repeating: 0, count: 4 * 16_000)
        for k in 1...8 { Synthesis.add(Synthesis.sine(seconds: 4, frequency: 50 * Double(k), amplitude: 0.02 / Double(k)), into: &hum, at: 0) }
        Synthesis.add(Synthesis.noise(seconds: 4, levelDBFS: -60, seed: 5), into: &hum, at: 0)
        let frames = Array(Self.features(hum).suffix(150))
        #expect(Self.median(frames.map(\.segmentalSNR)) < 2)
        #expect(frames.filter { $0.periodicity > 0.3 && $0.segmentalSNR > 3 }.count < 5)
    }

    @Test func onsetsHaveFlux() {
        var signal = [Float](repeating: 0, count: 8000)
        Synthesis.add(Synthesis.noise(seconds: 0.5, levelDBFS: -20, seed: 2), into: &signal, at: 0.5)
        let frames = Self.features(signal)
        #expect(frames[50].flux > 20)
        #expect(frames[80].flux < 3)
    }
}

import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// The learned sound classifier and the context it reads.
@Suite struct SoundClassifierTests {
    /// Swift inference gives the training script's outputs on saved engine-computed inputs.
    @Test func matchesTheTrainingScriptOnSavedVectors() throws {
        let inputs = SoundClassifierVectors.inputs, expected = SoundClassifierVectors.probabilities
        let count = inputs.count / SoundContext.inputCount
        try #require(count >= 16 && expected.count == 4 * count)
        var largest: Float = 0
        for row in 0..<count {
            var input = SoundContext.Input()
            for index in 0..<SoundContext.inputCount {
                let value = inputs[row * SoundContext.inputCount + index]
                switch index >> 4 {
                case 0: input.shape[index & 15] = value
                case 1: input.spread[index & 15] = value
                case 2: input.modulation[index & 15] = value
                default: input.scalars[index & 15] = value
                }
            }
            let answer = SoundClassifier.shipped.classify(input)
            for k in 0..<4 { largest = max(largest, abs(answer.probabilities[k] - expected[4 * row + k])) }
        }
        #expect(largest <= 1e-4, "largest difference \(largest)")
    }

    @Test func theShippedModelIsDescribed() {
        let model = SoundClassifier.shipped.model
        #expect(model.layers == [64, 32, 16, 4])
        #expect(model.corpus.hasPrefix("sha256:"))
        #expect(model.metrics.contains("music as speech"))
    }

    @Test func probabilitiesAddUpToOne() {
        var context = SoundContext()
        var features = FrameFeatures()
        for frame in 0..<100 {
            features.bandEnergyDB = SIMD16(repeating: -40 + Float(frame % 7))
            features.segmentalSNR = 10
            features.periodicity = 0.6
            features.pitchHz = 150
            context.update(features)
        }
        let answer = SoundClassifier.shipped.classify(context.input)
        #expect(abs(answer.probabilities.sum() - 1) < 1e-5)
        #expect(answer.probabilities.min() >= 0)
    }

    /// A band whose level rises and falls four times a second shows that modulation; a steady band,
    /// or one that swings at 25 Hz, shows little.
    @Test(arguments: [(4.0, true), (0.0, false), (25.0, false)])
    func modulationFeatureFollowsTheSyllableRate(rateHz: Double, modulated: Bool) {
        var context = SoundContext()
        var features = FrameFeatures()
        for frame in 0..<300 {
            let swing = rateHz == 0 ? 0 : Float(10 * sin(2 * Double.pi * rateHz * Double(frame) / 100))
            features.bandEnergyDB = SIMD16(repeating: -40 + swing)
            features.segmentalSNR = 10
            context.update(features)
        }
        // A ±10 dB sine has RMS 7.1 dB; at the band-pass's peak (4 Hz) nearly all of it passes.
        let modulation = context.input.modulation[5]
        if modulated { #expect(modulation > 5) } else { #expect(modulation < 2) }
    }

    /// The spectral shape is relative: the same sound 20 dB louder gives the same shape and spread.
    @Test func shapeAndSpreadDoNotDependOnGain() {
        func run(gain: Float) -> SoundContext.Input {
            var context = SoundContext()
            var features = FrameFeatures()
            for frame in 0..<200 {
                var bands = SIMD16<Float>()
                for band in 0..<16 { bands[band] = -50 - Float(band) + Float((frame * (band + 3)) % 9) + gain }
                features.bandEnergyDB = bands
                features.segmentalSNR = 8
                context.update(features)
            }
            return context.input
        }
        let quiet = run(gain: 0), loud = run(gain: 20)
        for band in 0..<16 {
            #expect(abs(quiet.shape[band] - loud.shape[band]) < 1e-3)
            #expect(abs(quiet.spread[band] - loud.spread[band]) < 1e-3)
        }
    }

    /// With the classifier off the engine decides by its rules alone, and answers "none" for every
    /// stream's classes.
    @Test func theClassifierCanBeTurnedOff() throws {
        var configuration = EngineConfiguration()
        configuration.vad.classifier = false
        let engine = try Engine(configuration: configuration)
        let room = engine.addRoom(name: "r")
        let stream = engine.addStream(name: "s", room: room)
        let voice = Synthesis.voice(seconds: 1, f0: 120, levelDBFS: -25, seed: 3)
        for frame in 0..<100 {
            voice.withUnsafeBufferPointer { engine.submit(UnsafeBufferPointer(rebasing: $0[frame * 160..<(frame + 1) * 160]), to: stream) }
            engine.tick()
        }
        #expect(engine.soundClasses(of: stream) == SoundClasses())
        #expect(engine.soundContext(of: stream).scalars[3] > 0.3)  // the context is still kept
    }
}

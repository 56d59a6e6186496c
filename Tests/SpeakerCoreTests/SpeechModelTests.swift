import CAllocationCounter
import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// The learned speech model (issue 30): its inference against the training script, its kernels, and
/// its real-time safety.
@Suite struct SpeechModelTests {
    static func floats(_ base64: String) -> [Float] { [Float](littleEndianBase64: base64)! }

    /// A frame whose columns are `row` (the inverse of `FrameFeatures.column`).
    static func frame(_ row: ArraySlice<Float>) -> FrameFeatures {
        let v = Array(row)
        var f = FrameFeatures()
        for band in 0..<16 {
            f.bandEnergyDB[band] = v[band]
            f.bandSNR[band] = v[16 + band]
        }
        f.energyDBFS = v[32]
        f.windowEnergyDBFS = v[33]
        f.zeroCrossingRate = v[34]
        f.segmentalSNR = v[35]
        f.flatness = v[36]
        f.centroidHz = v[37] * 1000
        f.flux = v[38]
        f.periodicity = v[39]
        f.pitchHz = v[40] * 1000
        f.speechBandExcessDB = v[41]
        return f
    }

    /// Swift inference gives the training script's float64 outputs on saved engine-computed frames.
    @Test func matchesTheTrainingScriptOnSavedVectors() throws {
        let model = SpeechModel(weights: .shipped)
        for vectors in SpeechModelVectors.cases {
            let rows = Self.floats(vectors.rows), expected = Self.floats(vectors.expected)
            let width = FrameFeatures.columnCount
            try #require(rows.count == vectors.frames * width)
            try #require(expected.count == 4 * (vectors.frames / model.weights.stride))
            var state = SpeechModelState(model: model)
            var step = 0
            var largest: Float = 0
            for index in 0..<vectors.frames {
                let features = Self.frame(rows[(index * width)..<((index + 1) * width)])
                guard let answer = model.push(features, state: &state) else { continue }
                for k in 0..<4 { largest = max(largest, abs(answer.probabilities[k] - expected[4 * step + k])) }
                step += 1
            }
            #expect(step == vectors.frames / model.weights.stride)
            #expect(largest <= 1e-4, "largest difference \(largest)")
        }
    }

    @Test func theShippedModelIsDescribed() {
        let weights = SpeechModelWeights.shipped
        #expect(weights.corpus.hasPrefix("sha256:"))
        #expect(weights.metrics.contains("music->speech"))
        #expect(weights.hidden % 16 == 0)
    }

    /// A step's answer is a distribution, and a step comes every `stride` frames.
    @Test func answersEveryStrideFramesWithADistribution() {
        let model = SpeechModel(weights: .shipped)
        var state = SpeechModelState(model: model)
        var random = SeededGenerator(seed: 3)
        var answers = 0
        for index in 0..<(10 * model.weights.stride) {
            var features = FrameFeatures()
            for band in 0..<16 {
                features.bandEnergyDB[band] = -40 + 20 * random.nextSignedUnit()
                features.bandSNR[band] = 15 + 15 * random.nextSignedUnit()
            }
            if let answer = model.push(features, state: &state) {
                answers += 1
                #expect((index + 1) % model.weights.stride == 0)
                #expect(abs(answer.probabilities.sum() - 1) < 1e-5)
                #expect(answer.probabilities.min() >= 0)
            }
        }
        #expect(answers == 10)
    }

    @Test func pushAllocatesNothing() {
        let model = SpeechModel(weights: .shipped)
        var state = SpeechModelState(model: model)
        var features = FrameFeatures()
        features.bandEnergyDB = SIMD16(repeating: -40)
        // Warm-up: two whole steps (the first use of a generic type's metadata allocates, once).
        for _ in 0..<(2 * model.weights.stride) { _ = model.push(features, state: &state) }
        var answers = 0
        let before = allocation_counter_current_thread()
        for _ in 0..<(4 * model.weights.stride) {
            if model.push(features, state: &state) != nil { answers += 1 }
        }
        let after = allocation_counter_current_thread()
        #expect(after - before == 0)
        #expect(answers == 4)
    }

    /// With the model on, the engine's tick still allocates nothing once warm, and the model answers.
    @Test func anEngineWithTheModelAllocatesNothingPerTick() throws {
        var configuration = EngineConfiguration()
        configuration.vad.speechModel = true
        let engine = try Engine(configuration: configuration)
        let room = engine.addRoom(name: "r")
        let voices = (0..<3).map { Synthesis.voice(seconds: 3, f0: 110 + 50 * Double($0), levelDBFS: -25, seed: UInt64($0)) }
        let ids = (0..<3).map { engine.addStream(name: "s\($0)", room: room) }
        var allocations = 0
        func run(_ frames: Range<Int>) {
            for frame in frames {
                for index in voices.indices {
                    voices[index].withUnsafeBufferPointer { samples in
                        let hop = UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160])
                        let before = allocation_counter_current_thread()
                        engine.submit(hop, to: ids[index])
                        allocations += allocation_counter_current_thread() - before
                    }
                }
                let before = allocation_counter_current_thread()
                engine.tick()
                engine.consumeEvents { _ in }
                allocations += allocation_counter_current_thread() - before
            }
        }
        run(0..<20)
        allocations = 0
        run(20..<290)
        #expect(allocations == 0)
        #expect(engine.soundClasses(of: ids[0]) != SoundClasses())
    }

    /// The vector exponential against Foundation's, from the underflow clamp to the overflow clamp.
    @Test func exponentialIsAccurate() {
        var largest: Double = 0
        var x: Float = -87
        while x <= 88 {
            var lanes = SIMD16<Float>()
            for lane in 0..<16 { lanes[lane] = x + Float(lane) * 0.0137 }
            let result = FastMath.exp(lanes)
            for lane in 0..<16 where lanes[lane] <= 88 {
                let exact = Foundation.exp(Double(lanes[lane]))
                largest = max(largest, abs(Double(result[lane]) - exact) / exact)
            }
            x += 0.219
        }
        #expect(largest < 3e-7, "largest relative error \(largest)")
        // Beyond the clamps: finite and ordered.
        let extremes = FastMath.exp(SIMD16(repeating: -1000))
        #expect(extremes[0] >= 0 && extremes[0] < 1e-37)
        #expect(FastMath.exp(SIMD16(repeating: 1000))[0].isFinite)
    }

    @Test func columnsAreNamedAndReadBack() {
        #expect(FrameFeatures.columns.count == FrameFeatures.columnCount)
        var features = FrameFeatures()
        features.bandEnergyDB[3] = -33
        features.bandSNR[5] = 12
        features.periodicity = 0.7
        features.centroidHz = 1500
        var row = [Float]()
        features.appendColumns(to: &row)
        #expect(row.count == FrameFeatures.columnCount)
        #expect(row[3] == -33 && row[21] == 12 && row[39] == 0.7 && row[37] == 1.5)
        let back = Self.frame(row[...])
        #expect(back.bandEnergyDB == features.bandEnergyDB && back.bandSNR == features.bandSNR)
    }
}

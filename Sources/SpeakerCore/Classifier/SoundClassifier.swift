import Foundation

/// What a stream's recent sound is, as probabilities that add up to 1.
public struct SoundClasses: Sendable, Equatable {
    /// Probabilities of none (steady background only), speech, music and other sound, in that order.
    public var probabilities: SIMD4<Float>

    public init(probabilities: SIMD4<Float> = SIMD4(1, 0, 0, 0)) {
        self.probabilities = probabilities
    }

    /// Probability that the sound is speech (alone or over music or noise), 0…1.
    public var speech: Float { probabilities[1] }
    /// Probability that it is music without speech, 0…1.
    public var music: Float { probabilities[2] }
    /// Probability that it is another sound without speech (a knock, a dog, a door), 0…1.
    public var sound: Float { probabilities[3] }
    /// Probability that it is only the steady background, 0…1.
    public var none: Float { probabilities[0] }
    /// The class names, in the order of `probabilities`.
    public static let names = ["none", "speech", "music", "sound"]
}

/// A trained sound classifier as shipped: its shape, provenance and weights.
public struct SoundClassifierModel: Sendable {
    /// Bumped whenever the input layout or the architecture changes.
    public let version: Int
    /// Units per layer, input first: `[64, 32, 16, 4]`.
    public let layers: [Int]
    /// Hash of the corpus manifest and labels the model was trained on.
    public let corpus: String
    /// The dev-set figures the training script printed for it.
    public let metrics: String
    let parameters: [Float]

    init(version: Int, layers: [Int], corpus: String, metrics: String, weights: Int, base64: String) {
        self.version = version
        self.layers = layers
        self.corpus = corpus
        self.metrics = metrics
        guard let decoded = [Float](littleEndianBase64: base64), decoded.count == weights else {
            preconditionFailure("SoundClassifierModel: the shipped weights do not decode to \(weights) floats")
        }
        parameters = decoded
    }
}

extension Array where Element == Float {
    /// The float32 values of shipped weights: base64 of little-endian floats, line breaks and spaces
    /// skipped; nil if it is not base64 or not a whole number of floats.
    init?(littleEndianBase64 base64: String) {
        guard let data = Data(base64Encoded: base64, options: .ignoreUnknownCharacters), data.count % 4 == 0 else {
            return nil
        }
        self = data.withUnsafeBytes { raw in
            (0..<data.count / 4).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
        }
    }
}

extension SoundClasses {
    /// The softmax of four logits (none, speech, music, sound), shifted by the largest so no exponential
    /// overflows.
    init(logits: SIMD4<Float>) {
        let top = logits.max()
        var e = SIMD4<Float>()
        for k in 0..<4 { e[k] = expf(logits[k] - top) }
        self.init(probabilities: e / e.sum())
    }
}

/// The sound classifier: a multilayer perceptron 64 → 32 → 16 → 4 (ReLU, softmax) over a stream's
/// `SoundContext`, trained by `tools/corpus/train_classifier.py` on real speech, music and sounds.
///
/// Shared, immutable: one instance serves every worker.
/// Real-time safe: `classify` allocates nothing, takes no lock and cannot fail.
public final class SoundClassifier: Sendable {
    /// The model the engine ships.
    public static let shipped = SoundClassifier(model: .shipped)

    public let model: SoundClassifierModel
    /// Input-major first layer: 32 weights (two SIMD16) per input, then the bias.
    private let w1: [Float]
    private let b1: [Float]
    /// 16 weights per hidden unit of the first layer.
    private let w2: [Float]
    private let b2: [Float]
    /// 4 weights per hidden unit of the second layer.
    private let w3: [Float]
    private let b3: [Float]
    /// For each group of 16 inputs (see `SoundContext.Input`), whether any first-layer weight reads it:
    /// a model trained without a group (`train_classifier.py --drop`) skips its work.
    private let groupIsRead: [Bool]

    /// - Precondition: the model has the shape this code runs: `[64, 32, 16, 4]`.
    public init(model: SoundClassifierModel) {
        precondition(model.layers == [SoundContext.inputCount, 32, 16, 4], "unsupported classifier shape \(model.layers)")
        self.model = model
        var offset = 0
        func take(_ count: Int) -> [Float] {
            defer { offset += count }
            return Array(model.parameters[offset..<offset + count])
        }
        w1 = take(64 * 32)
        b1 = take(32)
        w2 = take(32 * 16)
        b2 = take(16)
        w3 = take(16 * 4)
        b3 = take(4)
        precondition(offset == model.parameters.count, "classifier weights: \(model.parameters.count) floats, expected \(offset)")
        // W1 comes first in the parameters: 32 weights per input, 16 inputs per group.
        groupIsRead = (0..<4).map { group in
            model.parameters[(group * 16 * 32)..<((group + 1) * 16 * 32)].contains { $0 != 0 }
        }
    }

    /// The class probabilities for one context.
    /// - Complexity: 2,624 multiply-adds, in SIMD16 and SIMD4 steps.
    public func classify(_ input: SoundContext.Input) -> SoundClasses {
        var x = input
        var h1a = SIMD16<Float>(), h1b = SIMD16<Float>()
        withUnsafeBytes(of: &x) { xBytes in
            w1.withUnsafeBytes { w in
                let xs = xBytes.bindMemory(to: Float.self)
                var a0 = SIMD16<Float>(), b0 = SIMD16<Float>(), a1 = SIMD16<Float>(), b1v = SIMD16<Float>()
                var i = 0
                // Two inputs per step, into two pairs of accumulators, so the additions pipeline.
                while i < SoundContext.inputCount {
                    if i & 15 == 0 && !groupIsRead[i >> 4] {
                        i += 16
                        continue
                    }
                    let u = xs[i], v = xs[i + 1]
                    a0 += w.loadUnaligned(fromByteOffset: (i * 32) * 4, as: SIMD16<Float>.self) * u
                    b0 += w.loadUnaligned(fromByteOffset: (i * 32 + 16) * 4, as: SIMD16<Float>.self) * u
                    a1 += w.loadUnaligned(fromByteOffset: ((i + 1) * 32) * 4, as: SIMD16<Float>.self) * v
                    b1v += w.loadUnaligned(fromByteOffset: ((i + 1) * 32 + 16) * 4, as: SIMD16<Float>.self) * v
                    i += 2
                }
                h1a = a0 + a1
                h1b = b0 + b1v
            }
        }
        b1.withUnsafeBytes { b in
            h1a += b.loadUnaligned(fromByteOffset: 0, as: SIMD16<Float>.self)
            h1b += b.loadUnaligned(fromByteOffset: 64, as: SIMD16<Float>.self)
        }
        var hidden = (h1a.lanewiseMax(SIMD16()), h1b.lanewiseMax(SIMD16()))
        var h2 = SIMD16<Float>()
        withUnsafeBytes(of: &hidden) { hBytes in
            w2.withUnsafeBytes { w in
                let hs = hBytes.bindMemory(to: Float.self)
                var a = SIMD16<Float>(), c = SIMD16<Float>()
                var j = 0
                while j < 32 {
                    a += w.loadUnaligned(fromByteOffset: (j * 16) * 4, as: SIMD16<Float>.self) * hs[j]
                    c += w.loadUnaligned(fromByteOffset: ((j + 1) * 16) * 4, as: SIMD16<Float>.self) * hs[j + 1]
                    j += 2
                }
                h2 = a + c
            }
        }
        b2.withUnsafeBytes { b in h2 += b.loadUnaligned(fromByteOffset: 0, as: SIMD16<Float>.self) }
        var second = h2.lanewiseMax(SIMD16())
        var logits = SIMD4<Float>()
        withUnsafeBytes(of: &second) { hBytes in
            w3.withUnsafeBytes { w in
                let hs = hBytes.bindMemory(to: Float.self)
                var j = 0
                while j < 16 {
                    logits += w.loadUnaligned(fromByteOffset: (j * 4) * 4, as: SIMD4<Float>.self) * hs[j]
                    j += 1
                }
            }
        }
        b3.withUnsafeBytes { b in logits += b.loadUnaligned(fromByteOffset: 0, as: SIMD4<Float>.self) }
        return SoundClasses(logits: logits)
    }
}

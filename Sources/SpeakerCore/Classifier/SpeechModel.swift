import Foundation

/// A trained speech model as shipped: its shape, provenance and weights (see `SpeechModel`).
public struct SpeechModelWeights: Sendable {
    /// Bumped whenever the input layout or the architecture changes.
    public let version: Int
    /// The columns of `FrameFeatures.columns` the model reads from each frame, in order.
    public let columns: [Int]
    /// Frames per model step: each step reads the last `stride` frames' columns, oldest first.
    public let stride: Int
    /// Units of the recurrent layer; a multiple of 16.
    public let hidden: Int
    /// Hash of the corpus manifest and teacher labels the model was trained on.
    public let corpus: String
    /// The dev-set figures the training script printed for it.
    public let metrics: String
    let parameters: [Float]

    /// Inputs per step: `columns.count × stride`.
    public var inputCount: Int { columns.count * stride }

    /// Floats in the parameters of a model of this shape (see `SpeechModel` for their layout).
    static func parameterCount(inputs: Int, hidden: Int) -> Int {
        3 * hidden * inputs + 3 * hidden + 3 * hidden * hidden + hidden + 4 * hidden + 4
    }

    init(version: Int, columns: [Int], stride: Int, hidden: Int, corpus: String, metrics: String, base64: String) {
        precondition(hidden > 0 && hidden % 16 == 0, "SpeechModelWeights: hidden units \(hidden) are not a multiple of 16")
        precondition(stride >= 1 && !columns.isEmpty && columns.allSatisfy { $0 >= 0 && $0 < FrameFeatures.columnCount })
        self.version = version
        self.columns = columns
        self.stride = stride
        self.hidden = hidden
        self.corpus = corpus
        self.metrics = metrics
        let count = Self.parameterCount(inputs: columns.count * stride, hidden: hidden)
        guard let decoded = [Float](littleEndianBase64: base64), decoded.count == count else {
            preconditionFailure("SpeechModelWeights: the weights do not decode to \(count) floats")
        }
        parameters = decoded
    }
}

/// One stream's state in the speech model: the recurrent layer's units, the frames of the step being
/// gathered, and scratch space. Made once per stream (it allocates); stepping it allocates nothing.
public struct SpeechModelState: Sendable {
    /// The recurrent layer's output after the last step.
    var hidden: [Float]
    /// The current step's inputs, `stride` frames of `columns`, filled frame by frame.
    var pending: [Float]
    /// Frames in `pending`.
    var gathered = 0
    /// Scratch: the input's and the hidden state's contributions to the three gates.
    var fromInput: [Float]
    var fromHidden: [Float]

    /// A stream that has heard nothing yet.
    public init(model: SpeechModel) {
        hidden = [Float](repeating: 0, count: model.hidden)
        pending = [Float](repeating: 0, count: model.inputCount)
        fromInput = [Float](repeating: 0, count: 3 * model.hidden)
        fromHidden = [Float](repeating: 0, count: 3 * model.hidden)
    }
}

/// The learned speech model: a one-layer gated recurrent network (GRU) over each frame's own
/// features, trained by `tools/corpus/train_speech_model.py` to follow a teacher (Silero VAD on clean speech
/// clips) and the corpus's references (music, sounds, nothing). Every `stride` frames it reads the
/// frames' chosen `FrameFeatures` columns and says what the stream's sound is (`SoundClasses`).
///
/// One step, with x the inputs (standardisation folded into the weights) and h the units:
///   r = σ(Wr·x + Ur·h + br),  z = σ(Wz·x + Uz·h + bz),
///   n = tanh(Wn·x + bn + r ⊙ (Un·h + bhn)),  h ← (1 − z) ⊙ n + z ⊙ h,
///   P = softmax(Wo·h + bo)  over none, speech, music, sound.
///
/// Parameters, float32: Wx (3H gates × D inputs) stored in 16-unit blocks, each block input by input;
/// the gate biases (3H: br, bz, bn, the hidden biases of r and z already added); bhn (H); U (3H × H)
/// in 16-unit blocks, hidden unit by unit; Wo (H × 4, unit by unit); bo (4).
///
/// Shared, immutable: one instance serves every worker. Real-time safe: `push` allocates nothing,
/// takes no lock and cannot fail.
public final class SpeechModel: Sendable {
    /// The model the engine ships.
    public static let shipped = SpeechModel(weights: .shipped)

    public let weights: SpeechModelWeights
    /// Units of the recurrent layer (H).
    public var hidden: Int { weights.hidden }
    /// Inputs per step (D).
    public var inputCount: Int { weights.inputCount }
    private let inputWeights: [Float]
    private let gateBias: [Float]
    private let hiddenBiasN: [Float]
    private let hiddenWeights: [Float]
    private let outputWeights: [Float]
    private let outputBias: SIMD4<Float>

    public init(weights: SpeechModelWeights) {
        self.weights = weights
        let d = weights.inputCount, h = weights.hidden
        var offset = 0
        func take(_ count: Int) -> [Float] {
            defer { offset += count }
            return Array(weights.parameters[offset..<offset + count])
        }
        inputWeights = take(3 * h * d)
        gateBias = take(3 * h)
        hiddenBiasN = take(h)
        hiddenWeights = take(3 * h * h)
        outputWeights = take(4 * h)
        let bias = take(4)
        outputBias = SIMD4(bias[0], bias[1], bias[2], bias[3])
        precondition(offset == weights.parameters.count)
    }

    /// Gives the model one frame; returns what the stream's sound is when the frame completes a step,
    /// nil otherwise.
    /// - Complexity: O(stride × columns) per frame; a step 3H × (D + H) + 4H multiply-adds, in SIMD16 steps.
    public func push(_ features: FrameFeatures, state: inout SpeechModelState) -> SoundClasses? {
        let count = weights.columns.count
        let base = state.gathered * count
        weights.columns.withUnsafeBufferPointer { columns in
            state.pending.withUnsafeMutableBufferPointer { pending in
                for position in 0..<count { pending[base + position] = features.column(columns[position]) }
            }
        }
        state.gathered += 1
        guard state.gathered == weights.stride else { return nil }
        state.gathered = 0
        return step(state: &state)
    }

    /// One step on `state.pending`.
    func step(state: inout SpeechModelState) -> SoundClasses {
        let d = inputCount, h = hidden, blocks = 3 * h / 16
        state.pending.withUnsafeBufferPointer { x in
            state.hidden.withUnsafeBufferPointer { units in
                state.fromInput.withUnsafeMutableBufferPointer { fromInput in
                    state.fromHidden.withUnsafeMutableBufferPointer { fromHidden in
                        inputWeights.withUnsafeBufferPointer { w in
                            gateBias.withUnsafeBufferPointer { bias in
                                Self.multiply(w.baseAddress!, x.baseAddress!, inputs: d, blocks: blocks, bias: bias.baseAddress, into: fromInput.baseAddress!)
                            }
                        }
                        hiddenWeights.withUnsafeBufferPointer { u in
                            Self.multiply(u.baseAddress!, units.baseAddress!, inputs: h, blocks: blocks, bias: nil, into: fromHidden.baseAddress!)
                        }
                    }
                }
            }
        }
        var logits = outputBias
        state.hidden.withUnsafeMutableBufferPointer { units in
            state.fromInput.withUnsafeBufferPointer { gx in
                state.fromHidden.withUnsafeBufferPointer { gh in
                    hiddenBiasN.withUnsafeBufferPointer { bhn in
                        outputWeights.withUnsafeBufferPointer { wo in
                            var k = 0
                            while k < h {
                                let r = Self.sigmoid(gx.load16(k) + gh.load16(k))
                                let z = Self.sigmoid(gx.load16(h + k) + gh.load16(h + k))
                                let n = Self.tanh(gx.load16(2 * h + k) + r * (gh.load16(2 * h + k) + bhn.load16(k)))
                                let old = units.load16(k)
                                let new = (SIMD16(repeating: 1) - z) * n + z * old
                                units.store16(new, at: k)
                                for lane in 0..<16 {
                                    logits += wo.load4(4 * (k + lane)) * new[lane]
                                }
                                k += 16
                            }
                        }
                    }
                }
            }
        }
        return SoundClasses(logits: logits)
    }

    /// out[b·16 ..< b·16+16] = Σᵢ W[b][i] · x[i] (+ bias), for `blocks` blocks of 16 outputs.
    private static func multiply(
        _ w: UnsafePointer<Float>, _ x: UnsafePointer<Float>, inputs: Int, blocks: Int, bias: UnsafePointer<Float>?,
        into out: UnsafeMutablePointer<Float>
    ) {
        let raw = UnsafeRawPointer(w)
        for block in 0..<blocks {
            let start = block * inputs * 16
            // Two accumulators, so the additions pipeline.
            var a = SIMD16<Float>(), b = SIMD16<Float>()
            var i = 0
            while i + 2 <= inputs {
                a += raw.loadUnaligned(fromByteOffset: (start + i * 16) * 4, as: SIMD16<Float>.self) * x[i]
                b += raw.loadUnaligned(fromByteOffset: (start + (i + 1) * 16) * 4, as: SIMD16<Float>.self) * x[i + 1]
                i += 2
            }
            if i < inputs { a += raw.loadUnaligned(fromByteOffset: (start + i * 16) * 4, as: SIMD16<Float>.self) * x[i] }
            var sum = a + b
            if let bias { sum += UnsafeRawPointer(bias).loadUnaligned(fromByteOffset: block * 64, as: SIMD16<Float>.self) }
            UnsafeMutableRawPointer(out).storeBytes(of: sum, toByteOffset: block * 64, as: SIMD16<Float>.self)
        }
    }

    /// The logistic function per lane, 1 ÷ (1 + e^−x); error below 1e-6.
    @inline(__always)
    static func sigmoid(_ x: SIMD16<Float>) -> SIMD16<Float> {
        SIMD16(repeating: 1) / (SIMD16(repeating: 1) + FastMath.exp(-x))
    }

    /// tanh per lane, as 2·σ(2x) − 1; error below 2e-6.
    @inline(__always)
    static func tanh(_ x: SIMD16<Float>) -> SIMD16<Float> {
        SIMD16(repeating: 2) * sigmoid(x + x) - SIMD16(repeating: 1)
    }
}

extension FastMath {
    /// `e^x` per lane; lanes are clamped to −87…88 (results 1.6e-38 … 1.7e38), relative error below 3e-7.
    ///
    /// e^x = 2^k · e^f with k the integer nearest x·log2(e) and f = x − k·ln 2 (|f| ≤ 0.347), computed
    /// with ln 2 split in two (Cody and Waite) so that f keeps its accuracy when k is large; 2^k from
    /// the IEEE-754 exponent bits, e^f by its degree-6 Taylor polynomial (remainder below 1.2e-7).
    @inlinable
    public static func exp(_ x: SIMD16<Float>) -> SIMD16<Float> {
        let clamped = x.lanewiseMax(SIMD16(repeating: -87)).lanewiseMin(SIMD16(repeating: 88))
        // Adding 1.5·2^23 rounds to an integer (ties to even) and leaves it in the low mantissa bits.
        let magic = SIMD16<Float>(repeating: 12_582_912)
        let shifted = clamped * SIMD16(repeating: 1.442_695_04) + magic
        let k = shifted - magic
        let f = clamped - k * SIMD16(repeating: 0.693_145_751_953_125) - k * SIMD16(repeating: 1.428_606_765_330_187e-6)
        var p = SIMD16<Float>(repeating: 1.0 / 720)
        p = p * f + SIMD16(repeating: 1.0 / 120)
        p = p * f + SIMD16(repeating: 1.0 / 24)
        p = p * f + SIMD16(repeating: 1.0 / 6)
        p = p * f + SIMD16(repeating: 0.5)
        p = p * f + SIMD16(repeating: 1)
        p = p * f + SIMD16(repeating: 1)
        let integer = unsafeBitCast(shifted, to: SIMD16<Int32>.self) &- unsafeBitCast(magic, to: SIMD16<Int32>.self)
        let scale = unsafeBitCast((integer &+ 127) &<< 23, to: SIMD16<Float>.self)
        return p * scale
    }
}

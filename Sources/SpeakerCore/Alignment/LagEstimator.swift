/// Measures how much later one stream carries a sound than another, from their energy envelopes.
///
/// A voice heard by two microphones gives both streams the same rise and fall of speech-band energy,
/// each at its own delay. The estimator takes the reference stream's envelope over `window` frames
/// ending `maxLag` frames ago and slides the other stream's envelope over it, from `maxLag` frames
/// earlier to `maxLag` later; the lag with the highest Pearson correlation is the other stream's delay
/// behind the reference (negative when it is ahead), refined between frames by a parabola through the
/// peak and its neighbours. The answer is trusted only when that correlation is high and clearly above
/// the best one at least 50 ms away.
///
/// Owns its scratch (allocated once); `estimate` allocates nothing.
/// - Complexity: O(window · maxLag) multiply-adds per estimate, in SIMD8 lanes: every second lag of
///   ±30 frames and the best one's neighbours over 128 frames is 4,224, about 530 vector operations.
struct LagEstimator: ~Copyable {
    /// A trusted measurement.
    struct Estimate: Equatable {
        /// Frames by which the other stream is later than the reference (negative: earlier).
        var lag: Float
        /// Envelope correlation at that lag, 0…1.
        var correlation: Float
        /// How much louder the reference's envelope is than the other's over the compared frames, dB:
        /// the difference of their means over the frames where either stands above −100 dBFS. The
        /// louder stream carries the voice as spoken, the quieter a leaked copy.
        var referenceLouder: Float
    }

    /// The largest lag measured, frames.
    let maxLag: Int
    /// Frames of envelope compared, a multiple of 8.
    let window: Int
    /// The reference's window, its mean removed.
    private let reference: UnsafeMutablePointer<Float>
    /// The other stream's span: `window + 2·maxLag` frames.
    private let other: UnsafeMutablePointer<Float>
    /// Correlation per lag, `2·maxLag + 1` values (index `maxLag` is lag 0); −1 where not computed.
    let correlations: UnsafeMutablePointer<Float>
    /// The reference window's and the other span's spectral shapes (`prepareShapes`).
    private let referenceShapes: UnsafeMutablePointer<SpectralShape>
    private let otherShapes: UnsafeMutablePointer<SpectralShape>
    /// Running sums of the other span and of its squares (`span + 1` values each).
    private let sums: UnsafeMutablePointer<Double>
    private let squareSums: UnsafeMutablePointer<Double>

    /// Frames of history each stream needs recorded.
    var historyFrames: Int { window + 2 * maxLag }

    /// Lags compared at or beyond this distance from the best count as "elsewhere" (50 ms).
    static let distinctSpan = 5

    /// - Precondition: `window > 0`, a multiple of 8; `maxLag ≥ 0`.
    init(maxLag: Int, window: Int) {
        precondition(window > 0 && window % 8 == 0 && maxLag >= 0, "window a positive multiple of 8")
        self.maxLag = maxLag
        self.window = window
        let span = window + 2 * maxLag
        reference = .allocate(capacity: window)
        reference.initialize(repeating: 0, count: window)
        other = .allocate(capacity: span)
        other.initialize(repeating: 0, count: span)
        correlations = .allocate(capacity: 2 * maxLag + 1)
        correlations.initialize(repeating: 0, count: 2 * maxLag + 1)
        sums = .allocate(capacity: span + 1)
        sums.initialize(repeating: 0, count: span + 1)
        squareSums = .allocate(capacity: span + 1)
        squareSums.initialize(repeating: 0, count: span + 1)
        referenceShapes = .allocate(capacity: window)
        referenceShapes.initialize(repeating: SpectralShape(), count: window)
        otherShapes = .allocate(capacity: span)
        otherShapes.initialize(repeating: SpectralShape(), count: span)
    }

    deinit {
        reference.deallocate()
        other.deallocate()
        correlations.deallocate()
        sums.deallocate()
        squareSums.deallocate()
        referenceShapes.deallocate()
        otherShapes.deallocate()
    }

    /// Measures the other stream's lag behind the reference over their newest `historyFrames` frames.
    /// - Returns: The lag, or nil when either envelope is flat or the correlation is not clear:
    ///   below `minimumCorrelation`, or less than `distinctness` above the best lag `distinctSpan`
    ///   frames or more away.
    /// - Precondition: both histories hold at least `historyFrames` frames, within their capacity.
    mutating func estimate(
        reference referenceHistory: borrowing EvidenceHistory, other otherHistory: borrowing EvidenceHistory,
        minimumCorrelation: Float, distinctness: Float
    ) -> Estimate? {
        referenceHistory.copyExcess(endingDelay: maxLag, length: window, to: reference)
        otherHistory.copyExcess(endingDelay: 0, length: window + 2 * maxLag, to: other)
        guard computeCorrelations() else { return nil }
        guard
            var estimate = Self.peak(
                correlations: UnsafeBufferPointer(start: correlations, count: 2 * maxLag + 1),
                minimumCorrelation: minimumCorrelation, distinctness: distinctness)
        else { return nil }
        // The loudness difference over the frames lined up at the lag (copied again: the scratch holds
        // centred values now).
        let start = maxLag + Int(estimate.lag.rounded())
        referenceHistory.copyExcess(endingDelay: maxLag, length: window, to: reference)
        otherHistory.copyExcess(endingDelay: 2 * maxLag - start, length: window, to: other)
        var difference: Float = 0
        var counted = 0
        var k = 0
        while k < window {
            let x = reference[k], y = other[k]
            if x > -100 || y > -100 {
                difference += max(x, -100) - max(y, -100)
                counted += 1
            }
            k += 1
        }
        estimate.referenceLouder = counted > 0 ? difference / Float(counted) : 0
        return estimate
    }

    /// Copies the two streams' spectral shapes and envelopes over the spans `estimate` compares, for
    /// `shapeCorrelation(lag:gate:)`. Overwrites the envelope scratch: call after `estimate`.
    /// - Precondition: both histories hold `historyFrames` frames.
    mutating func prepareShapes(reference referenceHistory: borrowing EvidenceHistory, other otherHistory: borrowing EvidenceHistory) {
        let span = window + 2 * maxLag
        referenceHistory.copyExcess(endingDelay: maxLag, length: window, to: reference)
        referenceHistory.copyShapes(endingDelay: maxLag, length: window, to: referenceShapes)
        otherHistory.copyExcess(endingDelay: 0, length: span, to: other)
        otherHistory.copyShapes(endingDelay: 0, length: span, to: otherShapes)
    }

    /// How alike the two streams' spectral shapes are with the other stream `lag` frames later than the
    /// reference (`SpectralShape`: a frame's band energies less their mean), over the reference's window of
    /// `estimate`, as copied by `prepareShapes`: the Pearson correlation of the shapes, each band centred
    /// on its mean, over the frames where both streams stand within `gate` dB of their loudest in the
    /// compared windows (the voice, not the noise between its syllables). A voice heard by both
    /// microphones gives them the same shapes at its lag, whatever gain a noise suppressor applied to
    /// each frame; two voices, or one voice at a chance lag, do not.
    /// - Returns: The correlation, −1…1, or nil when fewer than `minimumFrames` frames qualify.
    /// - Precondition: `|lag| ≤ maxLag`.
    /// - Complexity: O(window) SIMD16 operations.
    func shapeCorrelation(lag: Int, gate: Float, minimumFrames: Int = 12) -> Float? {
        precondition(abs(lag) <= maxLag, "lag within ±maxLag")
        let start = maxLag + lag
        var referenceLoudest: Float = -.infinity, otherLoudest: Float = -.infinity
        var k = 0
        while k < window {
            referenceLoudest = max(referenceLoudest, reference[k])
            otherLoudest = max(otherLoudest, other[start + k])
            k += 1
        }
        let referenceGate = max(referenceLoudest - gate, Levels.floorDBFS + 1)
        let otherGate = max(otherLoudest - gate, Levels.floorDBFS + 1)
        var sumX = SIMD16<Float>(), sumY = SIMD16<Float>()
        var sumXX = SIMD16<Float>(), sumYY = SIMD16<Float>(), sumXY = SIMD16<Float>()
        var frames = 0
        k = 0
        while k < window {
            if reference[k] >= referenceGate && other[start + k] >= otherGate {
                let x = referenceShapes[k].decibels, y = otherShapes[start + k].decibels
                sumX += x
                sumY += y
                sumXX += x * x
                sumYY += y * y
                sumXY += x * y
                frames += 1
            }
            k += 1
        }
        guard frames >= minimumFrames else { return nil }
        let n = Float(frames)
        let covariance = (sumXY - sumX * sumY / n).sum()
        let varianceX = (sumXX - sumX * sumX / n).sum()
        let varianceY = (sumYY - sumY * sumY / n).sum()
        guard varianceX > 0, varianceY > 0 else { return nil }
        return covariance / (varianceX * varianceY).squareRoot()
    }

    /// Fills `correlations` from the copied windows. False when the reference is flat.
    private mutating func computeCorrelations() -> Bool {
        let span = window + 2 * maxLag
        // The reference without its mean: then Σ x'·(y − ȳ) = Σ x'·y for any window of y.
        var sum: Float = 0
        var k = 0
        while k < window {
            sum += reference[k]
            k += 1
        }
        let mean = sum / Float(window)
        var sxx: Float = 0
        k = 0
        while k < window {
            let centred = reference[k] - mean
            reference[k] = centred
            sxx += centred * centred
            k += 1
        }
        // Under 0.05 dB² per frame: a flat envelope (silence, a steady hum) has no lag to find.
        guard sxx > 0.05 * Float(window) else { return false }
        // The other span less its own mean (keeps the Float products small), and its running sums.
        var otherSum: Float = 0
        k = 0
        while k < span {
            otherSum += other[k]
            k += 1
        }
        let otherMean = otherSum / Float(span)
        sums[0] = 0
        squareSums[0] = 0
        k = 0
        while k < span {
            let value = other[k] - otherMean
            other[k] = value
            sums[k + 1] = sums[k] + Double(value)
            squareSums[k + 1] = squareSums[k] + Double(value) * Double(value)
            k += 1
        }
        // Every second lag first (an envelope's correlation peak is several frames wide), then the two
        // neighbours of the best: 33 dot products instead of 61 for ±30 frames. Lags not computed read −1.
        let lags = 2 * maxLag + 1
        var lag = 0
        while lag < lags {
            correlations[lag] = lag % 2 == 0 ? correlation(at: lag, sxx: sxx) : -1
            lag += 1
        }
        var best = 0
        lag = 2
        while lag < lags {
            if correlations[lag] > correlations[best] { best = lag }
            lag += 2
        }
        if best > 0 { correlations[best - 1] = correlation(at: best - 1, sxx: sxx) }
        if best + 1 < lags { correlations[best + 1] = correlation(at: best + 1, sxx: sxx) }
        return true
    }

    /// The correlation of the reference with the other span's window starting at `lag` (an index).
    @inline(__always)
    private func correlation(at lag: Int, sxx: Float) -> Float {
        let n = Double(window)
        let sxy = Self.dot(reference, other + lag, count: window)
        let s = sums[lag + window] - sums[lag]
        let syy = squareSums[lag + window] - squareSums[lag] - s * s / n
        return syy > 0.05 * n ? sxy / (sxx * Float(syy)).squareRoot() : 0
    }

    /// Σ a[i]·b[i] over `count` values, a multiple of 8: two SIMD8 accumulators.
    @inline(__always)
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int) -> Float {
        let rawA = UnsafeRawPointer(a), rawB = UnsafeRawPointer(b)
        let stride = MemoryLayout<SIMD8<Float>>.stride
        var first = SIMD8<Float>(), second = SIMD8<Float>()
        var i = 0
        while i + 16 <= count {
            first += rawA.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                * rawB.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
            second += rawA.loadUnaligned(fromByteOffset: i * 4 + stride, as: SIMD8<Float>.self)
                * rawB.loadUnaligned(fromByteOffset: i * 4 + stride, as: SIMD8<Float>.self)
            i += 16
        }
        if i < count {
            first += rawA.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
                * rawB.loadUnaligned(fromByteOffset: i * 4, as: SIMD8<Float>.self)
        }
        return (first + second).sum()
    }

    /// The best lag of a correlation curve (index `maxLag` = lag 0), if clear.
    static func peak(
        correlations: UnsafeBufferPointer<Float>, minimumCorrelation: Float, distinctness: Float
    ) -> Estimate? {
        let maxLag = (correlations.count - 1) / 2
        var best = 0
        var index = 1
        while index < correlations.count {
            if correlations[index] > correlations[best] { best = index }
            index += 1
        }
        let peak = correlations[best]
        guard peak >= minimumCorrelation else { return nil }
        var elsewhere: Float = -1
        index = 0
        while index < correlations.count {
            if abs(index - best) >= distinctSpan { elsewhere = max(elsewhere, correlations[index]) }
            index += 1
        }
        guard peak - elsewhere >= distinctness else { return nil }
        // A peak at the edge may be the slope of one beyond the range: no lag to trust.
        guard best > 0 && best < correlations.count - 1 else { return nil }
        // A parabola through the peak and its neighbours puts the lag between frames.
        let offset = parabolicOffset(left: correlations[best - 1], peak: peak, right: correlations[best + 1])
        return Estimate(lag: Float(best - maxLag) + offset, correlation: peak, referenceLouder: 0)
    }

    /// Where the vertex of the parabola through a peak and its two neighbours (one frame either side)
    /// lies, frames from the peak, −0.5…0.5; 0 when the three do not curve down.
    static func parabolicOffset(left: Float, peak: Float, right: Float) -> Float {
        let curvature = left - 2 * peak + right
        return curvature < 0 ? max(-0.5, min(0.5, 0.5 * (left - right) / curvature)) : 0
    }
}

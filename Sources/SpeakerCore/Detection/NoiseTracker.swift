/// Tracks the noise power spectrum of one stream by minimum statistics.
///
/// Per FFT bin: the periodogram is smoothed over ≈ 30 ms, and the noise estimate is the smallest
/// smoothed value seen over the last `subwindowCount × subwindowFrames` frames (1.6 s by default),
/// times a bias factor (the minimum of a fluctuating power sits below its mean). Speech rarely fills
/// a bin for 1.6 s without a gap, so speech does not lift the floor, while a noise that grows is
/// followed within 1.6 s. Never below `minimumPower` so that digital silence has a finite SNR.
///
/// - Complexity: O(bins) per frame; O(bins × subwindows) once per subwindow.
struct NoiseTracker {
    let binCount: Int
    let smoothing: Float
    let subwindowFrames: Int
    let subwindowCount: Int
    let bias: Float
    let minimumPower: Float

    /// Smoothed periodogram per bin.
    private(set) var smoothed: [Float]
    /// Minimum of `smoothed` in the current subwindow.
    private var currentMinimum: [Float]
    /// Minimum per bin of each completed subwindow, `subwindowCount - 1` rows of `binCount`.
    private var pastMinima: [Float]
    /// Minimum over `pastMinima`.
    private var pastMinimum: [Float]
    /// The noise power estimate per bin, in the units of the spectra given to `update`.
    private(set) var noise: [Float]
    private var framesInSubwindow = 0
    private var nextRow = 0
    private var started = false

    init(binCount: Int, smoothing: Float, subwindowFrames: Int, subwindowCount: Int, bias: Float, minimumPower: Float) {
        precondition(subwindowCount >= 2 && subwindowFrames >= 1 && binCount > 0)
        self.binCount = binCount
        self.smoothing = smoothing
        self.subwindowFrames = subwindowFrames
        self.subwindowCount = subwindowCount
        self.bias = bias
        self.minimumPower = minimumPower
        smoothed = [Float](repeating: 0, count: binCount)
        currentMinimum = [Float](repeating: .greatestFiniteMagnitude, count: binCount)
        pastMinima = [Float](repeating: .greatestFiniteMagnitude, count: binCount * (subwindowCount - 1))
        pastMinimum = [Float](repeating: .greatestFiniteMagnitude, count: binCount)
        noise = [Float](repeating: minimumPower, count: binCount)
    }

    /// Forgets everything learnt.
    mutating func reset() {
        self = NoiseTracker(
            binCount: binCount, smoothing: smoothing, subwindowFrames: subwindowFrames,
            subwindowCount: subwindowCount, bias: bias, minimumPower: minimumPower)
    }

    /// Takes one frame's power spectrum and updates the noise estimate. Real-time safe.
    mutating func update(power: UnsafeBufferPointer<Float>) {
        precondition(power.count == binCount)
        let a = smoothing, b = 1 - smoothing
        let biasV = SIMD8<Float>(repeating: bias), floorV = SIMD8<Float>(repeating: minimumPower)
        let firstFrame = !started
        started = true
        smoothed.withUnsafeMutableBufferPointer { s in
            currentMinimum.withUnsafeMutableBufferPointer { cm in
                pastMinimum.withUnsafeBufferPointer { pm in
                    noise.withUnsafeMutableBufferPointer { n in
                        var k = 0
                        while k + 8 <= binCount {
                            let p = power.load8(k)
                            let sv = firstFrame ? p : s.load8(k) * SIMD8(repeating: a) + p * SIMD8(repeating: b)
                            let minimum = pointwiseMin(cm.load8(k), sv)
                            let estimate = pointwiseMax(pointwiseMin(minimum, pm.load8(k)) * biasV, floorV)
                            s.store8(sv, at: k)
                            cm.store8(minimum, at: k)
                            n.store8(estimate, at: k)
                            k += 8
                        }
                        while k < binCount {
                            s[k] = firstFrame ? power[k] : s[k] * a + power[k] * b
                            cm[k] = min(cm[k], s[k])
                            n[k] = max(min(cm[k], pm[k]) * bias, minimumPower)
                            k += 1
                        }
                    }
                }
            }
        }
        framesInSubwindow += 1
        if framesInSubwindow == subwindowFrames { closeSubwindow() }
    }

    /// Stores the finished subwindow's minima, replacing the oldest, and recomputes their minimum.
    private mutating func closeSubwindow() {
        framesInSubwindow = 0
        let rows = subwindowCount - 1
        let start = nextRow * binCount
        for k in 0..<binCount {
            pastMinima[start + k] = currentMinimum[k]
            currentMinimum[k] = .greatestFiniteMagnitude
        }
        nextRow = (nextRow + 1) % rows
        for k in 0..<binCount {
            var m = Float.greatestFiniteMagnitude
            for row in 0..<rows { m = min(m, pastMinima[row * binCount + k]) }
            pastMinimum[k] = m
        }
    }
}

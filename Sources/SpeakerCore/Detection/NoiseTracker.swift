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

    /// Forgets the minima of the past (a silence the stream has left): the estimate becomes the
    /// current smoothed spectrum times the bias, and learns from the frames that follow.
    mutating func forgetPast() {
        guard started else { return }
        for k in 0..<binCount {
            currentMinimum[k] = smoothed[k]
            pastMinimum[k] = .greatestFiniteMagnitude
            let estimate = smoothed[k] * bias
            noise[k] = estimate > minimumPower ? estimate : minimumPower
        }
        for i in pastMinima.indices { pastMinima[i] = .greatestFiniteMagnitude }
        framesInSubwindow = 0
    }

    /// Takes one frame's power spectrum and updates the noise estimate. Real-time safe.
    /// - Parameter frames: hops since the previous update (more than 1 when quiet frames were skipped),
    ///   so that the minimum-statistics window keeps its length in time.
    mutating func update(power: UnsafeBufferPointer<Float>, frames: Int = 1) {
        precondition(power.count == binCount)
        // The smoothing is per update, whatever their spacing: compounding it over skipped frames
        // (a^frames) lets the smoothed power dip lower, which lowers the minimum and costs precision.
        let a = smoothing, b = 1 - smoothing
        let firstFrame = !started
        started = true
        let bias = self.bias, floor = minimumPower
        // A plain loop over raw pointers with branch-free selects: LLVM vectorises it (minps/maxps).
        smoothed.withUnsafeMutableBufferPointer { sBuffer in
            currentMinimum.withUnsafeMutableBufferPointer { cmBuffer in
                pastMinimum.withUnsafeBufferPointer { pmBuffer in
                    noise.withUnsafeMutableBufferPointer { nBuffer in
                        let s = sBuffer.baseAddress!, cm = cmBuffer.baseAddress!, pm = pmBuffer.baseAddress!
                        let n = nBuffer.baseAddress!, p = power.baseAddress!
                        let keep: Float = firstFrame ? 0 : a, take: Float = firstFrame ? 1 : b
                        for k in 0..<binCount {
                            let sv = s[k] * keep + p[k] * take
                            s[k] = sv
                            let c = cm[k]
                            let minimum = sv < c ? sv : c
                            cm[k] = minimum
                            let past = pm[k]
                            let lowest = minimum < past ? minimum : past
                            let estimate = lowest * bias
                            n[k] = estimate > floor ? estimate : floor
                        }
                    }
                }
            }
        }
        framesInSubwindow += frames
        if framesInSubwindow >= subwindowFrames { closeSubwindow() }
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

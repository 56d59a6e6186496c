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

    /// Every per-bin row in one allocation (one header, one uniqueness check, adjacent cache lines per
    /// update), `binCount` floats each: the smoothed periodogram, the minimum of the current subwindow,
    /// the minimum over the past subwindows, the noise estimate, then the `subwindowCount − 1` past
    /// subwindows' minima (oldest replaced first).
    private var storage: [Float]
    private static let smoothedRow = 0, currentMinimumRow = 1, pastMinimumRow = 2, noiseRow = 3, pastMinimaRow = 4
    /// The rows of `storage` whose first float is at `base`, for `bins` bins.
    private static func rows(_ base: UnsafeMutablePointer<Float>, bins: Int) -> (
        smoothed: UnsafeMutablePointer<Float>, currentMinimum: UnsafeMutablePointer<Float>,
        pastMinimum: UnsafeMutablePointer<Float>, noise: UnsafeMutablePointer<Float>, pastMinima: UnsafeMutablePointer<Float>
    ) {
        (base + smoothedRow * bins, base + currentMinimumRow * bins, base + pastMinimumRow * bins,
         base + noiseRow * bins, base + pastMinimaRow * bins)
    }
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
        storage = [Float](repeating: .greatestFiniteMagnitude, count: binCount * (Self.pastMinimaRow + subwindowCount - 1))
        storage.withUnsafeMutableBufferPointer { storage in
            let rows = Self.rows(storage.baseAddress!, bins: binCount)
            rows.smoothed.update(repeating: 0, count: binCount)
            rows.noise.update(repeating: minimumPower, count: binCount)
        }
    }

    /// Calls `body` with the noise power estimate per bin, in the units of the spectra given to `update`.
    func withNoise<Result>(_ body: (UnsafeBufferPointer<Float>) throws -> Result) rethrows -> Result {
        try storage.withUnsafeBufferPointer { rows in
            try body(UnsafeBufferPointer(start: rows.baseAddress! + Self.noiseRow * binCount, count: binCount))
        }
    }

    /// Where the rows every update reads and writes start, and their size in bytes: a prefetch target,
    /// never to be dereferenced (the tracker may be moved or freed after).
    var prefetchTarget: (address: UnsafeRawPointer, bytes: Int) {
        storage.withUnsafeBufferPointer { (UnsafeRawPointer($0.baseAddress!), (Self.noiseRow + 1) * binCount * 4) }
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
        let bins = binCount, bias = self.bias, floor = minimumPower
        let pastCount = bins * (subwindowCount - 1)
        storage.withUnsafeMutableBufferPointer { storage in
            let rows = Self.rows(storage.baseAddress!, bins: bins)
            let s = rows.smoothed, cm = rows.currentMinimum, pm = rows.pastMinimum, n = rows.noise
            for k in 0..<bins {
                cm[k] = s[k]
                pm[k] = .greatestFiniteMagnitude
                let estimate = s[k] * bias
                n[k] = estimate > floor ? estimate : floor
            }
            rows.pastMinima.update(repeating: .greatestFiniteMagnitude, count: pastCount)
        }
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
        let bins = binCount
        storage.withUnsafeMutableBufferPointer { storage in
            let rows = Self.rows(storage.baseAddress!, bins: bins)
            let s = rows.smoothed, cm = rows.currentMinimum, pm = rows.pastMinimum, n = rows.noise
            let p = power.baseAddress!
            let keep: Float = firstFrame ? 0 : a, take: Float = firstFrame ? 1 : b
            for k in 0..<bins {
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
        framesInSubwindow += frames
        if framesInSubwindow >= subwindowFrames { closeSubwindow() }
    }

    /// Stores the finished subwindow's minima, replacing the oldest, and recomputes their minimum.
    private mutating func closeSubwindow() {
        framesInSubwindow = 0
        let pastRows = subwindowCount - 1, bins = binCount
        let row = nextRow
        nextRow = (nextRow + 1) % pastRows
        storage.withUnsafeMutableBufferPointer { storage in
            let rows = Self.rows(storage.baseAddress!, bins: bins)
            let cm = rows.currentMinimum, pm = rows.pastMinimum, past = rows.pastMinima
            (past + row * bins).update(from: cm, count: bins)
            cm.update(repeating: .greatestFiniteMagnitude, count: bins)
            for k in 0..<bins {
                var m = Float.greatestFiniteMagnitude
                for r in 0..<pastRows { m = min(m, past[r * bins + k]) }
                pm[k] = m
            }
        }
    }
}

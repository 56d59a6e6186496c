import Foundation

/// The spectral memory of one stream: the last 32 ms of samples, the noise tracker and the previous
/// frame's band energies. About 9 KiB.
struct SpectralState {
    /// The last `windowSize` samples, oldest first.
    var history: [Float]
    var noise: NoiseTracker
    /// Band energies of the last `fluxSpan` analysed frames, one row of `SpectralBands.count` each; the
    /// row at `oldestBandRow` is the oldest, against which the flux is measured.
    var bandHistory = BandHistory()
    var oldestBandRow = 0
    /// Analysed frames between the two spectra whose difference is the flux.
    static let fluxSpan = 3
    /// Repeats the newest band energies as this frame's (a frame the first stage carried), so that the
    /// flux keeps measuring the rise over `fluxSpan` frames (30 ms), not over `fluxSpan` analyses.
    mutating func repeatNewestBands() {
        let count = SpectralBands.count
        let oldest = oldestBandRow, newest = (oldestBandRow + Self.fluxSpan - 1) % Self.fluxSpan
        bandHistory.withUnsafeMutableFloats { base in
            (base + oldest * count).update(from: base + newest * count, count: count)
        }
        oldestBandRow = (oldestBandRow + 1) % Self.fluxSpan
    }

    /// Sums of squares of the two hops before the newest, oldest first (the window's energy is the
    /// sum of the hops it holds and its oldest `windowTail` samples).
    var previousHopEnergies: (Float, Float) = (0, 0)
    /// Samples of the window older than its last three hops.
    static let windowTail = AnalysisFormat.windowSize - 3 * AnalysisFormat.hopSize

    /// Hops seen, up to the number that fills the window.
    var hopsSeen = 0
    /// The first stage: which frames the spectral stage must analyse (see `FrameCascade`).
    var cascade: FrameCascade
    /// Frames carried by the first stage since the last analysis.
    var quietSkipped: Int { cascade.skipped }

    /// - Parameter phase: where this stream starts in the cycle of `restingInterval` (streams given
    ///   different phases analyse their resting frames on different ticks).
    init(configuration: VoiceActivityConfiguration, phase: Int = 0) {
        cascade = FrameCascade(phase: phase)
        history = [Float](repeating: 0, count: AnalysisFormat.windowSize)
        noise = NoiseTracker(
            binCount: AnalysisFormat.binCount,
            smoothing: 0.7,
            subwindowFrames: max(1, Int((configuration.noiseWindow / 4 / AnalysisFormat.hopDuration).rounded())),
            subwindowCount: 4,
            bias: configuration.noiseBias,
            minimumPower: SpectralAnalyzer.minimumBinPower)
    }
}

/// The band energies (dB) of a stream's last `SpectralState.fluxSpan` analysed frames: `fluxSpan` rows of
/// `SpectralBands.count`, stored inline in the stream's state (no heap allocation, no reference count).
struct BandHistory {
    /// Floats in all.
    static let count = SpectralState.fluxSpan * SpectralBands.count
    private var rows = (
        SIMD16<Float>(repeating: Levels.floorDBFS), SIMD16<Float>(repeating: Levels.floorDBFS),
        SIMD16<Float>(repeating: Levels.floorDBFS)
    )

    init() {
        precondition(MemoryLayout.size(ofValue: rows) == Self.count * 4, "BandHistory's rows hold fluxSpan × 16 floats")
    }

    /// Calls `body` with the first of the `count` floats, row by row.
    mutating func withUnsafeMutableFloats<Result>(_ body: (UnsafeMutablePointer<Float>) throws -> Result) rethrows -> Result {
        try withUnsafeMutableBytes(of: &rows) { try body($0.baseAddress!.assumingMemoryBound(to: Float.self)) }
    }

    /// Float `index` (row × `SpectralBands.count` + band).
    subscript(index: Int) -> Float {
        get {
            precondition(index >= 0 && index < Self.count)
            return withUnsafeBytes(of: rows) { $0.load(fromByteOffset: index * 4, as: Float.self) }
        }
        set {
            precondition(index >= 0 && index < Self.count)
            withUnsafeMutableFloats { $0[index] = newValue }
        }
    }

    /// Every float, row by row (allocates: for tests and diagnostics).
    var values: [Float] { (0..<Self.count).map { self[$0] } }
}

/// Computes `FrameFeatures` for one hop of one stream. One analyzer per worker thread: it owns the
/// FFT scratch memory; the per-stream memory lives in each stream's `SpectralState`.
///
/// Real-time safe: `analyze` allocates nothing, takes no lock and cannot fail.
final class SpectralAnalyzer {
    /// Per-bin power below which noise is not tracked: about −96 dBFS spread over all bins.
    static let minimumBinPower: Float = 1e-12
    /// Size of the inverse transform for periodicity: bins 0…128 (0–4 kHz) read as an 8 kHz spectrum.
    static let autocorrelationSize = 256
    /// Autocorrelation lags searched, in 8 kHz samples: 2.5 ms (400 Hz) to 12 ms (83 Hz).
    static let lagRange = 20...96
    /// Bins whose noise-subtracted power feeds the periodicity measure: 156 Hz – 3.97 kHz.
    static let periodicityBins = 5...127

    private let workspace: SpectralWorkspace
    private let window: [Float]
    /// 1 ÷ the normalised autocorrelation of the window at each searched lag (Boersma's correction).
    private let inverseWindowAutocorrelation: [Float]
    /// Scale from |X_k|² to a bin's share of the window's mean square (one-sided, Parseval).
    private let powerScale: Float
    private let overSubtraction: Float

    /// Power per bin of the current frame (scratch).
    @exclusivity(unchecked) private var power: [Float]  // one worker uses an analyzer at a time
    /// Power gain of a first-difference filter at each bin's frequency.
    private let differenceGain: [Float]

    init(overSubtraction: Float) {
        let n = AnalysisFormat.windowSize
        workspace = SpectralWorkspace(windowSize: n, autocorrelationSize: Self.autocorrelationSize)
        // Periodic Hann window.
        let hann = (0..<n).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(n))) }
        window = hann
        let energy = hann.reduce(0) { $0 + $1 * $1 }
        powerScale = 2 / (Float(n) * energy)
        // A lag of L samples at 8 kHz is 2L samples at 16 kHz.
        var correction = [Float](repeating: 1, count: Self.lagRange.upperBound + 1)
        for lag in Self.lagRange {
            var sum: Float = 0
            for i in 0..<(n - 2 * lag) { sum += hann[i] * hann[i + 2 * lag] }
            correction[lag] = energy / sum
        }
        inverseWindowAutocorrelation = correction
        power = [Float](repeating: 0, count: AnalysisFormat.binCount)
        differenceGain = (0..<AnalysisFormat.binCount).map { Float(2 - 2 * cos(Double.pi * Double($0) / Double(n / 2))) }
        self.overSubtraction = overSubtraction
    }

    /// Appends one hop to the stream's history and measures the frame, in two stages: the hop's
    /// time-domain features (energy, level, zero crossings, the window's energy), then, if the first
    /// stage (`state.cascade`, a `FrameCascade`) cannot decide the frame from them, the spectral stage.
    /// - Parameters:
    ///   - hop: `AnalysisFormat.hopSize` samples, full scale ±1.
    ///   - state: the stream's spectral memory, updated.
    ///   - mayRest: the stream is not inside an utterance, so the first stage may carry the frame (keep
    ///     the last analysis's spectral features); false: the spectral stage runs.
    ///   - configuration: the cascade's intervals and the voicing thresholds.
    /// - Returns: the frame's features.
    /// - Complexity: a carried frame O(hop + window) vector work; an analysed one also one 512-point
    ///   real FFT, O(bins) band and noise work and, on sounding frames, one 256-point inverse FFT.
    func analyze(
        hop: UnsafeBufferPointer<Float>, state: inout SpectralState, mayRest: Bool = false,
        configuration: VoiceActivityConfiguration = VoiceActivityConfiguration()
    ) -> FrameFeatures {
        let hopSize = AnalysisFormat.hopSize
        precondition(hop.count == hopSize, "a hop is \(hopSize) samples")
        var features = FrameFeatures()

        // Time domain: energy, level, zero crossings of the new hop.
        let hopEnergy = Kernels.sumOfSquares(hop)
        let meanSquare = hopEnergy / Float(hopSize)
        features.meanSquare = meanSquare
        features.energyDBFS = Levels.dBFS(meanSquare: meanSquare)
        features.level = Levels.rfc6464Level(meanSquare: meanSquare)
        features.zeroCrossingRate = Float(Kernels.zeroCrossings(hop)) / Float(hopSize - 1)

        // Slide the window: drop the oldest hop, append the new one.
        let n = AnalysisFormat.windowSize
        state.history.withUnsafeMutableBufferPointer { history in
            let base = history.baseAddress!
            base.update(from: base + hopSize, count: n - hopSize)
            (base + n - hopSize).update(from: hop.baseAddress!, count: hopSize)
            // The window's energy from the hops' sums: the oldest `windowTail` samples, then the last
            // three hops (the window holds 32 + 3 × 160 samples).
            let tail = Kernels.sumOfSquares(UnsafeBufferPointer(start: base, count: SpectralState.windowTail))
            let energy = tail + state.previousHopEnergies.0 + state.previousHopEnergies.1 + hopEnergy
            features.windowEnergyDBFS = Levels.dBFS(meanSquare: energy / Float(n))
        }
        state.previousHopEnergies = (state.previousHopEnergies.1, hopEnergy)
        // Until the window holds real audio throughout, the spectrum would show the edge of the
        // zeros it started with: measure nothing spectral and teach the noise tracker nothing.
        let hopsToFill = (n + hopSize - 1) / hopSize
        guard state.hopsSeen >= hopsToFill - 1 else {
            state.hopsSeen += 1
            return features
        }
        // The first stage: a frame the spectral stage need not see keeps its last analysis.
        let previous = state.history[n - hopSize - 1]
        if state.cascade.route(features, hop: hop, previous: previous, mayRest: mayRest, configuration: configuration)
            == .carry
        {
            let carried = state.cascade.carried(features)
            state.repeatNewestBands()
            return carried
        }
        return analyzeSpectrum(features, state: &state, configuration: configuration)
    }

    /// The second stage: the spectral features of the frame whose time-domain features are `features`.
    private func analyzeSpectrum(
        _ timeDomain: FrameFeatures, state: inout SpectralState, configuration: VoiceActivityConfiguration
    ) -> FrameFeatures {
        var features = timeDomain
        state.history.withUnsafeBufferPointer { history in
            window.withUnsafeBufferPointer { w in
                Kernels.multiply(history, w, into: workspace.windowed.buffer)
            }
        }
        workspace.transformWindowed()

        // Power spectrum, scaled so that the bins add up to the window's mean square.
        let bins = AnalysisFormat.binCount
        let spectrum = workspace.spectrum.pointer
        var weightedSum: Float = 0, totalPower: Float = 0
        power.withUnsafeMutableBufferPointer { p in
            // Eight complex bins per step: even lanes are real parts, odd lanes imaginary parts.
            let raw = UnsafeRawPointer(spectrum)
            let scale = SIMD8<Float>(repeating: powerScale)
            var weighted = SIMD8<Float>(), total = SIMD8<Float>()
            var index = SIMD8<Float>(0, 1, 2, 3, 4, 5, 6, 7)
            var k = 0
            while k + 8 <= bins {
                let pairs = raw.loadUnaligned(fromByteOffset: 2 * k * 4, as: SIMD16<Float>.self)
                let re = pairs.evenHalf, im = pairs.oddHalf
                let value = (re * re + im * im) * scale
                p.store8(value, at: k)
                weighted += value * index
                total += value
                index += SIMD8(repeating: 8)
                k += 8
            }
            weightedSum = weighted.sum()
            totalPower = total.sum()
            while k < bins {
                let re = spectrum[2 * k], im = spectrum[2 * k + 1]
                let value = (re * re + im * im) * powerScale
                p[k] = value
                weightedSum += value * Float(k)
                totalPower += value
                k += 1
            }
            state.noise.update(power: UnsafeBufferPointer(p), frames: state.cascade.skipped + 1)
        }
        features.centroidHz = totalPower > 0 ? weightedSum / totalPower * AnalysisFormat.binSpacing : 0

        // Band energies and their SNR against the tracked noise. Per band, in plain scalar loops over
        // float buffers (element access into SIMD16 values and SIMD16 selects cost more on baseline
        // x86-64): energy and SNR in dB; segmental SNR and excess energy over the speech bands; flux
        // (mean rise since the previous frame, all bands); flatness from the speech bands' energy per bin.
        var noiseTotal: Float = 0
        var clampedSum: Float = 0, excess: Float = 0, riseSum: Float = 0, logDensitySum: Float = 0, densitySum: Float = 0
        let decibelsPerOctave: Float = 3.010_299_956_6
        let speech = SpectralBands.speechBands
        power.withUnsafeBufferPointer { pBuffer in
            state.noise.withNoise { nBuffer in
                let p = pBuffer.baseAddress!, noise = nBuffer.baseAddress!
                // Noise power through the first-difference filter |1 − e^(−iω)|² = 2 − 2·cos ω.
                differenceGain.withUnsafeBufferPointer { gain in
                    var lanes = SIMD8<Float>()
                    var k = 0
                    while k + 8 <= bins {
                        lanes += nBuffer.load8(k) * gain.load8(k)
                        k += 8
                    }
                    noiseTotal = lanes.sum()
                    while k < bins {
                        noiseTotal += noise[k] * gain[k]
                        k += 1
                    }
                }
                withUnsafeMutableBytes(of: &features.bandEnergyDB) { dbBytes in
                    withUnsafeMutableBytes(of: &features.bandSNR) { snrBytes in
                        state.bandHistory.withUnsafeMutableFloats { history in
                            let db = dbBytes.bindMemory(to: Float.self), snr = snrBytes.bindMemory(to: Float.self)
                            // The oldest row: the frame `fluxSpan` analyses ago, replaced by this one.
                            let past = history + state.oldestBandRow * SpectralBands.count
                            SpectralBands.edges.withUnsafeBufferPointer { edges in
                                SpectralBands.inverseWidthList.withUnsafeBufferPointer { inverseWidths in
                                    for band in 0..<SpectralBands.count {
                                        let lo = edges[band], hi = edges[band + 1]
                                        var powerSum: Float = 0, noiseSum: Float = 0
                                        for k in lo..<hi {
                                            powerSum += p[k]
                                            noiseSum += noise[k]
                                        }
                                        let powerValue = max(powerSum, 1e-14), noiseValue = max(noiseSum, 1e-14)
                                        let decibels = decibelsPerOctave * FastMath.log2(powerValue)
                                        let bandSNR = max(decibels - decibelsPerOctave * FastMath.log2(noiseValue), 0)
                                        db[band] = decibels
                                        snr[band] = bandSNR
                                        riseSum += max(decibels - past[band], 0)
                                        past[band] = decibels
                                        if band >= speech.lowerBound && band < speech.upperBound {
                                            clampedSum += min(bandSNR, 30)
                                            excess += max(powerSum - noiseSum, 0)
                                            let density = powerValue * inverseWidths[band]
                                            densitySum += density
                                            logDensitySum += FastMath.log2(density)
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        state.oldestBandRow = (state.oldestBandRow + 1) % SpectralState.fluxSpan
        let count = Float(speech.count)
        features.speechBandExcessDB = Levels.dBFS(meanSquare: excess)
        features.segmentalSNR = clampedSum / count
        features.flux = riseSum / Float(SpectralBands.count)
        features.flatness = densitySum > 0 ? min(1, exp2f(logDensitySum / count) / (densitySum / count)) : 1

        // Periodicity only matters for frames that stand `voicedSNR` above the floor (no other frame
        // can be voiced, nor counts for the sustained-sound test): skip its transform elsewhere.
        if features.segmentalSNR >= configuration.voicedSNR {
            (features.periodicity, features.pitchHz) = state.noise.withNoise { periodicity(noise: $0) }
        }
        state.cascade.analysed(features, differencedNoiseDBFS: Levels.dBFS(meanSquare: noiseTotal))
        return features
    }

    /// Normalised autocorrelation peak of the noise-whitened 0.16–4 kHz power spectrum.
    ///
    /// 1. Replace each bin's power by its ratio to `overSubtraction ×` its noise estimate, floored at 1:
    ///    stationary noise and hum (already in the estimate) become a flat floor, whose autocorrelation
    ///    vanishes at the lags searched, and only what rises above the noise keeps its shape. (Plain
    ///    subtraction leaves a few random bins, whose autocorrelation looks falsely periodic.)
    /// 2. Read bins 0…128 (0–4 kHz, 31.25 Hz apart) as the spectrum of an 8 kHz signal and inverse
    ///    transform it: by Wiener–Khinchin the result is that signal's autocorrelation r(lag).
    /// 3. Divide r(lag)/r(0) by the Hann window's own normalised autocorrelation at that lag
    ///    (Boersma 1993), so a perfectly periodic signal scores ≈ 1 at its period.
    private func periodicity(noise nz: UnsafeBufferPointer<Float>) -> (Float, Float) {
        let input = workspace.autocorrelationSpectrum.pointer
        let halfPlusOne = Self.autocorrelationSize / 2 + 1
        input.initialize(repeating: 0, count: 2 * halfPlusOne)
        var excess: Float = 0
        power.withUnsafeBufferPointer { p in
            let over = SIMD8<Float>(repeating: overSubtraction), one = SIMD8<Float>(repeating: 1)
            var excessLanes = SIMD8<Float>()
            var k = Self.periodicityBins.lowerBound
            while k + 8 <= Self.periodicityBins.upperBound + 1 {
                let ratio = p.load8(k) / (over * nz.load8(k))
                let floored = ratio.lanewiseMax(one)
                excessLanes += floored - one
                for lane in 0..<8 { input[2 * (k + lane)] = floored[lane] }
                k += 8
            }
            excess = excessLanes.sum()
            while k <= Self.periodicityBins.upperBound {
                let ratio = p[k] / (overSubtraction * nz[k])
                input[2 * k] = max(ratio, 1)
                excess += max(ratio - 1, 0)
                k += 1
            }
        }
        guard excess > 0 else { return (0, 0) }
        workspace.transformAutocorrelation()
        let r = workspace.autocorrelation.pointer
        let r0 = r[0]
        guard r0 > 0 else { return (0, 0) }
        var best: Float = 0, bestLag = Self.lagRange.lowerBound
        let inverseR0 = 1 / r0
        for lag in Self.lagRange {
            let value = r[lag] * inverseR0 * inverseWindowAutocorrelation[lag]
            if value > best {
                best = value
                bestLag = lag
            }
        }
        return (min(best, 1), 8000 / Float(bestLag))
    }
}

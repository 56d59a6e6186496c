import Foundation
import TestSupport

/// Synthetic signals with known answers, and the measurements the tests make on them.
enum Signals {
    /// A sine tone; the phase is computed in Double so long tones stay pure (Float phase noise is ≈ −50 dB).
    static func tone(
        frequency: Double, sampleRate: Int, count: Int, amplitude: Double = 0.5, startingAt start: Int = 0
    ) -> [Float] {
        (0..<count).map { index in
            index < start
                ? 0 : Float(amplitude * sin(2 * Double.pi * frequency * Double(index - start) / Double(sampleRate)))
        }
    }

    /// A deterministic speech-like signal: voiced syllables (gliding 100–220 Hz harmonics shaped by two formants
    /// under raised-cosine envelopes), short noise bursts and pauses. Content stays below 4 kHz.
    static func speechLike(sampleRate: Int, seconds: Double, seed: UInt64 = 7) -> [Float] {
        var random = SeededGenerator(seed: seed)
        let count = Int(seconds * Double(sampleRate))
        var output = [Float](repeating: 0, count: count)
        var position = Int(0.05 * Double(sampleRate))
        while position < count {
            let length = Int(Double(sampleRate) * (0.12 + 0.2 * Double(random.nextSignedUnit() + 1) / 2))
            let f0Start = 100 + 60 * Double(random.nextSignedUnit() + 1)
            let f0End = f0Start * (0.8 + 0.4 * Double(random.nextSignedUnit() + 1) / 2)
            let formant1 = 500 + 300 * Double(random.nextSignedUnit() + 1) / 2
            let formant2 = 1200 + 1000 * Double(random.nextSignedUnit() + 1) / 2
            var phase = 0.0
            for offset in 0..<length where position + offset < count {
                let progress = Double(offset) / Double(length)
                let f0 = f0Start + (f0End - f0Start) * progress
                phase += 2 * Double.pi * f0 / Double(sampleRate)
                var sample = 0.0
                var harmonic = 1
                while Double(harmonic) * f0 < 3800 {
                    let frequency = Double(harmonic) * f0
                    let weight =
                        exp(-pow((frequency - formant1) / 200, 2)) + 0.5 * exp(-pow((frequency - formant2) / 300, 2))
                        + 0.05
                    sample += weight / Double(harmonic).squareRoot() * sin(Double(harmonic) * phase)
                    harmonic += 1
                }
                let envelope = 0.5 - 0.5 * cos(2 * Double.pi * progress)
                output[position + offset] += Float(0.15 * envelope * sample)
            }
            position += length
            if random.nextSignedUnit() > 0.3 {  // a fricative-like noise burst
                let burst = Int(0.04 * Double(sampleRate))
                var previous: Float = 0
                for offset in 0..<burst where position + offset < count {
                    let white = random.nextSignedUnit()
                    let highPassed = white - previous  // crude first difference: brighter noise
                    previous = white
                    let envelope = Float(sin(Double.pi * Double(offset) / Double(burst)))
                    output[position + offset] += 0.03 * envelope * highPassed
                }
                position += burst
            }
            position += Int(Double(sampleRate) * 0.1 * Double(random.nextSignedUnit() + 1))  // a pause
        }
        return output
    }

    /// Root mean square of `samples[range]`.
    static func rms(_ samples: [Float], _ range: Range<Int>? = nil) -> Double {
        let range = range ?? samples.indices
        guard !range.isEmpty else { return 0 }
        var sum = 0.0
        for index in range { sum += Double(samples[index]) * Double(samples[index]) }
        return (sum / Double(range.count)).squareRoot()
    }

    /// Level of `samples[range]` relative to `reference`, in dB.
    static func decibels(_ value: Double, relativeTo reference: Double) -> Double {
        20 * log10(max(value, 1e-30) / reference)
    }

    /// Normalised cross-correlation of `a[i]` with `b[i + lag]` over their overlap (1 = identical shape).
    static func correlation(_ a: [Float], _ b: [Float], lag: Int = 0) -> Double {
        var dot = 0.0
        var energyA = 0.0
        var energyB = 0.0
        let start = max(0, -lag)
        let end = min(a.count, b.count - lag)
        guard start < end else { return 0 }
        for index in start..<end {
            let x = Double(a[index])
            let y = Double(b[index + lag])
            dot += x * y
            energyA += x * x
            energyB += y * y
        }
        return dot / max((energyA * energyB).squareRoot(), 1e-30)
    }

    /// The lag in `-maximumLag...maximumLag` with the highest correlation of `a[i]` with `b[i + lag]`.
    static func bestLag(_ a: [Float], _ b: [Float], maximumLag: Int) -> (lag: Int, correlation: Double) {
        var best = (lag: 0, correlation: -2.0)
        for lag in -maximumLag...maximumLag {
            let value = correlation(a, b, lag: lag)
            if value > best.correlation { best = (lag, value) }
        }
        return best
    }

    /// Index of the first sample whose magnitude reaches `threshold`.
    static func onset(_ samples: [Float], threshold: Float) -> Int? {
        samples.firstIndex { abs($0) >= threshold }
    }

    /// Index of the largest magnitude.
    static func peakIndex(_ samples: [Float]) -> Int {
        samples.indices.max { abs(samples[$0]) < abs(samples[$1]) } ?? 0
    }
}

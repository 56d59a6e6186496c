import Foundation

/// Synthetic test signals with known properties, at 16 kHz unless stated.
public enum Synthesis {
    public static let sampleRate = 16_000

    /// Linear amplitude for an RMS level in dBFS (0 dBFS = mean square 1).
    public static func rms(_ dBFS: Double) -> Double { pow(10, dBFS / 20) }

    /// A speech-like voiced signal: harmonics of `f0` up to 4 kHz with a −6 dB/octave tilt,
    /// a slow ±3 % pitch glide, and a 4 Hz syllable envelope that dips to 10 % between syllables,
    /// scaled to `levelDBFS` RMS.
    public static func voice(seconds: Double, f0: Double, levelDBFS: Double, seed: UInt64 = 1) -> [Float] {
        let count = Int(seconds * Double(sampleRate))
        var generator = SeededGenerator(seed: seed)
        let syllablePhase = Double(generator.nextSignedUnit()) * Double.pi
        var phase = 0.0
        var samples = [Double](repeating: 0, count: count)
        let harmonics = max(1, Int(4000 / f0))
        for i in 0..<count {
            let t = Double(i) / Double(sampleRate)
            let pitch = f0 * (1 + 0.03 * sin(2 * Double.pi * 0.7 * t))
            phase += 2 * Double.pi * pitch / Double(sampleRate)
            var value = 0.0
            for k in 1...harmonics { value += sin(Double(k) * phase) / Double(k) }
            let syllable = 0.55 + 0.45 * sin(2 * Double.pi * 4 * t + syllablePhase)
            samples[i] = value * syllable
        }
        return scaled(samples, toDBFS: levelDBFS)
    }

    /// White Gaussian noise at `levelDBFS` RMS.
    public static func noise(seconds: Double, levelDBFS: Double, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        let amplitude = rms(levelDBFS)
        return (0..<Int(seconds * Double(sampleRate))).map { _ in Float(Double(generator.nextGaussian()) * amplitude) }
    }

    /// A sine of `frequency` Hz with peak amplitude `amplitude`.
    public static func sine(seconds: Double, frequency: Double, amplitude: Double) -> [Float] {
        (0..<Int(seconds * Double(sampleRate))).map {
            Float(amplitude * sin(2 * Double.pi * frequency * Double($0) / Double(sampleRate)))
        }
    }

    /// Keyboard-like clicks: 8 ms bursts of noise decaying with a 1.5 ms time constant, every
    /// `interval` seconds, each with peak amplitude `amplitude`.
    public static func clicks(seconds: Double, interval: Double, amplitude: Double, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        var samples = [Float](repeating: 0, count: Int(seconds * Double(sampleRate)))
        let step = Int(interval * Double(sampleRate)), burst = Int(0.008 * Double(sampleRate))
        var start = step / 2
        while start + burst < samples.count {
            for i in 0..<burst {
                let decay = exp(-Double(i) / (0.0015 * Double(sampleRate)))
                samples[start + i] = Float(Double(generator.nextSignedUnit()) * amplitude * decay)
            }
            start += step
        }
        return samples
    }

    /// Adds `signal` into `target` starting at `seconds`, growing `target` if needed.
    public static func add(_ signal: [Float], into target: inout [Float], at seconds: Double, gain: Float = 1) {
        let offset = Int(seconds * Double(sampleRate))
        if target.count < offset + signal.count {
            target += [Float](repeating: 0, count: offset + signal.count - target.count)
        }
        for i in signal.indices { target[offset + i] += signal[i] * gain }
    }

    private static func scaled(_ samples: [Double], toDBFS level: Double) -> [Float] {
        let meanSquare = samples.reduce(0) { $0 + $1 * $1 } / Double(max(1, samples.count))
        let gain = meanSquare > 0 ? rms(level) / meanSquare.squareRoot() : 0
        return samples.map { Float($0 * gain) }
    }
}

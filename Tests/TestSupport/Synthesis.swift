import Foundation

/// Synthetic test signals with known properties, at 16 kHz unless stated.
public enum Synthesis {
    public static let sampleRate = 16_000

    /// Linear amplitude for an RMS level in dBFS (0 dBFS = mean square 1).
    public static func rms(_ dBFS: Double) -> Double { pow(10, dBFS / 20) }

    /// A speech-like signal: voiced syllables of 120–260 ms (harmonics of a pitch near `f0` up to
    /// 4 kHz with a −6 dB/octave tilt, two formants gliding across each syllable, 2 % pitch jitter and
    /// aspiration noise, each syllable with its own rising or falling pitch contour and a smooth envelope), separated by 30–90 ms consonants that are either silent or a fricative hiss
    /// 12 dB below the vowels. Scaled to `levelDBFS` RMS over the whole signal.
    public static func voice(seconds: Double, f0: Double, levelDBFS: Double, seed: UInt64 = 1) -> [Float] {
        let count = Int(seconds * Double(sampleRate))
        var generator = SeededGenerator(seed: seed)
        func uniform(_ range: ClosedRange<Double>) -> Double {
            range.lowerBound + (Double(generator.nextSignedUnit()) + 1) / 2 * (range.upperBound - range.lowerBound)
        }
        var samples = [Double](repeating: 0, count: count)
        var position = 0
        var phase = 0.0
        let harmonics = max(1, Int(4000 / f0))
        while position < count {
            // A voiced syllable.
            let length = min(count - position, Int(uniform(0.12...0.26) * Double(sampleRate)))
            let startPitch = f0 * uniform(0.85...1.15), endPitch = f0 * uniform(0.85...1.15)
            var jitter = 1.0
            // Two formants gliding across the syllable, as the mouth moves from one vowel to the next.
            let f1 = (uniform(300...900), uniform(300...900)), f2 = (uniform(900...2500), uniform(900...2500))
            var weights = [Double](repeating: 0, count: harmonics + 1)
            for i in 0..<length {
                let progress = Double(i) / Double(max(1, length - 1))
                // Cycle-to-cycle pitch jitter of about 2 %, redrawn every 5 ms, and the formant weights.
                let pitch = (startPitch + (endPitch - startPitch) * progress) * jitter
                if i % 80 == 0 {
                    jitter = 1 + 0.02 * Double(generator.nextSignedUnit())
                    let formant1 = f1.0 + (f1.1 - f1.0) * progress, formant2 = f2.0 + (f2.1 - f2.0) * progress
                    for k in 1...harmonics {
                        let frequency = Double(k) * pitch
                        let peaks = 4 * exp(-pow((frequency - formant1) / 150, 2)) + 3 * exp(-pow((frequency - formant2) / 250, 2))
                        weights[k] = (0.3 + peaks) / Double(k)
                    }
                }
                phase += 2 * Double.pi * pitch / Double(sampleRate)
                var value = 0.0
                for k in 1...harmonics { value += sin(Double(k) * phase) * weights[k] }
                // Aspiration noise about 15 dB below the harmonics, as in a real voice.
                value += 0.3 * Double(generator.nextSignedUnit())
                samples[position + i] = value * sin(Double.pi * progress)  // rises and falls
            }
            position += length
            // A consonant: silence or hiss.
            let gap = min(count - position, Int(uniform(0.03...0.09) * Double(sampleRate)))
            let hiss = uniform(0...1) < 0.5
            for i in 0..<gap where hiss {
                samples[position + i] = 0.25 * Double(generator.nextSignedUnit())
            }
            position += gap
        }
        return scaled(samples, toDBFS: levelDBFS)
    }

    /// White Gaussian noise at `levelDBFS` RMS.
    public static func noise(seconds: Double, levelDBFS: Double, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        let amplitude = rms(levelDBFS)
        return (0..<Int(seconds * Double(sampleRate))).map { _ in Float(Double(generator.nextGaussian()) * amplitude) }
    }

    /// The colour of `colouredNoise`: power per hertz flat (white), falling 3 dB an octave (pink) or
    /// 6 dB an octave (brown), as a room's fan, traffic or rumble sounds.
    public enum NoiseColour: String, Sendable, CaseIterable {
        case white, pink, brown
    }

    /// Gaussian noise of `colour` at `levelDBFS` RMS. Pink is white through Paul Kellet's economy
    /// three-pole filter; brown is a leaky integral of white.
    public static func colouredNoise(_ colour: NoiseColour, seconds: Double, levelDBFS: Double, seed: UInt64) -> [Float] {
        let white = noise(seconds: seconds, levelDBFS: 0, seed: seed)
        var samples = white
        switch colour {
        case .white:
            break
        case .pink:
            var b0: Float = 0, b1: Float = 0, b2: Float = 0
            for index in samples.indices {
                let x = white[index]
                b0 = 0.99765 * b0 + x * 0.0990460
                b1 = 0.96300 * b1 + x * 0.2965164
                b2 = 0.57000 * b2 + x * 1.0526913
                samples[index] = b0 + b1 + b2 + x * 0.1848
            }
        case .brown:
            var y: Float = 0
            for index in samples.indices {
                y = 0.995 * y + white[index]
                samples[index] = y
            }
        }
        return scaled(samples.map(Double.init), toDBFS: levelDBFS)
    }

    /// Digital silence as a 16-bit source delivers it: zeros, or (`dithered`) ±1 LSB of dither.
    public static func digitalSilence(seconds: Double, dithered: Bool, seed: UInt64 = 9) -> [Float] {
        let count = Int(seconds * Double(sampleRate))
        guard dithered else { return [Float](repeating: 0, count: count) }
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in Float(Int(generator.next() % 3) - 1) / 32768 }
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

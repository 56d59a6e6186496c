import Testing
import TestSupport
@testable import SpeakerCore

/// The inline, incrementally maintained envelope against a plain array and scans.
@Suite struct EnergyEnvelopeTests {
    /// The scalar reference: the whole history and straightforward scans.
    struct Reference {
        var values = [Float](repeating: Levels.floorDBFS, count: EnergyEnvelope.length)

        mutating func append(_ value: Float) {
            values.removeFirst()
            values.append(value)
        }

        var lookbackMaximum: Float { values.suffix(LeakageFilter.lookback).max()! }

        static func correlation(_ a: Reference, _ b: Reference) -> Float {
            let n = Float(a.values.count)
            let meanX = a.values.reduce(0, +) / n, meanY = b.values.reduce(0, +) / n
            var sxy: Float = 0, sxx: Float = 0, syy: Float = 0
            for (x, y) in zip(a.values, b.values) {
                sxy += (x - meanX) * (y - meanY)
                sxx += (x - meanX) * (x - meanX)
                syy += (y - meanY) * (y - meanY)
            }
            guard sxx > 1e-6, syy > 1e-6 else { return 0 }
            return sxy / (sxx * syy).squareRoot()
        }
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func matchesTheScalarReference(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var a = EnergyEnvelope(), b = EnergyEnvelope()
        var ra = Reference(), rb = Reference()
        for step in 0..<3000 {
            // Plateaus (repeated values, as in silence), steps, and noise: the cases where an
            // incremental maximum goes wrong.
            let x: Float = step % 200 < 60 ? -60 : Float.random(in: -90 ... -10, using: &generator).rounded()
            let y: Float = step % 7 == 0 ? x - 12 : Float.random(in: -90 ... -10, using: &generator)
            a.append(x)
            b.append(y)
            ra.append(x)
            rb.append(y)
            #expect(a.latest == x)
            #expect(a.lookbackMaximum == ra.lookbackMaximum, "step \(step)")
            #expect(b.lookbackMaximum == rb.lookbackMaximum, "step \(step)")
            #expect(abs(EnergyEnvelope.correlation(a, b) - Reference.correlation(ra, rb)) < 1e-4, "step \(step)")
        }
    }

    @Test func aFlatEnvelopeCorrelatesWithNothing() {
        var a = EnergyEnvelope(), b = EnergyEnvelope()
        for k in 0..<EnergyEnvelope.length {
            a.append(-50)
            b.append(Float(k))
        }
        #expect(EnergyEnvelope.correlation(a, b) == 0)
        #expect(a.lookbackMaximum == -50)
    }
}

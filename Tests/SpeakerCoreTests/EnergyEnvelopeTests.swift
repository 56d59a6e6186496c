import Foundation
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

    /// Live streams join at their first packet, so their envelopes start on different ticks: the frames must be
    /// paired by time. A leaked copy (the same envelope 25 dB down) of a stream added `offset` ticks later
    /// correlates at 1 whatever the offset; paired by ring slot, as before 2026-12-07, it was compared `offset`
    /// frames apart (a leaked voice then passed as speech in `listen` and `serve`, never in `detect`).
    @Test(arguments: [1, 7, 13, 19, 20, 27])
    func streamsAddedOnDifferentTicksArePairedByTime(offset: Int) {
        var generator = SeededGenerator(seed: UInt64(offset))
        var a = EnergyEnvelope(), b = EnergyEnvelope()
        var ra = Reference(), rb = Reference()
        for step in 0..<(offset + 200) {
            // Syllables: a 4 Hz rhythm with noise, as an envelope of speech.
            let x = -40 + 15 * Float(sin(Double(step) * 2 * .pi / 25)) + Float.random(in: -3...3, using: &generator)
            a.append(x)
            ra.append(x)
            guard step >= offset else { continue }
            b.append(x - 25)
            rb.append(x - 25)
            if step >= offset + EnergyEnvelope.length {
                #expect(abs(EnergyEnvelope.correlation(a, b) - 1) < 1e-4, "step \(step)")
                #expect(abs(EnergyEnvelope.correlation(b, a) - 1) < 1e-4, "step \(step)")
            }
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

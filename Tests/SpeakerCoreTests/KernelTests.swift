import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// Scalar references for every SIMD kernel.
enum ScalarReference {
    static func sumOfSquares(_ x: [Float]) -> Float {
        var total: Double = 0
        for v in x { total += Double(v) * Double(v) }
        return Float(total)
    }

    static func sum(_ x: [Float]) -> Float { Float(x.reduce(0.0) { $0 + Double($1) }) }

    static func zeroCrossings(_ x: [Float]) -> Int {
        guard x.count > 1 else { return 0 }
        return (1..<x.count).filter { (x[$0 - 1] < 0) != (x[$0] < 0) }.count
    }
}

@Suite struct KernelTests {
    static let lengths = [0, 1, 7, 8, 15, 16, 17, 160, 161, 512, 1000]

    static func noise(_ count: Int, seed: UInt64) -> [Float] {
        var generator = SeededGenerator(seed: seed)
        return (0..<count).map { _ in generator.nextSignedUnit() }
    }

    @Test(arguments: lengths)
    func sumOfSquaresMatchesScalar(count: Int) {
        let x = Self.noise(count, seed: UInt64(count))
        let simd = x.withUnsafeBufferPointer { Kernels.sumOfSquares($0) }
        let reference = ScalarReference.sumOfSquares(x)
        #expect(abs(simd - reference) <= 1e-5 * max(1, reference))
    }

    @Test(arguments: lengths)
    func sumMatchesScalar(count: Int) {
        let x = Self.noise(count, seed: 100 + UInt64(count))
        let simd = x.withUnsafeBufferPointer { Kernels.sum($0) }
        #expect(abs(simd - ScalarReference.sum(x)) <= 1e-4 * max(1, Float(count)))
    }

    @Test(arguments: lengths)
    func zeroCrossingsMatchScalar(count: Int) {
        var x = Self.noise(count, seed: 200 + UInt64(count))
        if count > 3 { x[2] = 0 }  // a zero counts as positive in both
        let simd = x.withUnsafeBufferPointer { Kernels.zeroCrossings($0) }
        #expect(simd == ScalarReference.zeroCrossings(x))
    }

    @Test(arguments: lengths)
    func multiplyMatchesScalar(count: Int) {
        let x = Self.noise(count, seed: 300 + UInt64(count))
        let y = Self.noise(count, seed: 400 + UInt64(count))
        var result = [Float](repeating: .nan, count: count)
        x.withUnsafeBufferPointer { xb in
            y.withUnsafeBufferPointer { yb in
                result.withUnsafeMutableBufferPointer { Kernels.multiply(xb, yb, into: $0) }
            }
        }
        #expect(result == zip(x, y).map { $0 * $1 })
    }

    @Test func sineOf1kHzHasTheExpectedCrossings() {
        // 1 kHz at 16 kHz: 2 crossings per period, 10 periods in 160 samples, phase offset avoids exact zeros.
        let x = (0..<160).map { Float(sin(2 * Double.pi * 1000 * (Double($0) + 0.25) / 16000)) }
        #expect(x.withUnsafeBufferPointer { Kernels.zeroCrossings($0) } == 19)
    }
}

@Suite struct LevelTests {
    @Test func fullScaleSineIsMinus3dBFS() {
        #expect(abs(Levels.dBFS(meanSquare: 0.5) - (-3.0103)) < 1e-3)
    }

    @Test func silenceIsTheFloor() {
        #expect(Levels.dBFS(meanSquare: 0) == -127)
        #expect(Levels.rfc6464Level(meanSquare: 0) == 127)
    }

    /// RFC 6464 levels as libwebrtc computes them: round(−10·log10(meanSquare)), clamped to 0…127.
    @Test(arguments: [(1.0, 0), (0.5, 3), (1e-3, 30), (3.2e-4, 35), (1e-13, 127), (2.0, 0)] as [(Float, UInt8)])
    func rfc6464Levels(meanSquare: Float, expected: UInt8) {
        #expect(Levels.rfc6464Level(meanSquare: meanSquare) == expected)
    }
}

@Suite struct FastMathTests {
    @Test func log2MatchesTheScalarFunction() {
        var generator = SeededGenerator(seed: 99)
        for _ in 0..<200 {
            var x = SIMD16<Float>()
            for lane in 0..<16 { x[lane] = powf(10, 12 * generator.nextSignedUnit()) }  // 1e-12 … 1e12
            let fast = FastMath.log2(x)
            for lane in 0..<16 { #expect(abs(fast[lane] - log2f(x[lane])) < 2e-4) }
        }
    }

    @Test func lanewiseMinAndMaxMatchScalar() {
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<100 {
            var a = SIMD8<Float>(), b = SIMD8<Float>()
            for lane in 0..<8 { a[lane] = generator.nextSignedUnit(); b[lane] = generator.nextSignedUnit() }
            let low = a.lanewiseMin(b), high = a.lanewiseMax(b)
            for lane in 0..<8 {
                #expect(low[lane] == min(a[lane], b[lane]))
                #expect(high[lane] == max(a[lane], b[lane]))
            }
        }
    }

    @Test(arguments: [0, 1, 7, 8, 9, 16, 17, 24, 25, 160, 161])
    func differenceEnergyMatchesScalar(count: Int) {
        let x = KernelTests.noise(count, seed: 77)
        var reference: Float = 0
        var last: Float = 0.25
        for v in x { reference += (v - last) * (v - last); last = v }
        let simd = x.withUnsafeBufferPointer { Kernels.differenceEnergy($0, previous: 0.25) }
        #expect(abs(simd - reference) <= 1e-5 * max(1, reference))
    }
}

/// Vector logarithms for the hot path, accurate to about 1e-4 in log2 (0.0003 dB), far below what
/// any decision here resolves, and several times cheaper than one `log10f` call per lane.
public enum FastMath {
    /// `log2(x)` per lane for `x > 0`; lanes ≤ 1e-30 are treated as 1e-30.
    ///
    /// Splits `x = m · 2^e` with `m` in [1, 2) from the IEEE-754 bits, then evaluates a degree-4
    /// minimax polynomial for `log2(m)` on [1, 2).
    @inlinable
    public static func log2<V: SIMD>(_ x: V) -> V where V.Scalar == Float {
        let clamped = x.replacing(with: V(repeating: 1e-30), where: x .< V(repeating: 1e-30))
        var exponent = V()
        var mantissa = V()
        for lane in 0..<V.scalarCount {
            let bits = clamped[lane].bitPattern
            exponent[lane] = Float(Int32(bitPattern: (bits >> 23) & 0xFF) - 127)
            mantissa[lane] = Float(bitPattern: (bits & 0x007F_FFFF) | 0x3F80_0000)
        }
        // log2(m) ≈ ((((−0.056570851·m + 0.44717955)·m − 1.4699568)·m + 2.8212026)·m − 1.7417939)
        var p = V(repeating: -0.056_570_851) * mantissa + V(repeating: 0.447_179_55)
        p = p * mantissa + V(repeating: -1.469_956_8)
        p = p * mantissa + V(repeating: 2.821_202_6)
        p = p * mantissa + V(repeating: -1.741_793_9)
        return exponent + p
    }

    /// `10·log10(x)` per lane (decibels of a power ratio), for `x > 0`.
    @inlinable
    public static func decibels<V: SIMD>(_ x: V) -> V where V.Scalar == Float {
        // 10·log10(x) = 10·log10(2)·log2(x)
        log2(x) * V(repeating: 3.010_299_956_6)
    }
}

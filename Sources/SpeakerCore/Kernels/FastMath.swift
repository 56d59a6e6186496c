/// The vector logarithms of `FastMath` (its scalar one is in SpeakerBase).
extension FastMath {
    /// `log2(x)` per lane for `x > 0`; lanes ≤ 1e-30 are treated as 1e-30.
    ///
    /// Splits `x = m · 2^e` with `m` in [1, 2) from the IEEE-754 bits, then evaluates a degree-5
    /// polynomial for `log2(m)` on [1, 2).
    @inlinable
    public static func log2(_ x: SIMD16<Float>) -> SIMD16<Float> {
        let clamped = x.lanewiseMax(SIMD16(repeating: 1e-30))
        let bits = unsafeBitCast(clamped, to: SIMD16<UInt32>.self)
        let exponent = SIMD16<Float>(SIMD16<Int32>(truncatingIfNeeded: (bits &>> 23) & 0xFF) &- 127)
        let mantissa = unsafeBitCast((bits & 0x007F_FFFF) | 0x3F80_0000, to: SIMD16<Float>.self)
        // log2(m) on [1, 2) by a degree-5 least-squares polynomial (Chebyshev nodes), Horner form;
        // largest error 1.5e-5.
        var p = SIMD16<Float>(repeating: 0.043_928_63) * mantissa + SIMD16(repeating: -0.409_475_59)
        p = p * mantissa + SIMD16(repeating: 1.610_177_55)
        p = p * mantissa + SIMD16(repeating: -3.520_218_84)
        p = p * mantissa + SIMD16(repeating: 5.069_756_32)
        p = p * mantissa + SIMD16(repeating: -2.794_153_68)
        return exponent + p
    }

    /// `10·log10(x)` per lane (decibels of a power ratio), for `x > 0`.
    @inlinable
    public static func decibels(_ x: SIMD16<Float>) -> SIMD16<Float> {
        // 10·log10(x) = 10·log10(2)·log2(x)
        log2(x) * SIMD16(repeating: 3.010_299_956_6)
    }
}

// Lane-wise minimum and maximum that compile to a compare and a blend. The standard library's
// `pointwiseMin`/`pointwiseMax` and `replacing(with:where:)` are generic and, with this toolchain, not
// inlined: each use costs a call and a scalar loop over the lanes (measured with callgrind).
extension SIMD8 where Scalar == Float {
    /// The lane-wise minimum of `self` and `other`.
    @inlinable @inline(__always)
    func lanewiseMin(_ other: Self) -> Self { Self.select(other, where: other .< self, else: self) }

    /// The lane-wise maximum of `self` and `other`.
    @inlinable @inline(__always)
    func lanewiseMax(_ other: Self) -> Self { Self.select(other, where: other .> self, else: self) }

    @inlinable @inline(__always)
    static func select(_ a: Self, where condition: SIMDMask<SIMD8<Int32>>, else b: Self) -> Self {
        let mask = unsafeBitCast(condition, to: SIMD8<UInt32>.self)
        let chosen = (unsafeBitCast(a, to: SIMD8<UInt32>.self) & mask) | (unsafeBitCast(b, to: SIMD8<UInt32>.self) & ~mask)
        return unsafeBitCast(chosen, to: Self.self)
    }
}

extension SIMD16 where Scalar == Float {
    /// The lane-wise minimum of `self` and `other`.
    @inlinable @inline(__always)
    func lanewiseMin(_ other: Self) -> Self { Self.select(other, where: other .< self, else: self) }

    /// The lane-wise maximum of `self` and `other`.
    @inlinable @inline(__always)
    func lanewiseMax(_ other: Self) -> Self { Self.select(other, where: other .> self, else: self) }

    @inlinable @inline(__always)
    static func select(_ a: Self, where condition: SIMDMask<SIMD16<Int32>>, else b: Self) -> Self {
        let mask = unsafeBitCast(condition, to: SIMD16<UInt32>.self)
        let chosen = (unsafeBitCast(a, to: SIMD16<UInt32>.self) & mask) | (unsafeBitCast(b, to: SIMD16<UInt32>.self) & ~mask)
        return unsafeBitCast(chosen, to: Self.self)
    }
}

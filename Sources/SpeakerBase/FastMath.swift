/// Logarithms for the hot path, accurate to 1.5e-5 in log2 (0.00005 dB), far below what any
/// decision here resolves, and several times cheaper than `log10f`. The vector forms are in
/// SpeakerCore (`extension FastMath`).
public enum FastMath {
    /// `log2(x)` for one `x > 0` (≤ 1e-30 is treated as 1e-30), with the same method and accuracy as
    /// the vector version.
    @inlinable
    public static func log2(_ x: Float) -> Float {
        let bits = max(x, 1e-30).bitPattern
        let exponent = Float(Int32(bitPattern: (bits >> 23) & 0xFF) - 127)
        let m = Float(bitPattern: (bits & 0x007F_FFFF) | 0x3F80_0000)
        var p: Float = 0.043_928_63 * m - 0.409_475_59
        p = p * m + 1.610_177_55
        p = p * m - 3.520_218_84
        p = p * m + 5.069_756_32
        p = p * m - 2.794_153_68
        return exponent + p
    }
}

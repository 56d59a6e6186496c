/// SIMD kernels for the per-frame hot path.
///
/// Each kernel uses `SIMD8<Float>` loads (unaligned), two or more independent accumulators so the
/// additions pipeline, and a scalar tail. Plain multiply-add is used instead of `addingProduct`, which
/// on baseline x86-64 becomes a call to `fmaf` per lane. Every kernel has a scalar reference
/// implementation in the tests.
///
/// All kernels are real-time safe: no allocation, no locks, no errors.
public enum Kernels {
    /// The sum of `x[i]²`.
    /// - Complexity: O(n).
    @inlinable
    public static func sumOfSquares(_ x: UnsafeBufferPointer<Float>) -> Float {
        let n = x.count
        guard let base = x.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(base)
        var a0 = SIMD8<Float>(), a1 = SIMD8<Float>()
        var i = 0
        while i + 16 <= n {
            let v0 = raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
            let v1 = raw.loadUnaligned(fromByteOffset: (i &+ 8) &* 4, as: SIMD8<Float>.self)
            a0 += v0 * v0
            a1 += v1 * v1
            i &+= 16
        }
        var sum = (a0 + a1).sum()
        while i < n {
            sum += base[i] * base[i]
            i &+= 1
        }
        return sum
    }
}

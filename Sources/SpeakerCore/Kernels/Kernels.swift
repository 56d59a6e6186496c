/// The kernels of the engine's hot path; `Kernels.sumOfSquares`, which SpeakerIO uses too, is in
/// SpeakerBase.
extension Kernels {
    /// The sum of `x[i]`.
    /// - Complexity: O(n).
    @inlinable
    public static func sum(_ x: UnsafeBufferPointer<Float>) -> Float {
        let n = x.count
        guard let base = x.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(base)
        var a0 = SIMD8<Float>(), a1 = SIMD8<Float>()
        var i = 0
        while i + 16 <= n {
            a0 += raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
            a1 += raw.loadUnaligned(fromByteOffset: (i &+ 8) &* 4, as: SIMD8<Float>.self)
            i &+= 16
        }
        var total = (a0 + a1).sum()
        while i < n {
            total += base[i]
            i &+= 1
        }
        return total
    }

    /// The sum of `(x[i] − x[i−1])²`, with `x[−1] = previous`: the energy after a first-difference
    /// (+6 dB/octave) filter, which stresses the speech band over low-frequency rumble.
    /// - Complexity: O(n).
    @inlinable
    public static func differenceEnergy(_ x: UnsafeBufferPointer<Float>, previous: Float) -> Float {
        let n = x.count
        guard n > 0, let base = x.baseAddress else { return 0 }
        let first = base[0] - previous
        var sum = first * first
        // Differences x[i] − x[i−1] for i ≥ 1, eight at a time from two overlapping unaligned loads,
        // two accumulators; the scalar tail after.
        let raw = UnsafeRawPointer(base)
        var a0 = SIMD8<Float>(), a1 = SIMD8<Float>()
        var i = 1
        while i &+ 16 <= n {
            let d0 = raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
                - raw.loadUnaligned(fromByteOffset: (i &- 1) &* 4, as: SIMD8<Float>.self)
            let d1 = raw.loadUnaligned(fromByteOffset: (i &+ 8) &* 4, as: SIMD8<Float>.self)
                - raw.loadUnaligned(fromByteOffset: (i &+ 7) &* 4, as: SIMD8<Float>.self)
            a0 += d0 * d0
            a1 += d1 * d1
            i &+= 16
        }
        while i &+ 8 <= n {
            let d0 = raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
                - raw.loadUnaligned(fromByteOffset: (i &- 1) &* 4, as: SIMD8<Float>.self)
            a0 += d0 * d0
            i &+= 8
        }
        sum += (a0 + a1).sum()
        while i < n {
            let d = base[i] - base[i &- 1]
            sum += d * d
            i &+= 1
        }
        return sum
    }

    /// The number of sign changes between neighbouring samples (a zero counts as positive).
    /// - Complexity: O(n).
    @inlinable
    public static func zeroCrossings(_ x: UnsafeBufferPointer<Float>) -> Int {
        let n = x.count
        guard n > 1, let base = x.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(base)
        var counts = SIMD8<Int32>()
        let zero = SIMD8<Float>()
        var i = 0
        // Compare x[i..<i+8] with x[i+1..<i+9]: a crossing where exactly one of the pair is negative.
        while i + 9 <= n {
            let a = raw.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
            let b = raw.loadUnaligned(fromByteOffset: (i &+ 1) &* 4, as: SIMD8<Float>.self)
            let crossed = (a .< zero) .^ (b .< zero)
            counts &-= unsafeBitCast(crossed, to: SIMD8<Int32>.self)
            i &+= 8
        }
        var total = Int(counts.wrappedSum())
        while i + 1 < n {
            if (base[i] < 0) != (base[i &+ 1] < 0) { total &+= 1 }
            i &+= 1
        }
        return total
    }

    /// Writes `x[i] * y[i]` into `result` (for windowing). All three must have the same count.
    /// - Complexity: O(n).
    @inlinable
    public static func multiply(
        _ x: UnsafeBufferPointer<Float>, _ y: UnsafeBufferPointer<Float>, into result: UnsafeMutableBufferPointer<Float>
    ) {
        let n = result.count
        precondition(x.count == n && y.count == n, "multiply: counts differ")
        guard let xb = x.baseAddress, let yb = y.baseAddress, let rb = result.baseAddress else { return }
        let xr = UnsafeRawPointer(xb), yr = UnsafeRawPointer(yb), rr = UnsafeMutableRawPointer(rb)
        var i = 0
        while i + 8 <= n {
            let v = xr.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
                * yr.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<Float>.self)
            rr.storeBytes(of: v, toByteOffset: i &* 4, as: SIMD8<Float>.self)
            i &+= 8
        }
        while i < n {
            rb[i] = xb[i] * yb[i]
            i &+= 1
        }
    }
}

extension UnsafeBufferPointer where Element == Float {
    /// Eight lanes from `self[index..<index + 8]` (unaligned load; the caller keeps it in bounds).
    @inlinable @inline(__always)
    func load8(_ index: Int) -> SIMD8<Float> {
        UnsafeRawPointer(baseAddress!).loadUnaligned(fromByteOffset: index &* 4, as: SIMD8<Float>.self)
    }

    /// Sixteen lanes from `self[index..<index + 16]` (unaligned load; the caller keeps it in bounds).
    @inlinable @inline(__always)
    func load16(_ index: Int) -> SIMD16<Float> {
        UnsafeRawPointer(baseAddress!).loadUnaligned(fromByteOffset: index &* 4, as: SIMD16<Float>.self)
    }

    /// Four lanes from `self[index..<index + 4]` (unaligned load; the caller keeps it in bounds).
    @inlinable @inline(__always)
    func load4(_ index: Int) -> SIMD4<Float> {
        UnsafeRawPointer(baseAddress!).loadUnaligned(fromByteOffset: index &* 4, as: SIMD4<Float>.self)
    }
}

extension UnsafeMutableBufferPointer where Element == Float {
    /// Eight lanes from `self[index..<index + 8]` (unaligned load; the caller keeps it in bounds).
    @inlinable @inline(__always)
    func load8(_ index: Int) -> SIMD8<Float> {
        UnsafeRawPointer(baseAddress!).loadUnaligned(fromByteOffset: index &* 4, as: SIMD8<Float>.self)
    }

    /// Stores eight lanes into `self[index..<index + 8]` (the caller keeps it in bounds).
    @inlinable @inline(__always)
    func store8(_ value: SIMD8<Float>, at index: Int) {
        UnsafeMutableRawPointer(baseAddress!).storeBytes(of: value, toByteOffset: index &* 4, as: SIMD8<Float>.self)
    }

    /// Sixteen lanes from `self[index..<index + 16]` (unaligned load; the caller keeps it in bounds).
    @inlinable @inline(__always)
    func load16(_ index: Int) -> SIMD16<Float> {
        UnsafeRawPointer(baseAddress!).loadUnaligned(fromByteOffset: index &* 4, as: SIMD16<Float>.self)
    }

    /// Stores sixteen lanes into `self[index..<index + 16]` (the caller keeps it in bounds).
    @inlinable @inline(__always)
    func store16(_ value: SIMD16<Float>, at index: Int) {
        UnsafeMutableRawPointer(baseAddress!).storeBytes(of: value, toByteOffset: index &* 4, as: SIMD16<Float>.self)
    }
}

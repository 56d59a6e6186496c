import CFFTW
import Synchronization

/// An FFTW plan. FFTW plans are immutable once made, and executing one with new arrays
/// (`fftwf_execute_dft_r2c`/`_c2r`) is thread-safe, so sharing a plan between threads is sound.
struct FFTPlan: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// Makes FFTW plans once per size and direction, under a lock: the FFTW planner is not thread-safe.
///
/// Plans are made with `FFTW_MEASURE` on scratch arrays (measuring overwrites them) and reused for the
/// life of the process. Arrays later passed to a plan must come from `fftwf_alloc_*` so that their
/// alignment matches the planning arrays'.
enum FFTPlans {
    private struct Key: Hashable {
        let size: Int
        let forward: Bool
    }

    private static let plans = Mutex<[Key: FFTPlan]>([:])

    /// The real-to-complex plan for `size` real samples (`size / 2 + 1` complex outputs).
    static func forward(size: Int) -> FFTPlan { plan(Key(size: size, forward: true)) }

    /// The complex-to-real plan producing `size` real samples from `size / 2 + 1` complex inputs.
    static func inverse(size: Int) -> FFTPlan { plan(Key(size: size, forward: false)) }

    private static func plan(_ key: Key) -> FFTPlan {
        plans.withLock { plans in
            if let existing = plans[key] { return existing }
            let real = fftwf_alloc_real(key.size)!
            let complex = fftwf_alloc_complex(key.size / 2 + 1)!
            defer {
                fftwf_free(real)
                fftwf_free(complex)
            }
            let flags = UInt32(FFTW_MEASURE) | UInt32(FFTW_DESTROY_INPUT)
            let made: OpaquePointer? = key.forward
                ? fftwf_plan_dft_r2c_1d(Int32(key.size), real, complex, flags)
                : fftwf_plan_dft_c2r_1d(Int32(key.size), complex, real, flags)
            guard let made else { fatalError("FFTW could not plan a size-\(key.size) transform") }
            let plan = FFTPlan(pointer: made)
            plans[key] = plan
            return plan
        }
    }
}

/// A buffer of `count` Floats from `fftwf_alloc_real` (SIMD-aligned), freed on deinit.
final class AlignedFloats {
    let pointer: UnsafeMutablePointer<Float>
    let count: Int

    init(count: Int) {
        guard let memory = fftwf_alloc_real(count) else { fatalError("fftwf_alloc_real(\(count)) failed") }
        pointer = memory
        self.count = count
        pointer.initialize(repeating: 0, count: count)
    }

    deinit { fftwf_free(pointer) }

    var buffer: UnsafeMutableBufferPointer<Float> { UnsafeMutableBufferPointer(start: pointer, count: count) }
}

/// Scratch memory for one thread's spectral analysis: the windowed frame, its spectrum, and the
/// autocorrelation transform. Owned by one worker; never shared between threads.
final class SpectralWorkspace {
    let windowed: AlignedFloats
    /// Interleaved (re, im) pairs of the forward transform's `binCount` outputs.
    let spectrum: AlignedFloats
    /// Interleaved (re, im) input of the autocorrelation transform.
    let autocorrelationSpectrum: AlignedFloats
    let autocorrelation: AlignedFloats
    let forward: FFTPlan
    let inverse: FFTPlan
    let inverseSize: Int

    init(windowSize: Int, autocorrelationSize: Int) {
        windowed = AlignedFloats(count: windowSize)
        spectrum = AlignedFloats(count: 2 * (windowSize / 2 + 1))
        autocorrelationSpectrum = AlignedFloats(count: 2 * (autocorrelationSize / 2 + 1))
        autocorrelation = AlignedFloats(count: autocorrelationSize)
        forward = FFTPlans.forward(size: windowSize)
        inverse = FFTPlans.inverse(size: autocorrelationSize)
        inverseSize = autocorrelationSize
    }

    /// Transforms `windowed` into `spectrum`. The corresponding C function is `fftwf_execute_dft_r2c`.
    func transformWindowed() {
        spectrum.pointer.withMemoryRebound(to: fftwf_complex.self, capacity: spectrum.count / 2) { out in
            fftwf_execute_dft_r2c(forward.pointer, windowed.pointer, out)
        }
    }

    /// Transforms `autocorrelationSpectrum` into `autocorrelation`.
    /// The corresponding C function is `fftwf_execute_dft_c2r`.
    func transformAutocorrelation() {
        autocorrelationSpectrum.pointer.withMemoryRebound(
            to: fftwf_complex.self, capacity: autocorrelationSpectrum.count / 2
        ) { input in
            fftwf_execute_dft_c2r(inverse.pointer, input, autocorrelation.pointer)
        }
    }
}

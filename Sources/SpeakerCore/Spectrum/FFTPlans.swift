internal import CFFTW
import Foundation
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
///
/// `FFTW_MEASURE` times candidate algorithms, so two processes may pick different plans: their speed
/// differed by up to 1.6× (docs/benchmarks.md) and their results in the 7th digit. So plans come from
/// FFTW *wisdom* kept in a file (`FFTWisdom.path`): the first process on a machine measures and saves
/// its plans, later ones import them and plan exactly the same.
enum FFTPlans {
    private struct Key: Hashable {
        let size: Int
        let forward: Bool
    }

    private struct State {
        var plans: [Key: FFTPlan] = [:]
        var wisdomLoaded = false
    }

    private static let state = Mutex(State())

    /// The real-to-complex plan for `size` real samples (`size / 2 + 1` complex outputs).
    static func forward(size: Int) -> FFTPlan { plan(Key(size: size, forward: true)) }

    /// The complex-to-real plan producing `size` real samples from `size / 2 + 1` complex inputs.
    static func inverse(size: Int) -> FFTPlan { plan(Key(size: size, forward: false)) }

    private static func plan(_ key: Key) -> FFTPlan {
        state.withLock { state in
            if let existing = state.plans[key] { return existing }
            if !state.wisdomLoaded {
                state.wisdomLoaded = true
                FFTWisdom.load()
            }
            let real = fftwf_alloc_real(key.size)!
            let complex = fftwf_alloc_complex(key.size / 2 + 1)!
            defer {
                fftwf_free(real)
                fftwf_free(complex)
            }
            func make(_ flags: UInt32) -> OpaquePointer? {
                key.forward
                    ? fftwf_plan_dft_r2c_1d(Int32(key.size), real, complex, flags)
                    : fftwf_plan_dft_c2r_1d(Int32(key.size), complex, real, flags)
            }
            let flags = UInt32(FFTW_MEASURE) | UInt32(FFTW_DESTROY_INPUT)
            let made: OpaquePointer
            if let known = make(flags | UInt32(FFTW_WISDOM_ONLY)) {
                made = known
                FFTWisdom.note(.fromWisdom)
            } else {
                guard let measured = make(flags) else { fatalError("FFTW could not plan a size-\(key.size) transform") }
                made = measured
                FFTWisdom.note(.measured)
                FFTWisdom.save()
            }
            let plan = FFTPlan(pointer: made)
            state.plans[key] = plan
            return plan
        }
    }
}

/// The FFTW wisdom file that makes every process on a machine plan its transforms alike.
///
/// `ACTIVESPEAKER_FFTW_WISDOM=FILE` chooses the file (empty: no file, every process measures);
/// by default `$XDG_CACHE_HOME/activespeaker/fftw-wisdom` (`~/.cache/…`). A file that cannot be read or
/// written only costs the measurement, never an error. Only `FFTPlans` calls `load`, `note` and `save`,
/// under its lock.
public enum FFTWisdom {
    /// How this process's plans were made so far.
    public enum Source: String, Sendable {
        /// No plan made yet.
        case none
        /// Every plan came from the wisdom file.
        case wisdom
        /// At least one plan was measured in this process (and saved to the file, if any).
        case measured
    }

    enum Event { case fromWisdom, measured }

    private struct Record {
        var source = Source.none
        var loadedFrom: String?
    }

    private static let record = Mutex(Record())

    /// The wisdom file, or nil when disabled.
    public static let path: String? = {
        let environment = ProcessInfo.processInfo.environment
        if let chosen = environment["ACTIVESPEAKER_FFTW_WISDOM"] { return chosen.isEmpty ? nil : chosen }
        let cache = environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.cache" }
        return cache.map { $0 + "/activespeaker/fftw-wisdom" }
    }()

    /// Where this process's plans came from, in words (the benchmark prints it).
    public static var description: String {
        let current = record.withLock { $0 }
        switch current.source {
        case .none: return "FFTW plans: none made yet (wisdom file \(path ?? "off"))"
        case .wisdom: return "FFTW plans: from the wisdom file \(current.loadedFrom ?? path ?? "?")"
        case .measured: return "FFTW plans: measured in this process" + (path.map { ", saved to \($0)" } ?? " (no wisdom file)")
        }
    }

    /// How this process's plans were made.
    public static var source: Source { record.withLock { $0.source } }

    /// Makes the engine's plans now (from the wisdom file, or measured and saved), as its first
    /// spectral analysis would.
    public static func prepare() {
        _ = FFTPlans.forward(size: AnalysisFormat.windowSize)
        _ = FFTPlans.inverse(size: SpectralAnalyzer.autocorrelationSize)
    }

    static func load() {
        guard let path, FileManager.default.isReadableFile(atPath: path) else { return }
        if fftwf_import_wisdom_from_filename(path) != 0 { record.withLock { $0.loadedFrom = path } }
    }

    static func note(_ event: Event) {
        record.withLock { record in
            switch event {
            case .fromWisdom: if record.source == .none { record.source = .wisdom }
            case .measured: record.source = .measured
            }
        }
    }

    /// Writes all wisdom (what was imported and what was measured) to a temporary file beside `path`
    /// and renames it over `path`, so that a process reading it meanwhile sees an old file or a whole one.
    static func save() {
        guard let path else { return }
        let folder = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let temporary = path + ".\(ProcessInfo.processInfo.processIdentifier).tmp"
        guard fftwf_export_wisdom_to_filename(temporary) != 0 else {
            try? FileManager.default.removeItem(atPath: temporary)
            return
        }
        if rename(temporary, path) != 0 { try? FileManager.default.removeItem(atPath: temporary) }
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

import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A signal from one thread to one waiting thread that the waiter first watches for a moment (yielding its
/// core between looks) and only then sleeps on a semaphore.
///
/// A sleeping thread woken through a semaphore takes 55–62 µs here (docs/benchmarks.md, "The per-tick
/// handshake"), several per cent of a tick; a thread that is still watching sees the signal within
/// a microsecond or two. The engine's ticks come back to back in `detect` and the benchmarks, so the next
/// signal usually arrives while the waiter watches; a live tick every 10 ms finds it asleep, as before.
///
/// One poster and one waiter, taking turns: `post()` at most once per `wait()`.
final class ThreadSignal: @unchecked Sendable {
    /// How long `wait()` watches before it sleeps, by default.
    static let defaultWatchNanoseconds: UInt64 = 50_000

    private static let idle = 0, posted = 1, sleeping = 2
    private let state = Atomic<Int>(ThreadSignal.idle)
    private let semaphore = DispatchSemaphore(value: 0)
    private let watchNanoseconds: UInt64

    /// - Parameter watchNanoseconds: how long `wait()` watches before it sleeps (0: it sleeps at once
    ///   unless the post has come).
    init(watchNanoseconds: UInt64 = ThreadSignal.defaultWatchNanoseconds) {
        self.watchNanoseconds = watchNanoseconds
    }

    /// Signals the waiter; what this thread wrote before is visible to it after its `wait()`.
    func post() {
        if state.exchange(Self.posted, ordering: .acquiringAndReleasing) == Self.sleeping {
            semaphore.signal()
        }
    }

    /// Returns after the next `post()`: watches for the watch time, then sleeps until it comes.
    func wait() {
        let deadline = DispatchTime.now().uptimeNanoseconds + watchNanoseconds
        while true {
            if state.load(ordering: .acquiring) == Self.posted {
                state.store(Self.idle, ordering: .relaxed)
                return
            }
            if DispatchTime.now().uptimeNanoseconds >= deadline { break }
            sched_yield()
        }
        // Sleep, unless the post came in the meantime (then the exchange fails and it is taken now).
        if state.compareExchange(expected: Self.idle, desired: Self.sleeping, ordering: .acquiringAndReleasing).exchanged {
            semaphore.wait()
            // post() saw `sleeping`, stored `posted` and signalled: what it published is visible.
            _ = state.load(ordering: .acquiring)
        }
        state.store(Self.idle, ordering: .relaxed)
    }
}

/// Counts the workers of one phase as they finish; the last one signals the thread that waits for them all.
final class PhaseCompletion: @unchecked Sendable {
    private let remaining = Atomic<Int>(0)
    private let signal: ThreadSignal

    /// - Parameter watchNanoseconds: how long the waiter watches before it sleeps (`ThreadSignal`).
    init(watchNanoseconds: UInt64 = ThreadSignal.defaultWatchNanoseconds) {
        signal = ThreadSignal(watchNanoseconds: watchNanoseconds)
    }

    /// Sets how many `finished()` calls the next `wait()` waits for; call before starting any of them.
    func expect(_ count: Int) { remaining.store(count, ordering: .releasing) }

    /// One worker finished; what it wrote is visible to the waiter after `wait()`.
    func finished() {
        if remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { signal.post() }
    }

    /// Returns once every expected worker has finished (at once if none was expected).
    func wait(expected count: Int) {
        if count > 0 { signal.wait() }
    }
}

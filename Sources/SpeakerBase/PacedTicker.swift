import Dispatch

/// The 10 ms wall-clock schedule of a live loop: tick `n` covers `[start + n·10 ms, start + (n+1)·10 ms)` and
/// is due at its end, when its input has arrived.
///
/// The loop calls `waitUntilDue` (take input until the current tick is due), runs the tick, then `advance()`.
/// A loop that runs late does not skip ticks: it runs them back to back until it has caught up, and
/// `lateness(at:)`/`ticksBehind(at:)` say by how much.
///
/// The clock is injected (uptime nanoseconds by default), so the schedule is tested without sleeping.
/// A value owned by the loop's thread; nothing allocates after `init`.
public struct PacedTicker: Sendable {
    /// Nanoseconds per tick: one hop (`AnalysisFormat.hopDuration`).
    public static let period: UInt64 = 10_000_000

    /// The monotonic clock in nanoseconds (`DispatchTime.now().uptimeNanoseconds`).
    @Sendable public static func uptimeNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// When tick 0 began, in the clock's nanoseconds; 0 before `start()`.
    public private(set) var startTime: UInt64 = 0
    /// Ticks done (advanced past): the current tick's index.
    public private(set) var ticks = 0
    private let clock: @Sendable () -> UInt64

    /// A ticker not started yet.
    /// - Parameter clock: Monotonic nanoseconds; the default is the system's uptime.
    public init(clock: @escaping @Sendable () -> UInt64 = PacedTicker.uptimeNanoseconds) {
        self.clock = clock
    }

    /// Starts the schedule now: tick 0 is due one period from now.
    public mutating func start() {
        startTime = clock()
        ticks = 0
    }

    /// The clock's time now.
    public func now() -> UInt64 { clock() }

    /// When tick `tick` is due: the end of its 10 ms.
    public func due(ofTick tick: Int) -> UInt64 { startTime + UInt64(tick + 1) * Self.period }

    /// When the current tick is due.
    public var due: UInt64 { due(ofTick: ticks) }

    /// Nanoseconds the current tick is past due at `now` (0 while it is not due yet).
    public func lateness(at now: UInt64) -> UInt64 { now > due ? now - due : 0 }

    /// Whole ticks the loop is behind at `now`: 0 while the current tick starts within one period of its due
    /// time (the normal case: it is due, then runs).
    public func ticksBehind(at now: UInt64) -> Int { Int(lateness(at: now) / Self.period) }

    /// Whether the current tick, begun at `began`, started more than one tick after it was due.
    public func isLate(began: UInt64) -> Bool { began > due + Self.period }

    /// Ends the current tick: the next one is due one period after it.
    public mutating func advance() { ticks += 1 }

    /// Takes input until the current tick is due: `drain()` (take what has arrived, without blocking), and
    /// while time is left, `sleep(seconds)` (block at most that long for more input), then drain again.
    ///
    /// - Parameters:
    ///   - drain: Takes the input that is ready; returns false to stop waiting (a stop request, a budget spent
    ///     past the due time).
    ///   - sleep: Blocks for input for at most the seconds given (> 0).
    /// - Throws: What `drain` or `sleep` throw.
    /// - Complexity: one clock read per round. Allocates nothing.
    public func waitUntilDue<Failure: Error>(
        drain: () throws(Failure) -> Bool, sleep: (_ seconds: Double) throws(Failure) -> Void
    ) throws(Failure) {
        let due = self.due
        while true {
            guard try drain() else { return }
            let now = clock()
            if now >= due { return }
            try sleep(Double(due - now) / 1e9)
        }
    }
}

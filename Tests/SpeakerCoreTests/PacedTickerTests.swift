import Synchronization
import Testing
@testable import SpeakerCore

/// A clock the test sets: nanoseconds.
final class ManualClock: Sendable {
    private let nanoseconds: Mutex<UInt64>
    /// Clock reads so far.
    private let readCount = Atomic<Int>(0)

    init(_ start: UInt64) { nanoseconds = Mutex(start) }

    var reads: Int { readCount.load(ordering: .relaxed) }
    func read() -> UInt64 {
        readCount.add(1, ordering: .relaxed)
        return nanoseconds.withLock { $0 }
    }
    func set(_ value: UInt64) { nanoseconds.withLock { $0 = value } }
    func advance(_ delta: UInt64) { nanoseconds.withLock { $0 += delta } }
}

/// The 10 ms schedule of the live loops, on a clock the test sets (no sleeping, no wall-clock assertions).
@Suite struct PacedTickerTests {
    static let ms: UInt64 = 1_000_000

    @Test func tickNIsDueAtTheEndOfItsTenMilliseconds() {
        let clock = ManualClock(5_000 * Self.ms)
        var ticker = PacedTicker(clock: clock.read)
        ticker.start()
        #expect(ticker.startTime == 5_000 * Self.ms)
        #expect(ticker.ticks == 0)
        #expect(ticker.due == 5_010 * Self.ms)
        #expect(ticker.due(ofTick: 99) == 6_000 * Self.ms)
        for _ in 0..<7 { ticker.advance() }
        #expect(ticker.ticks == 7)
        #expect(ticker.due == 5_080 * Self.ms)
    }

    @Test func latenessAndTicksBehind() {
        let clock = ManualClock(1_000 * Self.ms)
        var ticker = PacedTicker(clock: clock.read)
        ticker.start()
        ticker.advance()  // tick 1 is due at 1,020 ms
        #expect(ticker.lateness(at: 1_015 * Self.ms) == 0)
        #expect(ticker.ticksBehind(at: 1_015 * Self.ms) == 0)
        #expect(!ticker.isLate(began: 1_020 * Self.ms))
        #expect(ticker.lateness(at: 1_023 * Self.ms) == 3 * Self.ms)
        #expect(ticker.ticksBehind(at: 1_023 * Self.ms) == 0)
        // Exactly one period past due is not late yet; a nanosecond more is.
        #expect(!ticker.isLate(began: 1_030 * Self.ms))
        #expect(ticker.isLate(began: 1_030 * Self.ms + 1))
        #expect(ticker.ticksBehind(at: 1_055 * Self.ms) == 3)
        #expect(ticker.lateness(at: 1_055 * Self.ms) == 35 * Self.ms)
    }

    @Test func waitUntilDueDrainsAndSleepsUntilTheTickIsDue() {
        let clock = ManualClock(0)
        var ticker = PacedTicker(clock: clock.read)
        ticker.start()
        var drains = 0
        var sleeps: [Double] = []
        ticker.waitUntilDue {
            drains += 1
            return true
        } sleep: { seconds in
            sleeps.append(seconds)
            clock.advance(4 * Self.ms)  // the wait ends after 4 ms (a datagram came)
        }
        // Due at 10 ms: drains at 0, 4, 8 and 12 ms; sleeps of at most 10, 6 and 2 ms.
        #expect(drains == 4)
        #expect(sleeps.count == 3)
        for (slept, expected) in zip(sleeps, [0.010, 0.006, 0.002]) { #expect(abs(slept - expected) < 1e-12) }
        // A tick that is due already drains once and does not sleep.
        ticker.advance()
        clock.set(50 * Self.ms)
        drains = 0
        sleeps = []
        ticker.waitUntilDue {
            drains += 1
            return true
        } sleep: { sleeps.append($0) }
        #expect(drains == 1)
        #expect(sleeps.isEmpty)
    }

    @Test func aDrainThatStopsEndsTheWait() {
        let clock = ManualClock(0)
        var ticker = PacedTicker(clock: clock.read)
        ticker.start()
        let readsBefore = clock.reads
        var sleeps = 0
        ticker.waitUntilDue { false } sleep: { _ in sleeps += 1 }
        #expect(sleeps == 0)
        #expect(clock.reads == readsBefore, "stopping needs no clock read")
    }

    @Test func theDefaultClockIsMonotonicUptime() {
        var ticker = PacedTicker()
        ticker.start()
        #expect(ticker.startTime > 0)
        #expect(ticker.now() >= ticker.startTime)
    }
}

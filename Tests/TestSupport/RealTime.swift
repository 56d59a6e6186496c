import Testing

/// A test (or every test of a suite) that plays audio in real time and judges what a real-time system
/// made of it: calls, `serve`/`join`/`listen`/`live` processes, browsers. Such tests run one at a time,
/// whatever their suite, while the rest of the suite runs beside them.
///
/// Why: with the suite's own parallelism on a 2-core machine that something else also loads, several
/// real-time scenarios at once starved their clients for seconds. A starved sender catches up in a
/// burst; a jitter buffer (as any real one) skips what no longer fits, and a turn was lost: the
/// recording of a failed run showed one participant's 2.5 s turn reduced to a murmur (2026-12-01). That is
/// the system's behaviour on a machine that cannot keep real time, not a defect the test should pass on,
/// so the tests keep real time by not competing with each other.
///
/// ```swift
/// @Suite(.realTime) struct CallEndToEndTests { … }
/// ```
public struct RealTimeTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> RealTimeTrait? {
        // Each test case on its own: a suite holding the gate for all its tests would do the same, but
        // would keep it while waiting for the suite's other work.
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await RealTimeGate.shared.run(function)
    }
}

extension Trait where Self == RealTimeTrait {
    /// Runs the test, or each test of the suite, alone among the real-time tests (`RealTimeTrait`).
    public static var realTime: RealTimeTrait { RealTimeTrait() }
}

/// One at a time, first come first served.
public actor RealTimeGate {
    public static let shared = RealTimeGate()

    public init() {}

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    public func run(_ body: @Sendable () async throws -> Void) async throws {
        if busy {
            await withCheckedContinuation { waiting.append($0) }
        } else {
            busy = true
        }
        defer { handOver() }
        try await body()
    }

    private func handOver() {
        if waiting.isEmpty {
            busy = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}

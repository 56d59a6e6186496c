import Synchronization
import Testing
import TestSupport

/// The gate that keeps real-time tests from running at once (TestSupport/RealTime.swift).
@Suite struct RealTimeGateTests {
    @Test func bodiesRunOneAtATimeAndAllRun() async throws {
        final class Count: Sendable {
            let inside = Atomic<Int>(0)
            let most = Atomic<Int>(0)
            let done = Atomic<Int>(0)
        }
        let gate = RealTimeGate(), count = Count()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    try await gate.run {
                        let now = count.inside.add(1, ordering: .sequentiallyConsistent).newValue
                        count.most.max(now, ordering: .sequentiallyConsistent)
                        // Suspends inside the gate, so a second body could start if the gate let it.
                        await Task.yield()
                        try await Task.sleep(for: .milliseconds(2))
                        count.inside.subtract(1, ordering: .sequentiallyConsistent)
                        count.done.add(1, ordering: .sequentiallyConsistent)
                    }
                }
            }
            try await group.waitForAll()
        }
        let most = count.most.load(ordering: .sequentiallyConsistent), done = count.done.load(ordering: .sequentiallyConsistent)
        #expect(most == 1)
        #expect(done == 8)
    }
}

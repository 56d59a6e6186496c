import Foundation
import Testing
@testable import SpeakerCore

/// `ThreadSignal` and `PhaseCompletion`, as the engine's ticks use them: the caller publishes data and
/// starts workers, each reads it and writes its own answer, the caller reads the answers after the phase.
@Suite struct ThreadSignalTests {
    /// Shared, unsynchronised memory: only the signals order its accesses.
    final class Board: @unchecked Sendable {
        let cells = UnsafeMutablePointer<Int>.allocate(capacity: 8)
        var round = 0
        init() { cells.initialize(repeating: 0, count: 8) }
        deinit { cells.deallocate() }
    }

    /// Three workers, thousands of rounds, every answer seen: with watching (posts mostly find the waiter
    /// watching) and with no watch at all (every wait sleeps on the semaphore). The rounds run on a thread of
    /// their own, so that a lost wake-up fails the test after a minute instead of hanging the suite.
    @Test(arguments: [ThreadSignal.defaultWatchNanoseconds, 0])
    func workersSeeEachRoundAndTheCallerSeesTheirAnswers(watchNanoseconds: UInt64) {
        let workers = 3, rounds = 5_000
        let board = Board()
        let done = PhaseCompletion(watchNanoseconds: watchNanoseconds)
        let starts = (0..<workers).map { _ in ThreadSignal(watchNanoseconds: watchNanoseconds) }
        for worker in 0..<workers {
            let start = starts[worker]
            Thread {
                while true {
                    start.wait()
                    let round = board.round
                    if round < 0 {
                        done.finished()
                        return
                    }
                    board.cells[worker + 1] = board.cells[0] + round
                    done.finished()
                }
            }.start()
        }
        let finished = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var wrong = 0
        Thread {
            for round in 1...rounds {
                board.round = round
                board.cells[0] = 2 * round
                done.expect(workers)
                for start in starts { start.post() }
                done.wait(expected: workers)
                for worker in 0..<workers where board.cells[worker + 1] != 3 * round { wrong += 1 }
            }
            board.round = -1
            done.expect(workers)
            for start in starts { start.post() }
            done.wait(expected: workers)
            finished.signal()
        }.start()
        guard finished.wait(timeout: .now() + 60) == .success else {
            Issue.record("the rounds did not finish within a minute: a wake-up was lost")
            return
        }
        #expect(wrong == 0)
    }

    /// Waiting for no workers returns at once.
    @Test func waitingForNoneReturns() {
        let done = PhaseCompletion()
        done.expect(0)
        done.wait(expected: 0)
    }
}

import Foundation

/// A persistent thread that runs one fixed job each time it is started, for the engine's ticks.
///
/// `@unchecked Sendable`: the engine thread and the worker never touch the job's data at the same
/// time. The engine writes what the job reads only while the worker waits for `run()`, and reads what
/// the job wrote only after `done` counted it finished; the signals order those accesses (release on
/// posting, acquire on waking). Between runs the worker watches for the next start for a moment before
/// it sleeps (`ThreadSignal`), so back-to-back ticks do not pay a sleeping thread's wake-up.
final class WorkerThread: @unchecked Sendable {
    private let start = ThreadSignal()
    private let done: PhaseCompletion
    private let job: () -> Void
    private var stopping = false

    /// Starts the thread; it waits until `run()`.
    /// - Parameters:
    ///   - name: the thread's name, for debuggers.
    ///   - done: told after each run of the job (and once when stopped).
    ///   - job: what one run does.
    init(name: String, done: PhaseCompletion, job: @escaping () -> Void) {
        self.done = done
        self.job = job
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Runs the job once on the worker; `done` is told when it has finished.
    func run() { start.post() }

    /// Ends the thread after any running job; `done` is told once more.
    func stop() {
        stopping = true
        start.post()
    }

    private func loop() {
        while true {
            start.wait()
            if stopping {
                done.finished()
                return
            }
            job()
            done.finished()
        }
    }
}

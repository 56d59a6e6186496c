import Dispatch
import Foundation

/// A persistent thread that runs one fixed job each time it is started, for the engine's ticks.
///
/// `@unchecked Sendable`: the engine thread and the worker never touch the job's data at the same
/// time. The engine writes what the job reads only while the worker waits on `start`, and reads what
/// the job wrote only after the worker signalled `done`; the two semaphores order those accesses.
final class WorkerThread: @unchecked Sendable {
    private let start = DispatchSemaphore(value: 0)
    private let done: DispatchSemaphore
    private let job: () -> Void
    private var stopping = false

    /// Starts the thread; it waits until `run()`.
    /// - Parameters:
    ///   - name: the thread's name, for debuggers.
    ///   - done: signalled after each run of the job (and once when stopped).
    ///   - job: what one run does.
    init(name: String, done: DispatchSemaphore, job: @escaping () -> Void) {
        self.done = done
        self.job = job
        let thread = Thread { [self] in loop() }
        thread.name = name
        thread.start()
    }

    /// Runs the job once on the worker; `done` is signalled when it has finished.
    func run() { start.signal() }

    /// Ends the thread after any running job; `done` is signalled once more.
    func stop() {
        stopping = true
        start.signal()
    }

    private func loop() {
        while true {
            start.wait()
            if stopping {
                done.signal()
                return
            }
            job()
            done.signal()
        }
    }
}

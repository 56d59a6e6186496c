import Dispatch
import Foundation

/// A thread that runs one body to its end and can be waited for (joined).
///
/// `@unchecked Sendable`: `threadID` is the only mutable state; the new thread writes it once before
/// signalling `started`, and `init` returns only after waiting for `started`, so every reader sees it.
final class ServiceThread: @unchecked Sendable {
    private let finished = DispatchSemaphore(value: 0)
    private let started = DispatchSemaphore(value: 0)
    private var threadID: pthread_t?

    /// Starts `body` on a new thread named `name`.
    init(name: String, body: @escaping @Sendable () -> Void) {
        let thread = Thread { [self] in
            threadID = pthread_self()
            started.signal()
            body()
            finished.signal()
        }
        thread.name = name
        thread.stackSize = 1 << 20
        thread.start()
        started.wait()
    }

    /// True when called on this thread.
    var isCurrent: Bool {
        guard let threadID else { return false }
        return pthread_equal(threadID, pthread_self()) != 0
    }

    /// Waits until the body has returned, at most `timeout` seconds (nil: for ever).
    /// - Returns: False on timeout.
    @discardableResult
    func join(timeout: Double? = nil) -> Bool {
        if let timeout {
            guard finished.wait(timeout: .now() + timeout) == .success else { return false }
        } else {
            finished.wait()
        }
        finished.signal()  // further joins return at once
        return true
    }
}

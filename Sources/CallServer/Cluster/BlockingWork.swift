import Foundation

/// Work that may wait long (for Redis, for another node): each piece on a thread of its own.
///
/// Not a concurrent `DispatchQueue`: its work runs on libdispatch's worker threads, as many as the
/// machine has cores, which every other queue of the process shares. A few calls waiting there for a
/// stalled Redis took them all, and a node in the same process could then not answer the call relayed
/// to it (ClusterTests, a loaded CI run: 503 after the 2 s relay timeout).
enum BlockingWork {
    /// Runs `body` on a new thread named `name`.
    static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread(block: body)
        thread.name = name
        thread.start()
    }
}

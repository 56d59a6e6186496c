import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One thread at a time: the engine's rule, checked in debug builds.
///
/// An engine is used by one thread at a time (its own workers aside, which it starts and waits for
/// inside `tick()`): a `submit` or `removeStream` from another thread during `tick()` would be a
/// silent race or a use after free, since the engine's state is unlocked (`@exclusivity(unchecked)`,
/// `unowned(unsafe)`). In debug builds each public entry point enters this check, which stops the
/// process with a message naming the call when another thread is inside the engine. Calls may nest
/// on one thread; handing the engine to another thread between calls is allowed. Release builds
/// compile it to nothing. Real-time safe: an atomic exchange, no allocation.
final class ConfinementCheck: Sendable {
    #if DEBUG
        /// The thread inside the engine (pthread_self), 0 when none.
        private let owner = Atomic<UInt>(0)
        /// Nesting depth of the owner's calls; only the owner touches it.
        nonisolated(unsafe) private var depth = 0
    #endif

    init() {}

    /// A public call begins.
    @inline(__always) func enter(_ call: StaticString) {
        #if DEBUG
            let me = UInt(pthread_self())
            let (exchanged, current) = owner.compareExchange(expected: 0, desired: me, ordering: .acquiring)
            if !exchanged && current != me {
                preconditionFailure("Engine.\(call) was called while another thread is inside the engine: use an engine from one thread at a time")
            }
            depth += 1
        #endif
    }

    /// The call begun by the matching `enter` ends.
    @inline(__always) func leave() {
        #if DEBUG
            depth -= 1
            if depth == 0 { owner.store(0, ordering: .releasing) }
        #endif
    }

    /// A query: no other thread may be inside the engine.
    @inline(__always) func check(_ call: StaticString) {
        #if DEBUG
            let current = owner.load(ordering: .acquiring)
            if current != 0 && current != UInt(pthread_self()) {
                preconditionFailure("Engine.\(call) was called while another thread is inside the engine: use an engine from one thread at a time")
            }
        #endif
    }
}

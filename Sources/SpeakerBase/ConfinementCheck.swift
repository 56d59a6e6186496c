import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One thread at a time: the rule of a type that is not thread-safe, checked in debug builds.
///
/// The engine, a `RoomRunner` and a `FileStreamReader` are each used by one thread at a time (the
/// engine's own workers aside, which it starts and waits for inside `tick()`): a call from another
/// thread during a call would be a silent race or a use after free, since their state is unlocked
/// (`@exclusivity(unchecked)`, `unowned(unsafe)`). In debug builds each public entry point enters
/// this check, which stops the process with a message naming the type and the call when another thread
/// is inside. Calls may nest on one thread; handing an instance to another thread between calls is
/// allowed. Release builds compile it to nothing. Real-time safe: an atomic exchange, no allocation.
public final class ConfinementCheck: Sendable {
    #if DEBUG
        /// The thread inside (pthread_self), 0 when none.
        private let owner = Atomic<UInt>(0)
        /// Nesting depth of the owner's calls; only the owner touches it.
        nonisolated(unsafe) private var depth = 0
        /// The guarded type, for the message.
        private let type: StaticString
    #endif

    /// - Parameter type: The guarded type's name (`Engine`), named in the message.
    public init(_ type: StaticString) {
        #if DEBUG
            self.type = type
        #endif
    }

    /// A public call begins.
    @inline(__always) public func enter(_ call: StaticString) {
        #if DEBUG
            let me = UInt(pthread_self())
            let (exchanged, current) = owner.compareExchange(expected: 0, desired: me, ordering: .acquiring)
            if !exchanged && current != me { violated(call) }
            depth += 1
        #endif
    }

    /// The call begun by the matching `enter` ends.
    @inline(__always) public func leave() {
        #if DEBUG
            depth -= 1
            if depth == 0 { owner.store(0, ordering: .releasing) }
        #endif
    }

    /// A query: no other thread may be inside.
    @inline(__always) public func check(_ call: StaticString) {
        #if DEBUG
            let current = owner.load(ordering: .acquiring)
            if current != 0 && current != UInt(pthread_self()) { violated(call) }
        #endif
    }

    #if DEBUG
        private func violated(_ call: StaticString) -> Never {
            preconditionFailure("\(type).\(call) was called while another thread is inside the \(type): use it from one thread at a time")
        }
    #endif
}

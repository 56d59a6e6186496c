import Synchronization

/// Carries out the registry's effects in the order it decided them, whichever thread decided.
///
/// The registry's decisions are made under its lock on two threads (the transport's and the media
/// loop's). Each decision's effects are queued here *inside* that lock (`enqueue`), so the queue holds
/// them in decision order; they are carried out *after* it (`drain`), by one thread at a time, from
/// the front: a connection's messages leave in the order they were decided, and no sending, closing
/// or logging happens under the registry's lock.
final class EffectExecutor: Sendable {
    private struct State {
        var queue: [Effect] = []
        var draining = false
    }
    private let state = Mutex(State())

    init() {}

    /// Queues a decision's effects. Call it while holding the lock the decision was made under.
    func enqueue(_ effects: [Effect]) {
        guard !effects.isEmpty else { return }
        state.withLock { $0.queue.append(contentsOf: effects) }
    }

    /// Carries out what is queued with `perform`, unless another thread is doing so (it then carries
    /// out these too, before it stops). Call it after releasing the decision's lock.
    func drain(_ perform: (Effect) -> Void) {
        var owner = false
        while true {
            let batch: [Effect]? = state.withLock { state in
                if !owner {
                    if state.draining { return nil }
                    state.draining = true
                    owner = true
                }
                if state.queue.isEmpty {
                    state.draining = false
                    return nil
                }
                defer { state.queue.removeAll(keepingCapacity: true) }
                return state.queue
            }
            guard let batch else { return }
            for effect in batch { perform(effect) }
        }
    }
}

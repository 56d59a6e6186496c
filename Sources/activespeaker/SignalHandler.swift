import Glibc

/// Installing signal handlers, the one way both the temporary-file cleanup and live runs need it.
enum SignalHandler {
    /// Installs `handler` for `number` (with an empty mask) and unblocks the signal for this thread.
    ///
    /// A parent may hand down a mask blocking the signal (processes spawned from a Dispatch worker
    /// thread inherit one that blocks nearly everything); the handler is useless unless it can run.
    /// - Parameter handler: must be async-signal-safe.
    static func install(_ number: Int32, _ handler: @convention(c) (Int32) -> Void) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        sigaction(number, &action, nil)
        var unblock = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, number)
        pthread_sigmask(SIG_UNBLOCK, &unblock, nil)
    }
}

import Foundation
import Synchronization

/// Keeps libwebsockets' TLS contexts from being created while a client's TLS handshake is under way.
///
/// libwebsockets 4.1.6 gives every context made with `LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT` (every TLS
/// server and `wss` client) a new OpenSSL ex-data index, kept in one process-wide variable. A client
/// stores its connection under the index of the moment when its handshake starts and looks it up again in
/// the certificate verify callback: if another TLS context was created in between, the lookup finds
/// nothing and the handshake fails ("connect SSL err 1"). Seen in the tests, which create servers and
/// clients in parallel.
///
/// So a TLS context is created only while no client handshake is under way, and a `wss` client counts as
/// one from its context's creation until its handshake ended (established, failed or closed). Client
/// connects therefore take turns. The wait is bounded (by the client's connect timeout, 10 s for a
/// server): after it the context is created anyway, at worst failing the handshake that held the turn
/// for so long.
enum TLSContextGate {
    private static let condition = NSCondition()
    /// Client handshakes under way; guarded by `condition`.
    nonisolated(unsafe) private static var handshakes = 0

    /// A client's turn, from its context's creation to the end of its handshake.
    final class Handshake: Sendable {
        private let ended = Atomic<Bool>(false)

        /// Ends the turn; later calls do nothing. Thread-safe.
        func end() {
            guard !ended.exchange(true, ordering: .acquiringAndReleasing) else { return }
            TLSContextGate.condition.lock()
            TLSContextGate.handshakes -= 1
            TLSContextGate.condition.broadcast()
            TLSContextGate.condition.unlock()
        }
    }

    /// Creates a TLS server's context once no client handshake is under way (waiting at most `timeout`).
    static func createServerContext(timeout: Double = 10, _ create: () -> OpaquePointer?) -> OpaquePointer? {
        condition.lock()
        defer { condition.unlock() }
        waitForHandshakes(until: Date().addingTimeInterval(timeout))
        return create()
    }

    /// Creates a `wss` client's context once no other client handshake is under way (waiting at most
    /// `timeout`), and starts this client's turn, which its owner must `end()`; no turn when `create` failed.
    static func createClientContext(timeout: Double, _ create: () -> OpaquePointer?) -> (OpaquePointer, Handshake)? {
        condition.lock()
        defer { condition.unlock() }
        waitForHandshakes(until: Date().addingTimeInterval(timeout))
        guard let context = create() else { return nil }
        handshakes += 1
        return (context, Handshake())
    }

    /// Called with `condition` locked.
    private static func waitForHandshakes(until deadline: Date) {
        while handshakes > 0 {
            if !condition.wait(until: deadline) { return }
        }
    }
}

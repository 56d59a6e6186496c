import CallProtocol
import Synchronization

/// The JSON of the server's messages, encoded once per broadcast.
///
/// A broadcast (a speaker change, a levels report, a participant joining) reaches the registry's
/// executor as one `send` effect per member and observer, all with the same message, one after the
/// other: the encoder keeps the last message's JSON and gives it again while the message is the same,
/// so a room of 64 observers costs one encoding and 63 comparisons instead of 64 encodings.
///
/// Safe from any thread (the executor drains on one thread at a time; the lock is uncontended).
final class BroadcastEncoder: Sendable {
    private struct State {
        var last: (message: ServerMessage, json: String)?
        var encodings = 0
    }
    private let state = Mutex(State())

    init() {}

    /// Messages encoded so far (for tests).
    var encodings: Int { state.withLock { $0.encodings } }

    /// `message` as JSON text.
    func json(of message: ServerMessage) -> String {
        state.withLock { state in
            if let last = state.last, last.message == message { return last.json }
            let json = message.json
            state.last = (message, json)
            state.encodings += 1
            return json
        }
    }
}

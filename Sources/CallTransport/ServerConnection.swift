internal import CWebSockets

/// The service thread's record of one connection of a `WebServer` (HTTP or WebSocket).
///
/// Owned by `WebServerCore` and touched only on the thread that runs libwebsockets' callbacks.
final class ServerConnection {
    /// The response being written, in stages across writeable callbacks.
    struct PendingResponse {
        enum Stage { case headers, body, closing }
        var response: HTTPResponse
        var sendsBody: Bool
        var closeAfter: Bool
        var stage: Stage = .headers
        var offset = 0
    }

    let id: Int
    /// The libwebsockets connection; valid until its `CLOSED`/`CLOSED_HTTP` callback.
    let wsi: OpaquePointer
    let peer: PeerAddress
    /// True once upgraded to a WebSocket.
    var isWebSocket = false

    // WebSocket state.
    /// Messages to send, each with `LibWebSockets.pre` bytes of headroom; `outbox[outboxHead...]` pending.
    var outbox: [[UInt8]] = []
    var outboxHead = 0
    /// Bytes of the messages in `outbox[outboxHead...]`.
    private(set) var queuedBytes = 0
    /// A close requested through `WebServer.close` or by `stop`: sent once `outbox` is empty.
    var pendingClose: (code: UInt16, reason: String)?
    /// True once a close frame was sent or received, or lws began closing the connection: no frame
    /// may follow (RFC 6455 §5.5.1), so nothing more is queued or written.
    private(set) var isClosing = false
    /// True once a message was refused: the rest of what the peer sends is not read as messages.
    private(set) var ignoresInput = false
    var assembler: MessageAssembler

    // HTTP state, per request.
    var request: HTTPRequest?
    /// True while the body of `request` is arriving.
    var awaitsBody = false
    /// The body length the request's `Content-Length` declared.
    var declaredBodyBytes = 0
    var response: PendingResponse?
    /// The number of the request whose answer the delegate gives later (`WebServerDelegate.handle(_:from:answer:)`);
    /// nil when none is awaited. An answer that arrives for another number is for a request gone.
    var awaitedAnswer: Int?
    /// Requests this connection has passed to the delegate.
    var requestsDispatched = 0

    init(id: Int, wsi: OpaquePointer, peer: PeerAddress, messageLimit: Int) {
        self.id = id
        self.wsi = wsi
        self.peer = peer
        self.assembler = MessageAssembler(limit: messageLimit)
    }

    var hasQueuedMessages: Bool { outboxHead < outbox.count }

    /// Whether `send` and `close` still apply: an open WebSocket with no close requested or begun.
    var acceptsMessages: Bool { isWebSocket && pendingClose == nil && !isClosing }

    /// Refuses the peer's input: closes with `code` (instead of any close requested before) as soon as
    /// possible, without the messages still queued, and ignores what the peer sends meanwhile.
    func refuse(code: UInt16, reason: String) {
        ignoresInput = true
        dropQueuedMessages()
        pendingClose = (code, reason)
    }

    /// Marks the close begun and drops what was still queued.
    func closeStarted() {
        isClosing = true
        dropQueuedMessages()
    }

    func enqueueMessage(_ message: [UInt8]) {
        outbox.append(message)
        queuedBytes += message.count
    }

    /// Forgets every queued message (a peer too slow to read them is being closed).
    func dropQueuedMessages() {
        outbox.removeAll()
        outboxHead = 0
        queuedBytes = 0
    }

    /// Removes and returns the next queued message.
    func dequeueMessage() -> [UInt8] {
        let message = outbox[outboxHead]
        queuedBytes -= message.count
        outbox[outboxHead] = []
        outboxHead += 1
        if outboxHead == outbox.count {
            outbox.removeAll(keepingCapacity: true)
            outboxHead = 0
        } else if outboxHead >= 64, outboxHead * 2 >= outbox.count {
            outbox.removeFirst(outboxHead)
            outboxHead = 0
        }
        return message
    }
}

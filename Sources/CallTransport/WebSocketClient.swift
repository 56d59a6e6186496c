import Synchronization

/// A WebSocket client for text messages, built on libwebsockets, with its own service thread.
///
/// Use: `init`, optionally `setHandler`, `connect`, then `send` from any thread and receive through
/// the handler or `messages`; `close` (or `deinit`) ends the connection and the thread.
/// Incoming messages are held to `maximumMessageBytes` (a larger one closes the connection with
/// 1009; binary frames with 1003; invalid UTF-8 with 1007), like the server does.
///
/// A `wss://` URL connects over TLS and verifies the server's certificate: its chain must lead to a
/// trusted certificate authority (the system's, or those of `certificateAuthorityFile`), it must be
/// valid now, and it must name the URL's host (DNS name or IP address, in its subjectAltName).
/// There is no way to turn these checks off.
///
/// `@unchecked Sendable`: the stored properties are immutable except `lifecycle`, a `Mutex`; the
/// libwebsockets state lives in `WebSocketClientCore`, whose invariants are stated there.
public final class WebSocketClient: @unchecked Sendable {
    private enum Lifecycle {
        case created
        case connecting
        case running(ServiceThread)
        case closed(ServiceThread?)
    }

    /// The URL as given.
    public let url: String
    /// Every text message received, in order; finished when the connection closes (or fails to open).
    /// Buffered without limit until read: a client that uses only the handler may ignore it.
    public let messages: AsyncStream<String>
    private let core: WebSocketClientCore
    private let lifecycle = Mutex<Lifecycle>(.created)

    /// Prepares a client; nothing is connected until `connect`.
    /// - Parameters:
    ///   - url: `ws://HOST:PORT/PATH?QUERY`; HOST an IPv4 address, `[IPv6]` or a name such as `localhost`.
    ///     Or `wss://HOST:PORT/PATH?QUERY` (TLS; port 443 by default; HOST a name or an IPv4 address).
    ///   - maximumMessageBytes: the largest message accepted from the server.
    ///   - certificateAuthorityFile: for `wss://`, a PEM file of the certificate authorities to trust
    ///     instead of the system's (a private or test CA); nil: the system's (`/etc/ssl/certs`).
    ///     Not used for `ws://`.
    /// - Throws: `TransportError` `.parse` for a malformed or unsupported URL, or a certificate
    ///   authority file that cannot be read or holds no PEM certificate (the file is named).
    public init(url: String, maximumMessageBytes: Int = 65536, certificateAuthorityFile: String? = nil) throws(TransportError) {
        precondition(maximumMessageBytes > 0, "maximumMessageBytes must be positive")
        self.url = url
        let endpoint = try EndpointURL(url)
        if endpoint.secure, let file = certificateAuthorityFile,
           let problem = PEMFile.problem(file, .certificate, role: "certificate authority file") {
            throw TransportError(url, .parse, problem)
        }
        let (stream, continuation) = AsyncStream<String>.makeStream()
        messages = stream
        core = WebSocketClientCore(url: url, endpoint: endpoint, maximumMessageBytes: maximumMessageBytes,
                                   certificateAuthorityFile: endpoint.secure ? certificateAuthorityFile : nil,
                                   continuation: continuation)
    }

    deinit {
        close()
    }

    /// Sets the callbacks, called on the client's service thread; call before `connect`.
    /// - Parameters:
    ///   - message: each complete text message.
    ///   - closed: once, when an open connection has closed: the close code the peer sent (or that
    ///     this client sent when it closed first), nil when the connection dropped without a close
    ///     frame; and the reason text.
    public func setHandler(message: @escaping @Sendable (String) -> Void,
                           closed: @escaping @Sendable (UInt16?, String) -> Void) {
        core.setHandlers(message: message, closed: closed)
    }

    /// Connects and performs the WebSocket handshake; blocks until open or failed.
    /// - Parameter timeout: seconds to wait at most.
    /// - Throws: `TransportError` `.connect` (refused, handshake rejected, closed; for `wss://` also a
    ///   certificate that fails verification: the message starts `certificate verify failed: ` and
    ///   says why, e.g. `unable to get local issuer certificate` or `hostname mismatch`) or `.timeout`.
    ///   Also `.connect` when called a second time or after `close`.
    public func connect(timeout: Double) throws(TransportError) {
        let mayConnect = lifecycle.withLock { state -> Bool in
            guard case .created = state else { return false }
            state = .connecting
            return true
        }
        guard mayConnect else { throw TransportError(url, .connect, "connect may be called once, before close") }
        let thread: ServiceThread
        do {
            thread = try core.open(timeout: timeout)
        } catch {
            lifecycle.withLock { $0 = .closed(nil) }
            throw error
        }
        let stillWanted = lifecycle.withLock { state -> Bool in
            guard case .connecting = state else {
                state = .closed(thread)  // `close` was called meanwhile
                return false
            }
            state = .running(thread)
            return true
        }
        guard stillWanted else {
            close()
            throw TransportError(url, .connect, "closed while connecting")
        }
        do {
            try core.waitUntilOpen(timeout: timeout)
        } catch {
            close()
            throw error
        }
    }

    /// Queues a text message. Thread-safe, never blocks on the network; ignored after close.
    /// Messages sent before `connect` go out once the connection is open.
    public func send(_ text: String) {
        core.enqueue(WebServerCore.framed(text))
    }

    /// Queues one binary message (raw audio to a PCM input, say); as `send(_:)` otherwise.
    public func send(bytes: [UInt8]) {
        core.enqueue(WebServerCore.framed(bytes: bytes))
    }

    /// Closes the connection (a close frame of code 1000, after the queued messages) and ends the
    /// service thread, waiting for it (at most 2.5 s before cutting the connection). Idempotent;
    /// also done by `deinit` (a handler that captures the client strongly keeps it alive: call `close`).
    /// Called from the handler it only requests the close.
    public func close() {
        let thread = lifecycle.withLock { state -> ServiceThread? in
            switch state {
            case .created, .connecting:
                state = .closed(nil)
                return nil
            case .running(let thread):
                state = .closed(thread)
                return thread
            case .closed(let thread):
                return thread
            }
        }
        guard let thread else {
            core.finishUnopened()
            return
        }
        core.requestStop()
        if thread.isCurrent { return }
        if !thread.join(timeout: 2.5) {
            core.forceStop()
            thread.join()
        }
    }

    /// The server's address, once connected.
    public var peer: PeerAddress? { core.addresses().peer }
    /// This end's address, once connected.
    public var localAddress: PeerAddress? { core.addresses().local }
}

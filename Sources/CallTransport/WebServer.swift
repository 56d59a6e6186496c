internal import CWebSockets
import Synchronization

/// An HTTP and WebSocket server on one port, built on libwebsockets.
///
/// With a `TLSIdentity` the port serves https and wss only (HTTP/1.1 over TLS); a plain
/// request there fails the TLS handshake. Without one it serves plain http and ws.
///
/// Plain HTTP requests (with bodies up to `maximumBodyBytes`, framed by `Content-Length` only; see
/// `RequestFraming`) go to `WebServerDelegate.handle`; a WebSocket upgrade on one of `webSocketPaths`
/// opens a connection whose text messages go to the delegate, and one on any other path is answered 404.
///
/// Threading: one service thread runs libwebsockets and calls the delegate. `send` and `close` may be
/// called from any thread (the delegate's methods included): they queue the work under a lock and wake
/// the service thread with `lws_cancel_service`; only the service thread writes to sockets.
///
/// The server keeps a strong reference to the delegate until `stop()` returns.
///
/// `@unchecked Sendable`: the stored properties are immutable except `lifecycle`, a `Mutex`; the
/// libwebsockets state lives in `WebServerCore`, whose invariants are stated there.
public final class WebServer: @unchecked Sendable {
    private enum Lifecycle {
        case created
        case running(ServiceThread)
        case stopped(ServiceThread?)
    }

    /// The address listened on, as given.
    public let host: String
    /// The bound TCP port (the system's choice when 0 was asked for).
    public let port: Int
    /// The certificate and key served, nil for plain http and ws.
    public let tls: TLSIdentity?
    private let core: WebServerCore
    private let lifecycle = Mutex<Lifecycle>(.created)

    /// Creates the server and binds its listening socket; serving starts with `start()`.
    /// - Parameters:
    ///   - host: a numeric IPv4 or IPv6 address (`127.0.0.1`, `::1`, `0.0.0.0`, `::` for all
    ///     interfaces, IPv4 included) or `localhost` (= `127.0.0.1`).
    ///   - port: the TCP port, 0 for any free port (see `port`).
    ///   - maximumMessageBytes: the largest WebSocket text message accepted; a larger one closes its
    ///     connection with code 1009.
    ///   - maximumBodyBytes: the largest HTTP request body accepted; a larger one is answered 413 and
    ///     the connection closed.
    ///   - maximumQueuedBytes: the most bytes waiting to be sent on one WebSocket; a peer that lets
    ///     more pile up (it stopped reading) is closed with code 1008 and its queue dropped.
    ///   - webSocketPaths: the request paths (without query) on which a WebSocket upgrade is accepted;
    ///     an upgrade request for any other path is answered 404 and not upgraded. Empty: none.
    ///   - binaryPaths: WebSocket paths (upgrades accepted there too) whose connections may also send binary
    ///     messages, handed to `WebServerDelegate.webSocketReceived(_:bytes:)`; elsewhere a binary message
    ///     closes its connection with 1003.
    ///   - maximumConnectionsPerAddress: the most connections (HTTP and WebSocket) one peer address may
    ///     hold open; more are closed as soon as they are accepted, before anything is read.
    ///   - headerTimeout: seconds a connection may take to send a request's headers (or sit idle
    ///     between keep-alive requests) before it is closed.
    ///   - tls: the certificate chain and private key for https and wss; nil: plain http and ws.
    ///   - customHeaders: names of headers libwebsockets has no token for (`x-…`, `activespeaker-…`) that
    ///     a request should keep; the others are dropped (libwebsockets 4.1 cannot list them).
    ///   - delegate: receives requests and messages, on the service thread.
    /// - Throws: `TransportError` `.parse` for an unsupported host or port, `.listen` if the socket
    ///   cannot be bound (port in use, address not on this machine) or a TLS file cannot be used (the
    ///   message names the file: unreadable, not PEM, or a key that does not match the certificate).
    public init(host: String = "127.0.0.1", port: Int = 0, maximumMessageBytes: Int = 65536,
                maximumBodyBytes: Int = 65536, maximumQueuedBytes: Int = 4 << 20, webSocketPaths: Set<String> = [],
                binaryPaths: Set<String> = [], maximumConnectionsPerAddress: Int = 64, headerTimeout: Int = 5, tls: TLSIdentity? = nil,
                customHeaders: Set<String> = [], delegate: any WebServerDelegate) throws(TransportError) {
        precondition(maximumMessageBytes > 0 && maximumBodyBytes >= 0 && maximumQueuedBytes > 0, "limits must be positive")
        precondition(maximumConnectionsPerAddress > 0 && headerTimeout > 0, "limits must be positive")
        self.host = host
        self.tls = tls
        core = try WebServerCore(host: host, port: port, maximumMessageBytes: maximumMessageBytes,
                                 maximumBodyBytes: maximumBodyBytes, maximumQueuedBytes: maximumQueuedBytes,
                                 webSocketPaths: webSocketPaths, binaryPaths: binaryPaths,
                                 maximumConnectionsPerAddress: maximumConnectionsPerAddress,
                                 headerTimeout: headerTimeout, tls: tls, customHeaders: customHeaders, delegate: delegate)
        self.port = core.port
    }

    deinit {
        stop()
    }

    /// Starts the service thread. Connections made before are served from now on. Does nothing if
    /// already started or stopped.
    public func start() {
        lifecycle.withLock { state in
            guard case .created = state else { return }
            let core = self.core
            state = .running(ServiceThread(name: "WebServer :\(port)") { core.serve() })
        }
    }

    /// Closes every connection (WebSockets with a close frame of code 1001 after the messages already
    /// queued), ends the service thread and waits for it; if the thread has not ended after 2.5 s the
    /// rest is cut without close frames. The delegate hears `webSocketClosed` for every open
    /// connection before this returns. Idempotent; also done by `deinit`.
    /// Called from a delegate method it only requests the stop (the thread cannot wait for itself).
    public func stop() {
        let (thread, unstarted) = lifecycle.withLock { state -> (ServiceThread?, Bool) in
            switch state {
            case .created:
                state = .stopped(nil)
                return (nil, true)
            case .running(let thread):
                state = .stopped(thread)
                return (thread, false)
            case .stopped(let thread):
                return (thread, false)
            }
        }
        if unstarted {
            core.destroyUnstarted()
            return
        }
        guard let thread else { return }
        core.requestStop()
        if thread.isCurrent { return }
        if !thread.join(timeout: 2.5) {
            core.forceStop()
            thread.join()
        }
    }

    /// Queues a text message for a WebSocket connection. Thread-safe, never blocks on the network.
    /// Ignored if the connection has closed, a close was requested for it, or a close frame was sent or
    /// received on it (what was still queued then is dropped).
    public func send(_ text: String, to connection: ConnectionID) {
        core.enqueue(.send(connection.rawValue, WebServerCore.framed(text)))
    }

    /// Closes a WebSocket connection after the messages queued before this call have been sent.
    /// Thread-safe. Ignored for a closed connection.
    /// - Parameters:
    ///   - code: the close code (RFC 6455 §7.4), e.g. 1000 normal, 4000…4999 application codes.
    ///   - reason: at most 123 bytes of UTF-8 (longer is cut).
    public func close(_ connection: ConnectionID, code: UInt16 = 1000, reason: String = "") {
        core.enqueue(.close(connection.rawValue, code, reason))
    }

    /// The number of open connections (HTTP and WebSocket) the service thread holds; for tests.
    var connectionCount: Int { core.connectionCountSnapshot() }

    /// The connections `host` holds, as counted against `maximumConnectionsPerAddress`; for tests.
    func connectionCount(from host: String) -> Int { core.connectionCount(from: host) }
}

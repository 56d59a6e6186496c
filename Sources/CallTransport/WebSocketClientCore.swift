internal import CWebSockets
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The libwebsockets side of a `WebSocketClient`: its context, its one connection and its callback.
///
/// `@unchecked Sendable`. Invariants:
/// - `url`, `endpoint`, `limit`, `continuation` and the C strings are set in `init` and never change;
///   `context` is written once in `open` before `shared.contextLive` is set (under the lock) and the
///   service thread starts; other threads use it only for `lws_cancel_service`, under the `shared`
///   lock while `contextLive` is true, which is cleared before `lws_context_destroy`.
/// - `shared` (a `Mutex`), `forced` (an atomic) and `opened` (a semaphore) are what other threads touch.
/// - Everything else (`wsi`, `outbox`, `assembler`, close state, `verificationFailure`) is touched
///   only by the thread running libwebsockets' callbacks: the caller of `open` during
///   `lws_client_connect_via_info`, before the service thread starts, and then only the service thread.
/// - The C callback finds this object through the context user pointer (`lws_context_user`),
///   unretained: the service thread's closure keeps the core alive for as long as the context exists.
///   A client context has exactly one connection, so no per-session data is needed.
final class WebSocketClientCore: @unchecked Sendable {
    enum Outcome {
        case pending
        case open
        case failed(String)
    }

    struct Shared {
        var commands: [[UInt8]] = []
        var wakePending = false
        /// True while `lws_cancel_service` may be called on `context`.
        var contextLive = false
        var stopRequested = false
        var outcome = Outcome.pending
        var messageHandler: (@Sendable (String) -> Void)?
        var closedHandler: (@Sendable (UInt16?, String) -> Void)?
        var peer: PeerAddress?
        var local: PeerAddress?
    }

    let url: String
    let endpoint: EndpointURL
    private let continuation: AsyncStream<String>.Continuation
    private let shared = Mutex(Shared())
    private let forced = Atomic<Bool>(false)
    private let opened = DispatchSemaphore(value: 0)
    private let protocols: UnsafeMutablePointer<lws_protocols>
    private let protocolName: UnsafeMutablePointer<CChar>
    private let cHost: UnsafeMutablePointer<CChar>
    private let cPath: UnsafeMutablePointer<CChar>
    private let cHostHeader: UnsafeMutablePointer<CChar>
    /// The PEM file of trusted certificate authorities (wss only); nil: the system's.
    private let cCertificateAuthorityFile: UnsafeMutablePointer<CChar>?
    /// The one protocol offered by ALPN over TLS: HTTP/1.1, for the WebSocket upgrade (not h2).
    private let cALPN: UnsafeMutablePointer<CChar>
    private var context: OpaquePointer?
    /// A `wss` client's turn among TLS handshakes (see `TLSContextGate`), set in `open` before the
    /// service thread starts; `end()` is thread-safe and idempotent.
    private var handshake: TLSContextGate.Handshake?

    // Service-thread state.
    private var wsi: OpaquePointer?
    private var established = false
    private var assembler: MessageAssembler
    private var outbox: [[UInt8]] = []
    private var outboxHead = 0
    private var stopSeen = false
    private var closeRequested = false
    private var localClose: (code: UInt16, reason: String)?
    private var peerClose: (code: UInt16, reason: String)?
    private var closedReported = false
    /// Why OpenSSL refused the server's certificate, when it did (from the verify callback).
    private var verificationFailure: String?

    init(url: String, endpoint: EndpointURL, maximumMessageBytes: Int, certificateAuthorityFile: String?,
         continuation: AsyncStream<String>.Continuation) {
        self.url = url
        self.endpoint = endpoint
        self.continuation = continuation
        assembler = MessageAssembler(limit: maximumMessageBytes)
        protocolName = strdup("activespeaker-client")
        cHost = strdup(endpoint.host)
        cPath = strdup(endpoint.pathAndQuery)
        cHostHeader = strdup(endpoint.hostHeader)
        cCertificateAuthorityFile = certificateAuthorityFile.map { strdup($0) }
        cALPN = strdup("http/1.1")
        protocols = .allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(protocolName)
        protocols[0].callback = { wsi, reason, user, input, length in
            guard let wsi, let context = lws_get_context(wsi), let core = lws_context_user(context) else {
                return lws_callback_http_dummy(wsi, reason, user, input, length)
            }
            return Unmanaged<WebSocketClientCore>.fromOpaque(core).takeUnretainedValue()
                .callback(wsi, reason, user, input, length)
        }
    }

    deinit {
        protocols.deinitialize(count: 2)
        protocols.deallocate()
        free(protocolName)
        free(cHost)
        free(cPath)
        free(cHostHeader)
        free(cCertificateAuthorityFile)
        free(cALPN)
    }

    func setHandlers(message: @escaping @Sendable (String) -> Void, closed: @escaping @Sendable (UInt16?, String) -> Void) {
        shared.withLock {
            $0.messageHandler = message
            $0.closedHandler = closed
        }
    }

    func addresses() -> (peer: PeerAddress?, local: PeerAddress?) {
        shared.withLock { ($0.peer, $0.local) }
    }

    // MARK: Other threads

    /// Creates the context, starts connecting and starts the service thread.
    func open(timeout: Double) throws(TransportError) -> ServiceThread {
        LibWebSockets.configureLogging()
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.gid = -1
        info.uid = -1
        info.timeout_secs = 5
        info.connect_timeout_secs = UInt32(max(1, min(timeout.rounded(.up) + 1, 600)))
        info.user = Unmanaged.passUnretained(self).toOpaque()
        if endpoint.secure {
            // The client TLS context: the system's CAs, or only those of the given file.
            info.options = UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            if let cCertificateAuthorityFile {
                info.options |= UInt64(LWS_SERVER_OPTION_DISABLE_OS_CA_CERTS)
                info.client_ssl_ca_filepath = UnsafePointer(cCertificateAuthorityFile)
            }
        }
        LibWebSockets.clearLastError()
        let created: OpaquePointer?
        if endpoint.secure {
            let turn = TLSContextGate.createClientContext(timeout: timeout) { lws_create_context(&info) }
            (created, handshake) = (turn?.0, turn?.1)
        } else {
            created = lws_create_context(&info)
        }
        guard let context = created else {
            finishUnopened()
            throw TransportError(url, .connect, LibWebSockets.lastError(orElse: "lws_create_context failed"))
        }
        self.context = context
        var connection = lws_client_connect_info()
        connection.context = context
        connection.address = UnsafePointer(cHost)
        connection.port = Int32(endpoint.port)
        connection.path = UnsafePointer(cPath)
        connection.host = UnsafePointer(cHostHeader)
        connection.origin = UnsafePointer(cHostHeader)
        connection.ietf_version_or_minus_one = -1
        connection.local_protocol_name = UnsafePointer(protocolName)
        if endpoint.secure {
            // Verification of the chain and of the host name (lws checks the `host` above, cut at its
            // colon, as an IP address or DNS name) stays on: no LCCSCF_ALLOW_* or SKIP_* flag is set.
            connection.ssl_connection = Int32(LCCSCF_USE_SSL.rawValue)
            connection.alpn = UnsafePointer(cALPN)
        }
        let started = lws_client_connect_via_info(&connection)
        if started == nil {
            var message = LibWebSockets.lastError(orElse: "lws_client_connect_via_info failed")
            if case .failed(let reason) = shared.withLock({ $0.outcome }) { message = reason }
            lws_context_destroy(context)
            self.context = nil
            handshake?.end()
            finishUnopened()
            throw TransportError(url, .connect, message)
        }
        shared.withLock { $0.contextLive = true }
        return ServiceThread(name: "WebSocketClient") { [self] in serve() }
    }

    /// Waits for the handshake's outcome.
    func waitUntilOpen(timeout: Double) throws(TransportError) {
        let signalled = opened.wait(timeout: .now() + max(0, timeout)) == .success
        if signalled { opened.signal() }
        switch shared.withLock({ $0.outcome }) {
        case .open: return
        case .failed(let message): throw TransportError(url, .connect, message)
        case .pending: throw TransportError(url, .timeout, "no answer within \(timeout) s")
        }
    }

    func enqueue(_ message: [UInt8]) {
        shared.withLock { shared in
            guard !shared.stopRequested else { return }
            shared.commands.append(message)
            wake(&shared)
        }
    }

    func requestStop() {
        shared.withLock { shared in
            guard !shared.stopRequested else { return }
            shared.stopRequested = true
            wake(&shared)
        }
    }

    func forceStop() {
        forced.store(true, ordering: .releasing)
        shared.withLock { shared in
            if shared.contextLive, let context { lws_cancel_service(context) }
        }
    }

    /// Called with the `shared` lock held.
    private func wake(_ shared: inout Shared) {
        guard !shared.wakePending, shared.contextLive, let context else { return }
        shared.wakePending = true
        lws_cancel_service(context)
    }

    /// Ends the message stream of a client that never had a service thread.
    func finishUnopened() {
        continuation.finish()
    }

    // MARK: The service thread

    private func serve() {
        guard let context else { return }
        while !forced.load(ordering: .acquiring) {
            if stopSeen && wsi == nil { break }
            if lws_service(context, 0) < 0 { break }
        }
        shared.withLock { $0.contextLive = false }
        lws_context_destroy(context)
        handshake?.end()
        wsi = nil
        if established {
            reportClosed()
        } else {
            shared.withLock { if case .pending = $0.outcome { $0.outcome = .failed("closed before the handshake completed") } }
            opened.signal()
        }
        continuation.finish()
    }

    private func callback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                          _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            drain()
            return 0
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            handshake?.end()
            self.wsi = wsi
            established = true
            let peer = LibWebSockets.peerAddress(of: wsi)
            let local = LibWebSockets.localAddress(of: wsi)
            shared.withLock {
                $0.outcome = .open
                $0.peer = peer
                $0.local = local
            }
            opened.signal()
            if outboxHead < outbox.count || closeRequested { lws_callback_on_writable(wsi) }
            return 0
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            var message = "libwebsockets: " + (input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "connection error")
            // lws reports a refused certificate as an opaque SSL error ("connect SSL err 1: error:00000001:
            // lib(0)::reason(1)"): say what OpenSSL's verification found instead.
            if let verificationFailure { message = "certificate verify failed: " + verificationFailure }
            handshake?.end()
            self.wsi = nil
            if established {
                reportClosed()
            } else {
                shared.withLock { if case .pending = $0.outcome { $0.outcome = .failed(message) } }
                opened.signal()
            }
            return 0
        case LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION:
            // user: the X509_STORE_CTX; length: OpenSSL's preverify_ok. lws refuses the certificate
            // itself when preverify_ok is 0; 0 returned here adds no objection of ours.
            if length == 0, verificationFailure == nil, let user {
                var depth: Int32 = 0
                let code = activespeaker_x509_verify_error(user, &depth)
                let reason = activespeaker_x509_verify_error_string(code).map { String(cString: $0) } ?? "error \(code)"
                verificationFailure = depth == 0 ? reason : "\(reason) (at depth \(depth) of the chain)"
            }
            return 0
        case LWS_CALLBACK_CLIENT_RECEIVE:
            let part = UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length)
            do {
                if case .text(let text) = try assembler.append(
                    part, isBinary: lws_frame_is_binary(wsi) != 0, isFinal: lws_is_final_fragment(wsi) != 0)
                {
                    shared.withLock { $0.messageHandler }?(text)
                    continuation.yield(text)
                }
                return 0
            } catch {
                localClose = (error.closeCode, error.reason)
                LibWebSockets.setCloseReason(wsi, code: error.closeCode, reason: error.reason)
                return -1
            }
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            return writeNext(wsi)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            if let input, length >= 2 {
                let bytes = UnsafeRawBufferPointer(start: input, count: length)
                let code = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
                peerClose = (code, String(decoding: bytes.dropFirst(2), as: UTF8.self))
            } else {
                peerClose = (1005, "")
            }
            return 0
        case LWS_CALLBACK_CLIENT_CLOSED:
            self.wsi = nil
            reportClosed()
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    private func drain() {
        let (commands, stop) = shared.withLock { shared in
            shared.wakePending = false
            defer { shared.commands.removeAll() }
            return (shared.commands, shared.stopRequested)
        }
        if !closeRequested { outbox.append(contentsOf: commands) }
        if stop {
            stopSeen = true
            if wsi != nil { closeRequested = true }
        }
        if let wsi, established, outboxHead < outbox.count || closeRequested { lws_callback_on_writable(wsi) }
    }

    private func writeNext(_ wsi: OpaquePointer) -> Int32 {
        if outboxHead < outbox.count {
            var message = outbox[outboxHead]
            outbox[outboxHead] = []
            outboxHead += 1
            if outboxHead == outbox.count {
                outbox.removeAll(keepingCapacity: true)
                outboxHead = 0
            }
            let count = message.count - LibWebSockets.pre
            // The headroom's first byte says the kind (`WebServerCore.framed(bytes:)`); lws overwrites the
            // headroom with the frame's header as it writes, so it is read first.
            let kind = message[0] == WebServerCore.binaryMark ? LWS_WRITE_BINARY : LWS_WRITE_TEXT
            let written = message.withUnsafeMutableBufferPointer {
                lws_write(wsi, $0.baseAddress! + LibWebSockets.pre, count, kind)
            }
            guard written >= count else { return -1 }
            if outboxHead < outbox.count || closeRequested { lws_callback_on_writable(wsi) }
            return 0
        }
        if closeRequested {
            localClose = localClose ?? (1000, "")
            LibWebSockets.setCloseReason(wsi, code: 1000, reason: "")
            return -1
        }
        return 0
    }

    /// Calls the closed handler and ends the stream, once.
    private func reportClosed() {
        guard !closedReported else { return }
        closedReported = true
        let close = peerClose ?? localClose
        shared.withLock { $0.closedHandler }?(close?.code, close?.reason ?? "")
        continuation.finish()
    }
}

internal import CWebSockets
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The libwebsockets side of a `WebServer`: the context, its callback and the connections.
///
/// `@unchecked Sendable`. Invariants:
/// - `context`, `port` and the configuration are set in `init` and never change (the context pointer
///   stays valid until `lws_context_destroy`, which happens only after `inbox.accepting` is false,
///   so `lws_cancel_service` is only called, under the `inbox` lock, on a live context).
/// - `inbox` (a `Mutex`) and `forced`/`openConnections` (atomics) are the only state other threads touch.
/// - Everything else (`connections`, `nextID`, `stopHandled`, `delegate`, `scratch`) is touched only
///   by the thread that runs libwebsockets' callbacks: the service thread while it runs, or the thread
///   that creates or destroys the context before the service thread starts or when it never started.
///   These never overlap.
/// - The C callback finds this object through the context user pointer (`lws_context_user`), which
///   is unretained: the `WebServer` and the service thread's closure both keep the core alive for as
///   long as the context exists. Each connection's per-session data (`per_session_data_size` =
///   one `Int`) holds its id, the key into `connections`; 0 means none assigned yet.
final class WebServerCore: @unchecked Sendable {
    /// Work handed to the service thread.
    enum Command {
        case send(Int, [UInt8])
        case close(Int, UInt16, String)
        /// A delegate's later answer to request `request` of connection `connection`.
        case answer(connection: Int, request: Int, HTTPResponse, closeAfter: Bool)
    }

    struct Inbox {
        var commands: [Command] = []
        /// A `lws_cancel_service` is outstanding: the service thread will drain.
        var wakePending = false
        /// False once the context is being destroyed: nothing may touch it any more.
        var accepting = true
        var stopRequested = false
    }

    /// The bound port; set in `init`.
    private(set) var port = 0
    let maximumMessageBytes: Int
    /// The most bytes queued for one WebSocket before it is closed as too slow.
    let maximumQueuedBytes: Int
    let maximumBodyBytes: Int
    /// The paths on which a WebSocket upgrade is accepted.
    let webSocketPaths: Set<String>
    /// WebSocket paths whose connections may send binary messages (`WebServerDelegate.webSocketReceived(_:bytes:)`).
    let binaryPaths: Set<String>
    /// The most connections one peer address may hold.
    let maximumConnectionsPerAddress: Int
    private let address: String
    private var context: OpaquePointer?
    private let protocols: UnsafeMutablePointer<lws_protocols>
    private let protocolName: UnsafeMutablePointer<CChar>
    private let interface: UnsafeMutablePointer<CChar>?
    /// The TLS file paths and ALPN list given to lws (empty without TLS), kept for the context's life.
    private let tlsStrings: [UnsafeMutablePointer<CChar>]

    private let inbox = Mutex(Inbox())
    private let forced = Atomic<Bool>(false)
    private let openConnections = Atomic<Int>(0)

    // Service-thread state.
    private var delegate: (any WebServerDelegate)?
    private var connections: [Int: ServerConnection] = [:]
    private var nextID = 1
    private var stopHandled = false
    /// Open connections per peer host, counted from accept (`FILTER_NETWORK_CONNECTION`) to the
    /// connection's end (`WSI_DESTROY`), whatever it became. Changed on the service thread only; the
    /// lock is for readers elsewhere (`connectionCount(from:)`).
    private let connectionsPerHost = Mutex<[String: Int]>([:])
    /// The host of the socket admitted last, until its connection object exists (`WSI_CREATE`).
    private var admittedHost: String?
    /// The host of each counted connection.
    private var hostOfConnection: [OpaquePointer: String] = [:]
    private var scratch: [UInt8] = []

    /// Bytes of an HTTP body written per writeable callback.
    private static let bodyChunk = 16384
    /// Seconds a delegate may take to answer a request later (`handle(_:from:answer:)`).
    static let answerTimeout = 30
    /// Bytes of a request's head (request line and headers, as lws stores them) that lws keeps: a head
    /// that does not fit is closed by lws without a status line (libwebsockets 4.1.6 gives the server no
    /// say). 16 KiB, so that a request target over `maximumTargetBytes` still fits and is answered 414;
    /// each connection still sending its head holds one such buffer (at most 16 MiB for the pool).
    static let headerSpace = 16_384
    /// The longest request target (path and query) served, bytes; a longer one is answered 414. Also the
    /// most bytes of the headers lws knows by name (`Host`, `Cookie`…) served; more is answered 431.
    /// Headers lws does not know are kept within `headerSpace` but cannot be counted.
    static let maximumTargetBytes = 8_192
    /// Seconds a connection may take to send a request's headers, or to take an answer.
    let headerTimeout: Int
    /// Lower-cased names of headers lws has no token for that requests keep (`WebServer.init`).
    let customHeaders: Set<String>

    init(host: String, port: Int, maximumMessageBytes: Int, maximumBodyBytes: Int, maximumQueuedBytes: Int,
         webSocketPaths: Set<String>, binaryPaths: Set<String>, maximumConnectionsPerAddress: Int, headerTimeout: Int,
         tls: TLSIdentity?, customHeaders: Set<String>, delegate: any WebServerDelegate) throws(TransportError) {
        let display = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        address = display
        guard (0...65535).contains(port) else { throw TransportError(display, .parse, "port must be 0…65535") }
        let (iface, ipv6) = try Self.listenInterface(host, display: display)
        if let tls {
            // lws would log only "problem getting cert" and fail: name the file and what is wrong.
            if let problem = PEMFile.problem(tls.certificateChainPath, .certificate, role: "TLS certificate chain")
                ?? PEMFile.problem(tls.privateKeyPath, .privateKey, role: "TLS private key") {
                throw TransportError(display, .listen, problem)
            }
        }
        self.maximumMessageBytes = maximumMessageBytes
        self.maximumQueuedBytes = maximumQueuedBytes
        self.maximumBodyBytes = maximumBodyBytes
        self.webSocketPaths = webSocketPaths.union(binaryPaths)
        self.binaryPaths = binaryPaths
        self.maximumConnectionsPerAddress = maximumConnectionsPerAddress
        self.headerTimeout = headerTimeout
        self.customHeaders = Set(customHeaders.map { $0.lowercased() })
        self.delegate = delegate
        LibWebSockets.configureLogging()

        protocolName = strdup("activespeaker")
        interface = iface.map { strdup($0) }
        // Certificate chain, private key, and the one protocol offered by ALPN: HTTP/1.1 (lws would
        // also offer h2, whose streams this server does not handle).
        tlsStrings = tls.map { [strdup($0.certificateChainPath), strdup($0.privateKeyPath), strdup("http/1.1")] } ?? []
        protocols = .allocate(capacity: 2)
        protocols.initialize(repeating: lws_protocols(), count: 2)
        protocols[0].name = UnsafePointer(protocolName)
        protocols[0].per_session_data_size = MemoryLayout<Int>.size
        protocols[0].callback = { wsi, reason, user, input, length in
            guard let wsi, let context = lws_get_context(wsi), let core = lws_context_user(context) else {
                return lws_callback_http_dummy(wsi, reason, user, input, length)
            }
            return Unmanaged<WebServerCore>.fromOpaque(core).takeUnretainedValue()
                .callback(wsi, reason, user, input, length)
        }

        var info = lws_context_creation_info()
        info.port = Int32(port)
        info.iface = UnsafePointer(interface)
        info.protocols = UnsafePointer(protocols)
        info.options = ipv6 ? 0 : UInt64(LWS_SERVER_OPTION_DISABLE_IPV6)
        if !tlsStrings.isEmpty {
            // Not LWS_SERVER_OPTION_ALLOW_NON_SSL_ON_SSL_PORT nor REDIRECT_HTTP_TO_HTTPS: a plain
            // request on the TLS port fails its handshake and is closed.
            info.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            info.ssl_cert_filepath = UnsafePointer(tlsStrings[0])
            info.ssl_private_key_filepath = UnsafePointer(tlsStrings[1])
            info.alpn = UnsafePointer(tlsStrings[2])
        }
        info.gid = -1
        info.uid = -1
        // Each connection still sending its headers holds one of the pool's header buffers (4 KiB): a
        // pool far larger than one address may hold (`maximumConnectionsPerAddress`), released when a
        // connection is slower than `headerTimeout`, keeps slow or idle peers from starving the others.
        info.max_http_header_pool = 1024
        info.max_http_header_data = UInt16(Self.headerSpace)
        info.timeout_secs = UInt32(headerTimeout)
        info.timeout_secs_ah_idle = UInt32(headerTimeout)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        LibWebSockets.clearLastError()
        let created = tlsStrings.isEmpty
            ? lws_create_context(&info) : TLSContextGate.createServerContext { lws_create_context(&info) }
        guard let context = created else {
            // Every stored property is initialised here, so `deinit` runs and frees the C memory.
            let message = LibWebSockets.lastError(orElse: "lws_create_context failed")
            throw TransportError(display, .listen, message)
        }
        guard let vhost = lws_get_vhost_by_name(context, "default"),
              case let bound = Int(lws_get_vhost_listen_port(vhost)), bound > 0 else {
            lws_context_destroy(context)
            throw TransportError(display, .listen, "libwebsockets: no listening socket")
        }
        self.context = context
        self.port = bound
    }

    deinit {
        protocols.deinitialize(count: 2)
        protocols.deallocate()
        free(protocolName)
        free(interface)
        for string in tlsStrings { free(string) }
    }

    /// The `iface` for libwebsockets (nil: all interfaces) and whether the socket is IPv6.
    private static func listenInterface(_ host: String, display: String) throws(TransportError) -> (String?, Bool) {
        var name = host
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        switch name {
        case "localhost": return ("127.0.0.1", false)
        case "0.0.0.0": return (nil, false)
        case "::": return (nil, true)
        default: break
        }
        var v4 = in_addr()
        if inet_pton(AF_INET, name, &v4) == 1 { return (name, false) }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, name, &v6) == 1 { return (name, true) }
        throw TransportError(display, .parse, "host must be a numeric IPv4/IPv6 address or localhost")
    }

    /// A text message as bytes with `LWS_PRE` bytes of headroom.
    static func framed(_ text: String) -> [UInt8] {
        var text = text
        return text.withUTF8 { utf8 in
            [UInt8](unsafeUninitializedCapacity: LibWebSockets.pre + utf8.count) { buffer, count in
                buffer.baseAddress!.initialize(repeating: 0, count: LibWebSockets.pre)
                if let source = utf8.baseAddress {
                    (buffer.baseAddress! + LibWebSockets.pre).initialize(from: source, count: utf8.count)
                }
                count = LibWebSockets.pre + utf8.count
            }
        }
    }

    /// The first headroom byte of a binary message (`framed(bytes:)`); a text message's is 0.
    static let binaryMark: UInt8 = 1

    /// A binary message as bytes with `LWS_PRE` bytes of headroom, its first byte `binaryMark` (the headroom
    /// is lws's to write the frame header into; the writer reads the mark before handing the message over).
    static func framed(bytes: [UInt8]) -> [UInt8] {
        var message = [UInt8](repeating: 0, count: LibWebSockets.pre)
        message[0] = binaryMark
        return message + bytes
    }

    // MARK: Other threads

    /// Queues a command and wakes the service thread (once per batch).
    func enqueue(_ command: Command) {
        inbox.withLock { inbox in
            guard inbox.accepting else { return }
            inbox.commands.append(command)
            wake(&inbox)
        }
    }

    /// Asks the service thread to close every connection and end.
    func requestStop() {
        inbox.withLock { inbox in
            guard !inbox.stopRequested else { return }
            inbox.stopRequested = true
            wake(&inbox)
        }
    }

    /// Ends the service loop now, without waiting for WebSocket close handshakes.
    func forceStop() {
        forced.store(true, ordering: .releasing)
        inbox.withLock { inbox in
            if inbox.accepting, let context { lws_cancel_service(context) }
        }
    }

    /// Called with the `inbox` lock held.
    private func wake(_ inbox: inout Inbox) {
        guard !inbox.wakePending, inbox.accepting, let context else { return }
        inbox.wakePending = true
        lws_cancel_service(context)
    }

    func connectionCountSnapshot() -> Int { openConnections.load(ordering: .relaxed) }

    /// Destroys the context of a server that was never started, on the caller's thread.
    func destroyUnstarted() {
        inbox.withLock { $0.accepting = false }
        if let context { lws_context_destroy(context) }
        delegate = nil
    }

    // MARK: The service thread

    /// The body of the service thread: services until stopped, then destroys the context.
    func serve() {
        guard let context else { return }
        while !forced.load(ordering: .acquiring) {
            if stopHandled && !connections.values.contains(where: \.isWebSocket) { break }
            if lws_service(context, 0) < 0 { break }
        }
        inbox.withLock { $0.accepting = false }
        lws_context_destroy(context)
        // lws reports CLOSED for the connections it tears down; any it did not are reported here,
        // so that every opened connection is closed exactly once.
        for connection in connections.values.sorted(by: { $0.id < $1.id }) where connection.isWebSocket {
            delegate?.webSocketClosed(ConnectionID(rawValue: connection.id))
        }
        connections.removeAll()
        openConnections.store(0, ordering: .relaxed)
        delegate = nil
    }

    /// The protocol callback; every libwebsockets event of this server arrives here.
    private func callback(_ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
                          _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        switch reason {
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            drainInbox()
            return 0
        case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
            guard let user else { return 0 }
            return admit(user.load(as: lws_filter_network_conn_args.self))
        case LWS_CALLBACK_WSI_CREATE:
            // lws creates the accepted socket's connection right after admitting it, on this thread (its
            // descriptor is not attached yet, so the admission is matched by order).
            if let host = admittedHost {
                hostOfConnection[wsi] = host
                admittedHost = nil
            }
            return 0
        case LWS_CALLBACK_WSI_DESTROY:
            if let host = hostOfConnection.removeValue(forKey: wsi) { release(host) }
            return 0
        case LWS_CALLBACK_HTTP:
            return httpRequest(wsi, user, input)
        case LWS_CALLBACK_HTTP_BODY:
            return httpBody(wsi, user, UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
        case LWS_CALLBACK_HTTP_BODY_COMPLETION:
            if let connection = connection(user) { httpBodyCompleted(connection) }
            return 0
        case LWS_CALLBACK_HTTP_WRITEABLE:
            guard let connection = connection(user) else { return 0 }
            return writeResponse(connection)
        case LWS_CALLBACK_CLOSED_HTTP:
            if let id = user?.load(as: Int.self), let connection = connections[id], !connection.isWebSocket {
                remove(id)
            }
            return 0
        case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
            return confirmUpgrade(wsi)
        case LWS_CALLBACK_ESTABLISHED:
            webSocketOpened(wsi, user)
            return 0
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE, LWS_CALLBACK_WS_SERVER_DROP_PROTOCOL:
            // The peer's close frame arrived (lws answers it), or lws is closing the connection (its
            // close frame goes next): from now on nothing may be written (RFC 6455 §5.5.1).
            connection(user)?.closeStarted()
            return 0
        case LWS_CALLBACK_RECEIVE:
            guard let connection = connection(user) else { return 0 }
            return webSocketReceived(connection, UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let connection = connection(user) else { return 0 }
            return writeMessage(connection)
        case LWS_CALLBACK_CLOSED:
            if let id = user?.load(as: Int.self), let connection = connections[id], connection.isWebSocket {
                remove(id)
                delegate?.webSocketClosed(ConnectionID(rawValue: id))
            }
            return 0
        default:
            return lws_callback_http_dummy(wsi, reason, user, input, length)
        }
    }

    /// Counts a newly accepted socket against its peer's limit; -1 (close it at once) over the limit.
    private func admit(_ accepted: lws_filter_network_conn_args) -> Int32 {
        let host = LibWebSockets.numericAddress(accepted.cli_addr, length: accepted.clilen).host
        if let stale = admittedHost {
            // The last admitted socket never became a connection (lws failed to adopt it).
            release(stale)
            admittedHost = nil
        }
        let admitted = connectionsPerHost.withLock { counts in
            let count = counts[host, default: 0]
            guard count < maximumConnectionsPerAddress else { return false }
            counts[host] = count + 1
            return true
        }
        guard admitted else { return -1 }
        admittedHost = host
        return 0
    }

    private func release(_ host: String) {
        connectionsPerHost.withLock { counts in
            let count = counts[host, default: 1] - 1
            counts[host] = count > 0 ? count : nil
        }
    }

    /// Connections counted against `host`'s limit now. Thread-safe.
    func connectionCount(from host: String) -> Int { connectionsPerHost.withLock { $0[host, default: 0] } }

    private func connection(_ user: UnsafeMutableRawPointer?) -> ServerConnection? {
        guard let id = user?.load(as: Int.self), id != 0 else { return nil }
        return connections[id]
    }

    /// The connection of `wsi`, created (and its id stored in the per-session data) if new.
    private func connection(for wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) -> ServerConnection? {
        guard let user else { return nil }
        if let existing = connection(user) { return existing }
        let id = nextID
        nextID += 1
        user.storeBytes(of: id, as: Int.self)
        let connection = ServerConnection(id: id, wsi: wsi, peer: LibWebSockets.peerAddress(of: wsi),
                                          messageLimit: maximumMessageBytes)
        connections[id] = connection
        openConnections.add(1, ordering: .relaxed)
        return connection
    }

    private func remove(_ id: Int) {
        if connections.removeValue(forKey: id) != nil { openConnections.subtract(1, ordering: .relaxed) }
    }

    /// Moves queued commands to their connections and asks for writeable callbacks.
    private func drainInbox() {
        let (commands, stop) = inbox.withLock { inbox in
            inbox.wakePending = false
            defer { inbox.commands.removeAll() }
            return (inbox.commands, inbox.stopRequested)
        }
        var touched: [ServerConnection] = []
        for command in commands {
            switch command {
            case .send(let id, let message):
                guard let connection = connections[id], connection.acceptsMessages else { continue }
                if connection.queuedBytes + message.count > maximumQueuedBytes {
                    // A peer that does not read (stalled, or far too slow) would make its queue grow
                    // without bound: close it, policy violation, and drop what it did not take.
                    connection.dropQueuedMessages()
                    connection.pendingClose = (1008, "too slow: over \(maximumQueuedBytes) bytes waiting")
                } else {
                    connection.enqueueMessage(message)
                }
                touched.append(connection)
            case .close(let id, let code, let reason):
                guard let connection = connections[id], connection.acceptsMessages else { continue }
                connection.pendingClose = (code, reason)
                touched.append(connection)
            case .answer(let id, let number, let response, let closeAfter):
                // The peer may have closed meanwhile: then the connection, and its request, are gone.
                guard let connection = connections[id], connection.awaitedAnswer == number else { continue }
                connection.awaitedAnswer = nil
                // The time to write it, as a request answered at once has.
                lws_set_timeout(connection.wsi, PENDING_TIMEOUT_HTTP_CONTENT, Int32(headerTimeout))
                respond(connection, response, closeAfter: closeAfter)
            }
        }
        if stop && !stopHandled {
            stopHandled = true
            for connection in connections.values where connection.acceptsMessages {
                connection.pendingClose = (1001, "server stopping")
                touched.append(connection)
            }
        }
        for connection in touched { lws_callback_on_writable(connection.wsi) }
    }

    // MARK: HTTP

    private func httpRequest(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?, _ input: UnsafeMutableRawPointer?) -> Int32 {
        guard let connection = connection(for: wsi, user) else { return -1 }
        guard let (method, uriPath) = LibWebSockets.methodAndPath(wsi) else {
            respond(connection, .text(status: 400, "unsupported method\n"), closeAfter: true)
            return 0
        }
        let path = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? uriPath
        let targetBytes = uriPath.utf8.count + Int(max(0, lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_URI_ARGS)))
        guard targetBytes <= Self.maximumTargetBytes else {
            respond(connection, .text(status: 414, "request target over \(Self.maximumTargetBytes) bytes\n"), closeAfter: true)
            return 0
        }
        let headers = LibWebSockets.headers(wsi, custom: customHeaders)
        let headerBytes = headers.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 4 }
        guard headerBytes <= Self.maximumTargetBytes else {
            respond(connection, .text(status: 431, "request headers over \(Self.maximumTargetBytes) bytes\n"), closeAfter: true)
            return 0
        }
        connection.request = HTTPRequest(method: method, path: path, query: LibWebSockets.queryArguments(wsi),
                                         headers: headers)
        connection.response = nil
        // The delegate sees a request only once its body has arrived exactly as its head framed it;
        // a refused request's connection is closed after the answer (RequestFraming says why).
        switch RequestFraming(method: method, transferEncoding: headers["transfer-encoding"],
                              contentLength: headers["content-length"], maximumBodyBytes: maximumBodyBytes) {
        case .refused(let status, let reason):
            respond(connection, .text(status: status, reason), closeAfter: true)
        case .body(let bytes, let closeAfter) where bytes == 0:
            dispatch(connection, closeAfter: closeAfter)
        case .body(let bytes, _):
            connection.awaitsBody = true
            connection.declaredBodyBytes = bytes
            connection.request!.body.reserveCapacity(bytes)
        }
        return 0
    }

    private func httpBody(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?, _ part: UnsafeRawBufferPointer) -> Int32 {
        guard let connection = connection(user), connection.awaitsBody, connection.request != nil else { return 0 }
        if connection.request!.body.count + part.count > connection.declaredBodyBytes {
            // lws reads no more than the declared length; should it ever, the framing is broken.
            connection.awaitsBody = false
            respond(connection, .text(status: 400, "request body longer than its Content-Length\n"), closeAfter: true)
            return 0
        }
        connection.request!.body.append(contentsOf: part)
        return 0
    }

    /// The end of a body lws read: passes the request on if the body is complete.
    private func httpBodyCompleted(_ connection: ServerConnection) {
        guard connection.awaitsBody else { return }
        connection.awaitsBody = false
        guard connection.request?.body.count == connection.declaredBodyBytes else {
            respond(connection, .text(status: 400, "request body shorter than its Content-Length\n"), closeAfter: true)
            return
        }
        dispatch(connection, closeAfter: false)
    }

    /// Passes the complete request to the delegate and schedules its answer: written at once when the
    /// delegate answers before it returns, else when its answer comes through the inbox.
    private func dispatch(_ connection: ServerConnection, closeAfter: Bool) {
        guard let request = connection.request else { return }
        guard let delegate else {
            respond(connection, .text(status: 503, "stopping\n"), closeAfter: closeAfter)
            return
        }
        connection.requestsDispatched += 1
        let id = connection.id, number = connection.requestsDispatched
        let slot = AnswerSlot()
        delegate.handle(request, from: connection.peer) { [weak self] response in
            guard !slot.give(response) else { return }
            self?.enqueue(.answer(connection: id, request: number, response, closeAfter: closeAfter))
        }
        if let response = slot.take() {
            respond(connection, response, closeAfter: closeAfter)
        } else {
            connection.awaitedAnswer = number
            // Instead of lws's header timeout: the delegate has this long; then the connection is closed
            // and an answer coming later is dropped.
            lws_set_timeout(connection.wsi, PENDING_TIMEOUT_USER_OK, Int32(Self.answerTimeout))
        }
    }

    private func respond(_ connection: ServerConnection, _ response: HTTPResponse, closeAfter: Bool) {
        let method = connection.request?.method ?? ""
        connection.response = .init(response: response, sendsBody: method != "HEAD" && !response.body.isEmpty,
                                    closeAfter: closeAfter)
        lws_callback_on_writable(connection.wsi)
    }

    /// Writes the next part of the pending response: the header block, then body chunks.
    private func writeResponse(_ connection: ServerConnection) -> Int32 {
        guard var pending = connection.response else { return 0 }
        let wsi = connection.wsi
        switch pending.stage {
        case .closing:
            return -1
        case .headers:
            guard writeHeaders(pending, wsi) else { return -1 }
            pending.stage = .body
            if pending.sendsBody {
                connection.response = pending
                lws_callback_on_writable(wsi)
                return 0
            }
        case .body:
            let body = pending.response.body
            let count = min(Self.bodyChunk, body.count - pending.offset)
            let last = pending.offset + count == body.count
            let total = LibWebSockets.pre + count
            if scratch.count < total { scratch = [UInt8](repeating: 0, count: total) }
            let written = scratch.withUnsafeMutableBufferPointer { buffer in
                body.withUnsafeBufferPointer { source in
                    (buffer.baseAddress! + LibWebSockets.pre).update(from: source.baseAddress! + pending.offset, count: count)
                }
                return lws_write(wsi, buffer.baseAddress! + LibWebSockets.pre, count,
                                 last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
            }
            guard written >= count else { return -1 }
            pending.offset += count
            if !last {
                connection.response = pending
                lws_callback_on_writable(wsi)
                return 0
            }
        }
        // The response is complete.
        connection.request = nil
        if pending.closeAfter {
            // Close on the next writeable callback: lws calls it only after any partially sent
            // data has drained, so the peer receives the whole response first.
            pending.stage = .closing
            connection.response = pending
            lws_callback_on_writable(wsi)
            return 0
        }
        connection.response = nil
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }

    private func writeHeaders(_ pending: ServerConnection.PendingResponse, _ wsi: OpaquePointer) -> Bool {
        let response = pending.response
        let extra = response.headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 8 }
        var buffer = [UInt8](repeating: 0, count: LibWebSockets.pre + 1024 + response.contentType.utf8.count + extra)
        return buffer.withUnsafeMutableBufferPointer { raw -> Bool in
            let start = raw.baseAddress! + LibWebSockets.pre
            let end = raw.baseAddress! + raw.count - 1
            var p: UnsafeMutablePointer<UInt8>? = start
            guard lws_add_http_header_status(wsi, UInt32(clamping: response.status), &p, end) == 0 else { return false }
            if !response.contentType.isEmpty {
                let value = Array(response.contentType.utf8)
                guard lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, value, Int32(value.count), &p, end) == 0
                else { return false }
            }
            if response.status != 204 && response.status != 304 {
                guard lws_add_http_header_content_length(wsi, UInt64(response.body.count), &p, end) == 0 else { return false }
            }
            var extras = response.headers
            if pending.closeAfter { extras.append(("connection", "close")) }
            for (name, value) in extras {
                let bytes = Array(value.utf8)
                guard lws_add_http_header_by_name(wsi, name.lowercased() + ":", bytes, Int32(bytes.count), &p, end) == 0
                else { return false }
            }
            return lws_finalize_write_http_header(wsi, start, &p, end) == 0
        }
    }

    // MARK: WebSocket

    /// The path of an upgrade request, without its query.
    private static func upgradePath(_ wsi: OpaquePointer) -> String {
        var path = LibWebSockets.header(wsi, WSI_TOKEN_GET_URI) ?? "/"
        if let question = path.firstIndex(of: "?") { path = String(path[..<question]) }
        return path
    }

    /// Lets a WebSocket upgrade go on only on one of `webSocketPaths`; elsewhere answers 404 at once.
    /// Returning 1 tells lws that the answer is written; it then ends the HTTP transaction itself.
    private func confirmUpgrade(_ wsi: OpaquePointer) -> Int32 {
        if webSocketPaths.contains(Self.upgradePath(wsi)) { return 0 }
        let response = HTTPResponse.text(status: 404, "no WebSocket endpoint at this path\n")
        let pending = ServerConnection.PendingResponse(response: response, sendsBody: true, closeAfter: false)
        guard writeHeaders(pending, wsi) else { return -1 }
        // A short body in one write: lws keeps and sends whatever the socket does not take at once.
        var buffer = [UInt8](repeating: 0, count: LibWebSockets.pre) + response.body
        let count = response.body.count
        let written = buffer.withUnsafeMutableBufferPointer {
            lws_write(wsi, $0.baseAddress! + LibWebSockets.pre, count, LWS_WRITE_HTTP_FINAL)
        }
        return written >= count ? 1 : -1
    }

    private func webSocketOpened(_ wsi: OpaquePointer, _ user: UnsafeMutableRawPointer?) {
        guard let connection = connection(for: wsi, user) else { return }
        connection.isWebSocket = true
        connection.request = nil
        connection.response = nil
        let query = LibWebSockets.queryArguments(wsi)
        let path = Self.upgradePath(wsi)
        if binaryPaths.contains(path) { connection.assembler = MessageAssembler(limit: connection.assembler.limit, acceptsBinary: true) }
        delegate?.webSocketOpened(ConnectionID(rawValue: connection.id), path: path, query: query, peer: connection.peer)
        if stopHandled && connection.pendingClose == nil {
            connection.pendingClose = (1001, "server stopping")
            lws_callback_on_writable(wsi)
        }
    }

    private func webSocketReceived(_ connection: ServerConnection, _ part: UnsafeRawBufferPointer) -> Int32 {
        let wsi = connection.wsi
        if connection.ignoresInput { return 0 }
        do {
            switch try connection.assembler.append(part, isBinary: lws_frame_is_binary(wsi) != 0, isFinal: lws_is_final_fragment(wsi) != 0) {
            case .text(let text): delegate?.webSocketReceived(ConnectionID(rawValue: connection.id), text: text)
            case .binary(let bytes): delegate?.webSocketReceived(ConnectionID(rawValue: connection.id), bytes: bytes)
            case nil: break
            }
            return 0
        } catch {
            // The close goes out from the writeable callback, not by returning -1 here: lws 4.1.6 then
            // drops the rest of what it read with this frame, reads on before its close frame is sent,
            // misparses the stream (many small fragments in one read) and cuts the connection without
            // any close frame. What the peer sends meanwhile is ignored; a peer that does not read, so
            // that the close cannot be written, is cut after 5 s.
            connection.refuse(code: error.closeCode, reason: error.reason)
            lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_SEND, 5)
            lws_callback_on_writable(wsi)
            return 0
        }
    }

    /// Sends one queued message, or the requested close once nothing is queued; nothing once a close
    /// was sent or received.
    private func writeMessage(_ connection: ServerConnection) -> Int32 {
        let wsi = connection.wsi
        // lws asks again while its close is under way (its close frame may wait behind data a stalled
        // peer does not read): end the connection now rather than write anything more.
        if connection.isClosing { return -1 }
        if connection.hasQueuedMessages {
            var message = connection.dequeueMessage()
            let count = message.count - LibWebSockets.pre
            let written = message.withUnsafeMutableBufferPointer {
                lws_write(wsi, $0.baseAddress! + LibWebSockets.pre, count, LWS_WRITE_TEXT)
            }
            guard written >= count else { return -1 }
            if connection.hasQueuedMessages || connection.pendingClose != nil { lws_callback_on_writable(wsi) }
            return 0
        }
        if let close = connection.pendingClose {
            connection.closeStarted()
            LibWebSockets.setCloseReason(wsi, code: close.code, reason: close.reason)
            return -1
        }
        return 0
    }
}

/// Where a delegate's answer goes: kept for `dispatch` while the delegate's `handle` runs, handed to
/// the inbox once it has returned. Answering twice is a delegate bug.
private final class AnswerSlot: Sendable {
    private enum State { case dispatching, answered(HTTPResponse), waiting, done }
    private let state = Mutex(State.dispatching)

    /// The delegate's answer. Returns true when kept for `take` (the delegate has not returned yet).
    func give(_ response: HTTPResponse) -> Bool {
        state.withLock { state in
            switch state {
            case .dispatching:
                state = .answered(response)
                return true
            case .waiting:
                state = .done
                return false
            case .answered, .done:
                preconditionFailure("a WebServerDelegate answered one request twice")
            }
        }
    }

    /// After the delegate's `handle` returned: its answer if it gave one, else nil (it comes later).
    func take() -> HTTPResponse? {
        state.withLock { state in
            if case .answered(let response) = state {
                state = .done
                return response
            }
            state = .waiting
            return nil
        }
    }
}

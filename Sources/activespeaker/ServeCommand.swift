import CallProtocol
import CallServer
import CallTransport
import Foundation
import Redis
import SFUSidecar
import SpeakerCore
import SpeakerEval
import SpeakerIO
import SpeakerRTP
import Synchronization

/// `activespeaker serve`: the room server.
struct ServeCommand: Command {
    static let name = "serve"
    static let summary = "Run the room server: rooms, signalling, RTP forwarding, dashboard."
    static let synopsis = "serve [--listen HOST:PORT] [--rtp HOST:PORT] [--secret TEXT] [--room ID]... [options]"

    static let overview = """
        Hosts rooms in memory. Clients join over a WebSocket (/v1/signal), publish
        Opus over RTP/UDP with RFC 6464 levels, and get everyone else's audio and
        the room's events; the engine decides each room's dominant speaker.
        Plain RTP senders (GStreamer, ffmpeg) join through the ingest API.
        Protocol, API and error codes: docs/call.md.
        With no --secret a random one is made and printed on standard error
        together with a server-wide moderator token. It then prints the address
        of the rooms page (GET /?token=, a server-wide token), whose links open
        each room's dashboard; a dashboard watches without joining.
        """

    static let options: [OptionSpec] = [
        .value("listen", "HOST:PORT", help: "HTTP/WebSocket address (default 127.0.0.1:8080; port 0: any)."),
        .value("rtp", "HOST:PORT", help: "RTP (UDP) address (default: the listen host, port 0: any)."),
        .value("tls-cert", "FILE", help: """
            Serve https and wss with this certificate chain (PEM: the
            server's certificate, then intermediates). Needs --tls-key.
            """),
        .value("tls-key", "FILE", help: "The private key of --tls-cert (PEM, unencrypted)."),
        .value("secret", "TEXT", help: "Token secret, at least 16 characters (or $ACTIVESPEAKER_SECRET)."),
        .value("room", "ID", repeatable: true, help: "Create this room at start. Repeatable."),
        .value("max-participants", "N", help: "Participants per room (default 16)."),
        .value("client-timeout", "SECONDS", help: "Remove clients silent this long (default 15)."),
        .value("rejoin-ban", "SECONDS", help: """
            A participant removed by a moderator cannot rejoin for this long
            unless with a token issued after the removal (default 300; 0: off).
            """),
        .value("max-connections-per-address", "N", help: """
            Connections one peer address may hold (default 64).
            """),
        .value("message-rate", "N", help: """
            Messages a second one client may send (bursts of 2N; default 50).
            Over it, or over --message-bytes, the client is closed (4015).
            """),
        .value("message-bytes", "BYTES", help: """
            Bytes a second one client may send (bursts of 4x; default 131072).
            """),
        .value("ice-host", "ADDR", help: """
            Browsers (WebRTC): gather ICE candidates on this one numeric
            address (127.0.0.1: browsers on this machine). Default: every
            interface.
            """),
        .value("stun", "URL", help: """
            Browsers: a STUN server, stun://HOST:PORT, for a server-reflexive
            candidate (a server behind NAT). Default: host candidates only.
            """),
        .value("record", "DIR", help: """
            Record every room into DIR/ROOM: Ogg Opus per participant,
            events.jsonl, speech.rttm, floor.rttm (a meeting for eval).
            """),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: "Engine settings, as for detect."),
        .flag("levels-only", help: """
            Decode nothing: the engine hears each publisher's RFC 6464 audio
            levels (RTP header extension id 1), as listen --mode levels does.
            Far less CPU per participant; no --record, no browsers (a browser
            hears a mix of decoded audio).
            """),
        .value("media-workers", "N", help: """
            Engine threads for the media plane, 1-64 (default 1): the rooms'
            analysis and the publishers' Opus decoding are shared among them
            every 10 ms; the media loop's thread is one of them.
            """),
        .value("media-priority", "realtime|normal", help: """
            How the media loop's thread is scheduled (default realtime: SCHED_RR
            priority 10, so a busy machine cannot make its 10 ms clock fall
            behind; needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of 10, else it
            runs normal and the listening line says why).
            """),
        .value("duration", "SECONDS", help: "Stop after this long (default: until Ctrl-C)."),
        .value("redis", "URL", help: """
            Several nodes: join the cluster coordinated through this Redis,
            redis://[:PASSWORD@]HOST[:PORT][/DB] (or $ACTIVESPEAKER_REDIS).
            Every node needs the same --secret. docs/call.md, Several nodes.
            """),
        .value("node-id", "ID", help: "This node's id in the cluster (default: HOST-PORT)."),
        .value("janus", "URL", help: """
            Mirror the rooms of this Janus (its HTTP API, e.g.
            http://127.0.0.1:8088/janus): each VideoRoom publisher becomes a
            participant named by its Janus id, its audio forwarded here with
            rtp_forward (docs/sidecar.md). Needs --rtp HOST:PORT with a fixed port.
            """),
        .value("janus-credentials", "FILE", help: """
            JSON with apiSecret, adminKey, roomSecret, roomSecrets {room: secret},
            eventsUser and eventsPassword (all optional; never logged).
            """),
        .value("janus-events", "HOST:PORT|none", help: """
            Where Janus's event handler (sampleevh) posts, path /janus/events
            (default 127.0.0.1:8089); none: snapshots only.
            """),
        .value("janus-source", "HOST", help: "The numeric host Janus's RTP comes from (default: the --janus host)."),
        .value("janus-rtp-host", "HOST", help: "The address Janus sends RTP to (default: the --rtp host)."),
        .value("janus-interval", "SECONDS", help: "Seconds between full snapshots of Janus (default 1)."),
        .value("janus-audio-level-id", "N", help: "The publishers' ssrc-audio-level extension id, 1-255 (default 1, Chrome's)."),
        .value("events-redis", "URL", help: """
            Publish each room's events on this Redis (channel
            activespeaker:room:ROOM:events) without joining a cluster.
            """),
        .value("webhook", "URL", help: """
            Also POST each room event to this http:// or https:// URL: signed,
            in order per room, retried with backoff (docs/sidecar.md, Webhooks).
            Needs --webhook-secret-file.
            """),
        .value("webhook-secret-file", "FILE", help: """
            The webhook signing secret: the file's first line, 16 bytes at least.
            """),
        .value("webhook-ca", "FILE", help: "For an https:// --webhook: the CAs to trust (PEM) instead of the system's."),
        .value("webhook-max-age", "SECONDS", help: "Retry a webhook delivery this long before giving it up (default 3600)."),
        .value("advertise", "HOST", help: """
            The address other nodes and clients reach this node at (default:
            the --listen host; the host name when listening on all addresses).
            """),
    ]

    static let epilogue = """
        OUTPUT: one JSON line per server event on standard output:
          {"type":"listening","http":8080,"rtp":40000,"tls":false,
            "mediaPriority":"realtime"}  (true: https, wss; "normal" with
            "realtimeRefused":"…" when the system refused realtime)
          {"type":"room-opened","room":"standup"}
          {"type":"participant-joined","room":"standup","participant":"alice",
            "ssrc":123}
          {"type":"speaker-changed","room":"standup","participant":"alice","t":3.21}
          {"type":"participant-left",…}  {"type":"mic-muted",…}  {"type":"error",…}
          {"type":"webrtc","room":"standup","participant":"bob","event":"connected"}
            (a browser: answered, connected, disconnected)
        and at the end {"type":"stats",…} with the media counters. If standard output
        can no longer be written (serve | head -n 1), serve says so once on standard
        error and goes on serving without the log lines.

        EXAMPLE:
          activespeaker serve --room demo --secret my-secret-of-16-chars
          activespeaker token --secret my-secret-of-16-chars --room demo \\
              --participant alice
          activespeaker join --server ws://127.0.0.1:8080 --room demo \\
              --token TOKEN --mic alice.wav
          With TLS: serve --tls-cert server.pem --tls-key server.key …, then
          join --server wss://HOST:8080 --ca ca.pem … (docs/call.md, TLS).
          A browser: open http://127.0.0.1:8080/rooms/demo?token=TOKEN and Join
          (WebRTC; from another machine serve https with --tls-cert/--tls-key and
          give --ice-host an address it reaches; docs/call.md, Browsers).

        With --redis also {"type":"cluster-joined","node":"n1","redis":"redis://…",
        "nodes":["n1","n2"]}, {"type":"redis-lost","reason":…},
        {"type":"redis-restored"} and {"type":"claim-lost","room":…}; a room's
        events are also published on the Redis channel
        activespeaker:room:ROOM:events.

        With --webhook also {"type":"webhook-failed","room":…,"sequence":3,
        "attempt":1,"reason":"HTTP 503","retryIn":0.5} and
        {"type":"webhook-given-up",…}; each room event is POSTed as its JSON line
        with headers ActiveSpeaker-Room, -Sequence, -Delivery, -Attempt and
        ActiveSpeaker-Signature: t=UNIX,v1=HEX(HMAC-SHA256(secret, "t.body")).

        EXIT STATUS: 0 after Ctrl-C or --duration; 1 if a port cannot be bound (one
        line on standard error, e.g. "cannot listen on 127.0.0.1:8080: address in
        use"), a TLS file cannot be used, or the cluster cannot be joined (Redis
        unreachable, a node of another protocol, the node id in use); 64
        command-line error.
        """

    let configuration: RoomServerConfiguration
    /// `--listen` as given, for messages.
    let listenAddress: String
    let duration: Double?
    let printsSecret: Bool
    /// `--janus`: the adapter's settings; nil without it.
    let janus: JanusAdapterConfiguration?

    init(_ options: ParsedOptions) throws(CommandError) {
        var configuration = RoomServerConfiguration()
        let listen = options.value("listen") ?? "127.0.0.1:8080"
        listenAddress = listen
        guard let address = SocketAddress(listen) else {
            throw .usage("--listen \(listen): expected HOST:PORT ([IPv6]:PORT) with a port 0-65535 and a known host")
        }
        let host = address.host
        configuration.host = host
        configuration.port = address.port
        configuration.rtpAddress = options.value("rtp") ?? (host.contains(":") ? "[\(host)]:0" : "\(host):0")
        switch (options.value("tls-cert"), options.value("tls-key")) {
        case (let certificate?, let key?):
            configuration.tls = ServerCertificate(certificateChainPath: certificate, privateKeyPath: key)
        case (nil, nil):
            break
        default:
            throw .usage("--tls-cert and --tls-key go together: give both or neither")
        }
        let secretText = options.value("secret") ?? ProcessInfo.processInfo.environment["ACTIVESPEAKER_SECRET"]
        if let secretText {
            guard let secret = TokenSecret(secretText) else { throw .usage("--secret: at least 16 characters") }
            configuration.secret = secret
        }
        printsSecret = secretText == nil
        for room in options.all("room") {
            guard AccessToken.isValidID(room) else { throw .usage("--room \(room): \(AccessToken.idRule)") }
        }
        configuration.rooms = options.all("room")
        if let text = options.value("max-participants") {
            guard let value = Int(text), (1...1000).contains(value) else { throw .usage("--max-participants \(text): expected 1-1000") }
            configuration.maxParticipants = value
        }
        if let text = options.value("client-timeout") {
            guard let value = Double(text), value >= 1, value <= 3600 else { throw .usage("--client-timeout \(text): expected 1-3600 seconds") }
            configuration.clientTimeout = value
        }
        if let text = options.value("rejoin-ban") {
            guard let value = Int(text), (0...86400).contains(value) else { throw .usage("--rejoin-ban \(text): expected 0-86400 seconds") }
            configuration.rejoinBan = value
        }
        if let text = options.value("ice-host") {
            guard let address = SocketAddress(numericHost: text, port: 0), !address.isUnspecified else {
                throw .usage("--ice-host \(text): expected a numeric address of this host")
            }
            configuration.iceHost = address.host
        }
        if let text = options.value("stun") {
            let rest = text.hasPrefix("stun://") ? text.dropFirst(7) : ""
            guard let colon = rest.lastIndex(of: ":"), colon > rest.startIndex,
                let port = Int(rest[rest.index(after: colon)...]), (1...65535).contains(port)
            else {
                throw .usage("--stun \(text): expected stun://HOST:PORT")
            }
            configuration.stunServer = text
        }
        if let text = options.value("media-priority") {
            guard let priority = LoopPriority(rawValue: text) else { throw .usage("--media-priority \(text): expected realtime or normal") }
            configuration.mediaPriority = priority
        }
        if let text = options.value("max-connections-per-address") {
            guard let value = Int(text), (1...100_000).contains(value) else {
                throw .usage("--max-connections-per-address \(text): expected 1-100000")
            }
            configuration.maxConnectionsPerAddress = value
        }
        if let text = options.value("message-rate") {
            guard let value = Double(text), value >= 1, value <= 100_000 else { throw .usage("--message-rate \(text): expected 1-100000") }
            configuration.messageRate = value
        }
        if let text = options.value("message-bytes") {
            // A burst must hold one message of the 64 KiB limit.
            guard let value = Double(text), value >= 16384, value <= 1_073_741_824 else {
                throw .usage("--message-bytes \(text): expected 16384-1073741824")
            }
            configuration.messageBytesPerSecond = value
        }
        if let text = options.value("redis") ?? ProcessInfo.processInfo.environment["ACTIVESPEAKER_REDIS"] {
            guard secretText != nil else {
                throw .usage("--redis needs --secret (or $ACTIVESPEAKER_SECRET): every node must check the same tokens")
            }
            let wildcard = ["0.0.0.0", "::", ""].contains(host)
            let advertise = options.value("advertise") ?? (wildcard ? ProcessInfo.processInfo.hostName : host)
            if address.port == 0, options.value("node-id") == nil {
                throw .usage("--redis with --listen port 0 needs --node-id (the default id is HOST-PORT)")
            }
            let nodeID = options.value("node-id")
                ?? String("\(advertise)-\(address.port)".map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "-" })
            guard AccessToken.isValidID(nodeID) else { throw .usage("--node-id \(nodeID): \(AccessToken.idRule)") }
            do {
                configuration.cluster = try ClusterConfiguration(redis: text, nodeID: nodeID, advertiseHost: advertise)
            } catch {
                throw .usage("--redis: \(error.message)")
            }
        } else if options.value("node-id") != nil || options.value("advertise") != nil {
            throw .usage("--node-id and --advertise go with --redis")
        }
        configuration.webhook = try Self.webhook(options)
        if let text = options.value("events-redis") {
            guard configuration.cluster == nil else {
                throw .usage("--events-redis with --redis: several nodes publish room events on their Redis already")
            }
            configuration.eventsRedis = text
        }
        janus = try Self.janus(options, rtp: configuration.rtpAddress, clustered: configuration.cluster != nil)
        configuration.recordingDirectory = options.value("record")
        configuration.levelsOnly = options.has("levels-only")
        if configuration.levelsOnly, configuration.recordingDirectory != nil {
            throw .usage("--levels-only with --record: a level-only server has no audio to record")
        }
        if let text = options.value("media-workers") {
            guard let workers = Int(text), (1...64).contains(workers) else { throw .usage("--media-workers \(text): expected 1-64") }
            configuration.mediaWorkers = workers
        }
        configuration.engine = try options.engineConfiguration()
        configuration.policies = .withBaselines
        duration = try options.value("duration").map { text throws(CommandError) in
            guard let value = Double(text), value > 0 else { throw .usage("--duration \(text): expected seconds > 0") }
            return value
        }
        if !options.positionals.isEmpty { throw .usage("unexpected argument \(options.positionals[0])") }
        self.configuration = configuration
    }

    /// `--webhook` with its secret file and settings; nil without `--webhook`.
    static func webhook(_ options: ParsedOptions) throws(CommandError) -> WebhookConfiguration? {
        guard let url = options.value("webhook") else {
            for name in ["webhook-secret-file", "webhook-ca", "webhook-max-age"] where options.value(name) != nil {
                throw .usage("--\(name) goes with --webhook")
            }
            return nil
        }
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://") else {
            throw .usage("--webhook \(url): expected an http:// or https:// URL")
        }
        guard let path = options.value("webhook-secret-file") else {
            throw .usage("--webhook needs --webhook-secret-file FILE (deliveries are signed with its secret)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .failure("serve: cannot read the webhook secret file \(path)")
        }
        let firstLine = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first ?? []
        var secret = Array(firstLine)
        while let last = secret.last, last == UInt8(ascii: "\r") || last == UInt8(ascii: " ") { secret.removeLast() }
        guard secret.count >= 16 else { throw .failure("serve: the webhook secret in \(path) is shorter than 16 bytes") }
        var webhook = WebhookConfiguration(url: url, secret: secret)
        if let file = options.value("webhook-ca") {
            guard FileManager.default.isReadableFile(atPath: file) else { throw .failure("serve: cannot read --webhook-ca \(file)") }
            webhook.certificateAuthorityFile = file
        }
        if let text = options.value("webhook-max-age") {
            guard let seconds = Double(text), seconds > 0 else { throw .usage("--webhook-max-age \(text): expected seconds > 0") }
            webhook.maximumAge = seconds
        }
        return webhook
    }

    /// `--janus` with its settings; nil without `--janus`.
    static func janus(_ options: ParsedOptions, rtp: String, clustered: Bool) throws(CommandError) -> JanusAdapterConfiguration? {
        let names = ["janus-credentials", "janus-events", "janus-source", "janus-rtp-host", "janus-interval", "janus-audio-level-id"]
        guard let url = options.value("janus") else {
            for name in names where options.value(name) != nil { throw .usage("--\(name) goes with --janus") }
            return nil
        }
        guard !clustered else {
            throw .usage("--janus with --redis: one process mirrors Janus (--events-redis URL publishes its events on Redis)")
        }
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://") else {
            throw .usage("--janus \(url): expected Janus's HTTP API, e.g. http://127.0.0.1:8088/janus")
        }
        guard options.value("rtp") != nil, let rtpAddress = SocketAddress(rtp), rtpAddress.port != 0 else {
            throw .usage("--janus needs --rtp HOST:PORT with a fixed port: Janus's forwarders name it, and a restarted sidecar finds them by it")
        }
        let urlHost = url.split(separator: "/").dropFirst().first.map { authority -> String in
            authority.hasPrefix("[") ? String(authority.dropFirst().prefix { $0 != "]" }) : String(authority.prefix { $0 != ":" })
        } ?? ""
        guard let source = options.value("janus-source") ?? (SocketAddress(numericHost: urlHost, port: 0) != nil ? urlHost : nil) else {
            throw .usage("--janus \(url) names a host, not an address: give --janus-source, the address its RTP comes from")
        }
        let target = JanusForwarding.Target(host: options.value("janus-rtp-host") ?? rtpAddress.host, port: rtpAddress.port)
        var janus = JanusAdapterConfiguration(url: url, target: target, source: source)
        if let file = options.value("janus-credentials") {
            do {
                janus.credentials = try JanusCredentials(file: file)
            } catch {
                throw .failure("serve: \(error)")
            }
        }
        let events = options.value("janus-events") ?? "127.0.0.1:8089"
        if events != "none" {
            guard let address = SocketAddress(events) else { throw .usage("--janus-events \(events): expected HOST:PORT or none") }
            janus.events = (address.host, address.port)
        }
        if let text = options.value("janus-interval") {
            guard let seconds = Double(text), seconds >= 0.1, seconds <= 3600 else { throw .usage("--janus-interval \(text): expected 0.1-3600 seconds") }
            janus.interval = seconds
        }
        if let text = options.value("janus-audio-level-id") {
            guard let id = Int(text), (1...255).contains(id) else { throw .usage("--janus-audio-level-id \(text): expected 1-255") }
            janus.audioLevelID = id
        }
        return janus
    }

    func run() throws(CommandError) {
        let output = LineOutput(command: Self.name)
        // libwebsockets reports a busy port as "ERROR on binding fd 6 to port 8080 (-1 98)": try the
        // address first, to say what is wrong in words.
        if configuration.port != 0, let reason = Self.bindFailure(host: configuration.host, port: configuration.port) {
            throw .failure("serve: cannot listen on \(listenAddress): \(reason)")
        }
        let server: RoomServer
        do {
            server = try RoomServer(configuration: configuration) { line in output.write(line) }
        } catch {
            throw .failure("cannot start the server: \(error)")
        }
        var adminToken = ""
        if printsSecret {
            let now = Int(Date().timeIntervalSince1970)
            let admin = AccessToken(room: AccessToken.anyRoom, participantID: "admin", role: .moderator, issuedAt: now, expiresAt: now + 86400)
            adminToken = admin.signed(with: server.secret)
            Console.error("serve: generated secret \(server.secret.text)")
            Console.error("serve: server-wide moderator token (24 h): \(adminToken)")
        }
        StopRequest.install()
        server.start()
        var adapter: JanusAdapter?
        if let janus {
            do {
                adapter = try JanusAdapter(configuration: janus, server: server) { line in output.write(line) }
            } catch {
                server.stop()
                throw .failure("serve: \(error)")
            }
            adapter?.start()
        }
        // Where to look: the rooms page (a server-wide token), with the generated one when there is one.
        let scheme = configuration.tls == nil ? "http" : "https"
        let host = ["0.0.0.0", "::", ""].contains(configuration.host) ? "127.0.0.1" : configuration.host
        let shownHost = host.contains(":") ? "[\(host)]" : host
        let index = "\(scheme)://\(shownHost):\(server.port)/?token="
        Console.error("serve: dashboards: " + index + (printsSecret ? adminToken : "TOKEN (a server-wide token: activespeaker token --room '*')"))
        let started = Date()
        while !StopRequest.isRequested {
            if let duration, Date().timeIntervalSince(started) >= duration { break }
            usleep(50_000)
        }
        adapter?.stop()
        let statistics = server.mediaStatistics
        server.stop()
        var line = JSONLine()
        line.add("type", "stats")
        line.add("accepted", statistics.accepted)
        line.add("forwarded", statistics.forwarded)
        line.add("unknownSSRC", statistics.unknownSSRC)
        line.add("wrongSource", statistics.wrongSource)
        line.add("muted", statistics.muted)
        line.add("malformed", statistics.malformed)
        line.add("rtcp", statistics.rtcp)
        line.add("fromSelf", statistics.fromSelf)
        line.add("refusedReceivers", statistics.refusedReceivers)
        line.add("oversized", statistics.oversized)
        line.add("overBudget", statistics.overBudget)
        line.add("senderReports", statistics.senderReports)
        line.add("concealed", statistics.concealed)
        line.add("recovered", statistics.recovered)
        line.add("silenced", statistics.silenced)
        output.write(line.rendered)
    }
}

extension ServeCommand {
    /// Why a TCP socket cannot listen on `host`:`port` now (`address in use`, …), or nil if one can
    /// (or the host does not resolve: the server then says so itself). Binds with `SO_REUSEADDR`, as
    /// libwebsockets does, and closes the socket again.
    static func bindFailure(host: String, port: Int) -> String? {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list?.pointee else { return nil }
        defer { freeaddrinfo(list) }
        let descriptor = socket(info.ai_family, info.ai_socktype, info.ai_protocol)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var on: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        if bind(descriptor, info.ai_addr, info.ai_addrlen) == 0 { return nil }
        switch errno {
        case EADDRINUSE: return "address in use"
        case EACCES: return "permission denied (ports below 1024 need privileges)"
        case EADDRNOTAVAIL: return "not an address of this machine"
        case let code: return String(cString: strerror(code)).lowercased()
        }
    }
}

/// Writes whole lines to standard output from any thread, flushing each.
///
/// A server (or client) outlives the reader of its log: once standard output cannot be written (the
/// reader of a pipe went away, as in `serve | head -n 1`, or the disk is full), the command says so
/// once on standard error and goes on without the log lines.
final class LineOutput: Sendable {
    /// True once a write failed.
    private let closed = Mutex(false)
    /// The command that writes, named in the message: `serve` or `join`.
    private let command: String
    /// What the command goes on doing without its log, for the message.
    private let goingOn: String

    /// - Parameter command: The subcommand's name (`serve`, `join`).
    init(command: String) {
        self.command = command
        goingOn = command == ServeCommand.name ? "serving on" : "going on"
    }

    func write(_ line: String) {
        closed.withLock { closed in
            guard !closed else { return }
            do throws(CommandError) {
                try BufferedOutput.write(line + "\n", to: STDOUT_FILENO)
            } catch {
                closed = true
                let message = "activespeaker \(command): \(Self.reason(error)); \(goingOn) without log lines\n"
                try? BufferedOutput.write(message, to: STDERR_FILENO)
            }
        }
    }

    private static func reason(_ error: CommandError) -> String {
        switch error {
        case .failure(let message), .usage(let message, _): message
        }
    }
}

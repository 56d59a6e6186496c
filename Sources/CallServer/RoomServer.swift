import CallProtocol
internal import CallTransport
internal import CallWebRTC
internal import Redis
import Foundation
import SpeakerCore
import SpeakerIO
import SpeakerRTP
import Synchronization

/// How a `RoomServer` runs. The defaults are the embedded set-up: loopback only, rooms in memory.
public struct RoomServerConfiguration: Sendable {
    /// HTTP and WebSocket address.
    public var host = "127.0.0.1"
    /// 0: any free port (see `RoomServer.port`).
    public var port = 0
    /// The certificate chain and private key (PEM files) to serve https and wss with; nil: plain
    /// http and ws. With them, plain requests on the port fail the TLS handshake.
    public var tls: ServerCertificate?
    /// RTP address (UDP), `HOST:PORT`; port 0: any free port.
    public var rtpAddress = "127.0.0.1:0"
    /// The token secret; nil: a random one (see `RoomServer.secret`).
    public var secret: TokenSecret?
    /// Rooms made at start, for set-ups without the API.
    public var rooms: [String] = []
    public var maxParticipants = 16
    /// Seconds without a message after which a client is removed.
    public var clientTimeout: Double = 15
    /// Seconds for which a participant removed by a moderator cannot rejoin (unless with a token issued
    /// after the removal); 0: it may rejoin at once.
    public var rejoinBan = 300
    /// Each signalling connection's budget: messages a second (bursts of twice as many) and bytes a
    /// second (bursts of four times as many); a client over it is closed (4015, WebSocket code 1008).
    public var messageRate: Double = 50
    /// The most HTTP and WebSocket connections one peer address may hold; more are closed on accept.
    public var maxConnectionsPerAddress = 64
    public var messageBytesPerSecond: Double = 128 * 1024
    /// Seconds between `audio-levels` messages.
    public var levelInterval: Double = 0.2
    /// Where calls are recorded (a folder per room: Ogg Opus per participant, events.jsonl,
    /// speech.rttm, floor.rttm); nil: no recording.
    public var recordingDirectory: String?
    /// The engine's settings (as `detect --config`).
    public var engine = EngineConfiguration()
    /// The engine hears each publisher's RFC 6464 audio levels (the RTP header extension, id 1) and nothing
    /// is decoded (`serve --levels-only`): far less work per participant, for publishers that send levels.
    /// Then nothing can be recorded (`recordingDirectory` must be nil) and browsers' WebRTC offers are refused
    /// (a browser hears a mix of decoded audio).
    public var levelsOnly = false
    /// The engine's threads for the media plane (`serve --media-workers`), 1-64: the rooms' analysis and
    /// the publishers' Opus decoding are shared among them each tick; the media loop's thread is one of them.
    public var mediaWorkers = 1
    /// The floor policies `engine.selection.policy` may name: ours alone by default (`serve` adds
    /// SpeakerEval's baselines, `FloorPolicies.withBaselines`, for comparison).
    public var policies = FloorPolicies.standard
    /// How the media loop's thread is scheduled (`serve --media-priority`): `realtime` by default, so
    /// that a busy machine cannot make its 10 ms clock fall behind; `normal` where it was refused.
    public var mediaPriority = LoopPriority.realtime
    /// Browsers (WebRTC, `offer`): the one local address to gather ICE candidates on (`serve --ice-host`);
    /// nil: every interface.
    public var iceHost: String?
    /// Browsers: a STUN server, `stun://HOST:PORT`, for a server-reflexive candidate (`serve --stun`);
    /// nil: host candidates only.
    public var stunServer: String?
    /// Several nodes coordinated through Redis (docs/call.md, "Several nodes"); nil: one process, rooms
    /// in memory. Needs a `secret` shared by every node.
    public var cluster: ClusterConfiguration?
    /// Where each room event is also posted, signed, in order per room (`serve --webhook`); nil: nowhere.
    public var webhook: WebhookConfiguration?
    /// A Redis (`redis://[:PASSWORD@]HOST[:PORT][/DB]`) on which each room's events are published without
    /// joining a cluster (`serve --events-redis`); with `cluster`, the cluster's Redis publishes them already.
    public var eventsRedis: String?

    public init() {}
}

/// The room server: HTTP API, WebSocket signalling, RTP forwarding and the engine on every room
/// (docs/call.md).
///
/// Threads: the transport's service thread calls the delegate methods; the media loop's thread
/// reports speakers and levels; browsers' WebRTC sessions report from their queue and webrtcbin's threads
/// (`WebRTCSessions`). All decide through `registry`, one `Mutex` around the pure state
/// machine `RoomRegistry`; each decision's effects are queued in `executor` under that lock and
/// carried out after it, in decision order (`EffectExecutor`). `HTTPAPI` answers the HTTP calls,
/// `ServerLog` writes the events.
public final class RoomServer: MediaLoopDelegate, ClusterHost, @unchecked Sendable {
    // @unchecked Sendable: `web` and `media` are set once in `init` and never replaced; all mutable
    // state is inside `registry` (a Mutex) or owned by the media loop's and transport's own threads.

    public let configuration: RoomServerConfiguration
    /// The secret tokens must be signed with.
    public let secret: TokenSecret
    private let registry: Mutex<RoomRegistry>
    private let executor = EffectExecutor()
    /// Encodes each broadcast's message once for all its recipients.
    let encoder = BroadcastEncoder()
    private var web: WebServer!
    private var media: MediaLoop!
    private var webRTC: WebRTCSessions!
    private let recorder: CallRecorder?
    private let serverLog: ServerLog
    /// Several nodes: this node's side of the cluster; nil for a single process. Set once in `init`.
    private(set) var cluster: ClusterNode?
    /// Posts the rooms' events to the webhook URL; nil without one. Set once in `init`.
    private(set) var webhooks: WebhookSender?
    /// Publishes the rooms' events on Redis without a cluster (`eventsRedis`); nil otherwise. Set once in `init`.
    private var eventsPublisher: RedisEventPublisher?
    /// Where `Effect.locate` asks the cluster (Redis calls stay off the transport and media threads).
    private let routing = DispatchQueue(label: "activespeaker.cluster.routing")
    private let started = DispatchTime.now().uptimeNanoseconds
    /// Streamed publishers' sources by connection (filled and read on the transport's thread; the media loop
    /// pulls the sources themselves).
    private let streamed = Mutex<[ConnectionID: PCMHopSource]>([:])

    /// Binds the HTTP/WebSocket port and the RTP port and makes the configured rooms. Call `start()`.
    /// - Parameter log: Receives one JSON line per server event (room, participant, speaker changes).
    /// With `configuration.cluster`, joins the cluster (and starts its heartbeat in `start()`).
    /// - Throws: `TransportError` or `SpeakerIOError` when a port cannot be bound; `CallError` for a bad room id,
    ///   or `.unavailable` when the cluster cannot be joined (Redis unreachable, another protocol, node id taken).
    public init(configuration: RoomServerConfiguration, log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.configuration = configuration
        if configuration.levelsOnly, configuration.recordingDirectory != nil {
            throw CallError(.malformedMessage, "a level-only server has no audio to record (--levels-only with --record)")
        }
        if configuration.cluster != nil, configuration.secret == nil {
            throw CallError(.malformedMessage, "several nodes need one token secret shared by every node (--secret)")
        }
        secret = configuration.secret ?? TokenSecret.random()
        let recorder = try configuration.recordingDirectory.map { try CallRecorder(directory: $0, log: log) }
        self.recorder = recorder
        let started = self.started
        serverLog = ServerLog(output: log, recorder: recorder) { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
        let rtpSocket = try UDPSocket(address: configuration.rtpAddress)
        if let text = configuration.eventsRedis {
            guard configuration.cluster == nil else {
                throw CallError(.malformedMessage, "several nodes publish room events on their Redis already (--events-redis with --redis)")
            }
            do {
                eventsPublisher = RedisEventPublisher(url: try RedisURL(text), timeout: 0.5)
            } catch {
                throw CallError(.malformedMessage, "events Redis: \(error)")
            }
        }
        if let webhook = configuration.webhook {
            guard webhook.secret.count >= 16 else { throw CallError(.malformedMessage, "a webhook secret has 16 bytes at least") }
            let serverLog = serverLog
            webhooks = WebhookSender(webhook, clock: serverLog.clock) { report in serverLog(ServerEvent(report)) }
        }
        registry = Mutex(RoomRegistry(settings: RoomRegistry.Settings(
            secret: secret, rtp: rtpSocket.ownAddresses(), defaultMaxParticipants: configuration.maxParticipants,
            clientTimeout: configuration.clientTimeout, rejoinBan: configuration.rejoinBan,
            messageRate: configuration.messageRate, byteRate: configuration.messageBytesPerSecond,
            clustered: configuration.cluster != nil, mediaHost: configuration.cluster?.advertiseHost,
            levelsOnly: configuration.levelsOnly, recording: recorder != nil)))
        media = try MediaLoop(
            socket: rtpSocket, configuration: configuration.engine, levelInterval: configuration.levelInterval,
            recordsAudio: recorder != nil, levelsOnly: configuration.levelsOnly, workers: configuration.mediaWorkers,
            policies: configuration.policies, delegate: self)
        web = try WebServer(
            host: configuration.host, port: configuration.port, webSocketPaths: [Self.signallingPath], binaryPaths: [Self.pcmPath],
            maximumConnectionsPerAddress: configuration.maxConnectionsPerAddress,
            tls: configuration.tls.map { TLSIdentity(certificateChainPath: $0.certificateChainPath, privateKeyPath: $0.privateKeyPath) },
            delegate: WebDelegate(server: self))
        var ice = WebRTCConfiguration()
        ice.iceHost = configuration.iceHost
        ice.stunServer = configuration.stunServer
        webRTC = WebRTCSessions(configuration: ice, rtp: rtpSocket.localAddress) { [weak self] report in self?.webRTCReported(report) }
        guard let clustering = configuration.cluster else {
            for room in configuration.rooms {
                _ = try decide { registry throws(CallError) in try registry.createRoom(id: CallRoomID(room), maxParticipants: nil) }
            }
            return
        }
        try joinCluster(clustering)
    }

    /// Joins the cluster and adds the configured rooms to it (each once, hosted where it is).
    private func joinCluster(_ clustering: ClusterConfiguration) throws(CallError) {
        let host = clustering.advertiseHost.contains(":") ? "[\(clustering.advertiseHost)]" : clustering.advertiseHost
        let secure = configuration.tls != nil
        let node = ClusterNode(
            configuration: clustering, http: "\(secure ? "https" : "http")://\(host):\(web.port)",
            signal: "\(secure ? "wss" : "ws")://\(host):\(web.port)\(Self.signallingPath)", rtpPort: media.port, host: self)
        cluster = node
        try node.join()
        for room in configuration.rooms {
            // Every node may be started with the same rooms: the room is added once, hosted where it is.
            let id = CallRoomID(room)
            guard AccessToken.isValidID(room) else { throw CallError(.malformedMessage, "room id must be \(AccessToken.idRule)") }
            do {
                _ = try node.create(RoomRecord(roomId: id, maxParticipants: configuration.maxParticipants))
            } catch where error.code == .joinState {
                _ = node.resolve(id)
            }
        }
    }

    /// The one path of the signalling WebSocket; an upgrade elsewhere is answered 404.
    public static let signallingPath = "/v1/signal"

    /// The bound HTTP/WebSocket port.
    public var port: Int { web.port }
    /// The bound RTP port.
    public var rtpPort: Int { media.port }
    /// Counters of the media plane.
    public var mediaStatistics: MediaStatistics { media.statistics }
    /// What the media loop's thread runs at; nil before `start()`.
    public var mediaPriority: LoopSchedulingOutcome? { mediaScheduling.withLock { $0 } }
    private let mediaScheduling = Mutex<LoopSchedulingOutcome?>(nil)
    /// Seconds the media loop's 10 ms clock is behind the wall clock (0 when on time; large when its
    /// thread is stalled or not started).
    public var mediaLoopBehind: Double { media.secondsBehind }
    /// Browsers' WebRTC sessions open now (answered, not yet closed).
    public var webRTCSessionCount: Int { webRTC.count }
    /// The browsers' sessions (for tests: `openGate`, `outcomes`).
    var webRTCSessions: WebRTCSessions { webRTC }
    /// Audio hops (10 ms of one participant) the recording dropped because its writer was behind.
    public var droppedRecordingHops: Int { recorder?.droppedHops ?? 0 }

    public func start() {
        let scheduling = media.start(priority: configuration.mediaPriority)
        mediaScheduling.withLock { $0 = scheduling }
        web.start()
        log(.listening(http: port, rtp: rtpPort, tls: configuration.tls != nil, mediaPriority: scheduling))
        if let cluster {
            cluster.start()
            log(.clusterJoined(node: cluster.nodeID, redis: cluster.configuration.redisDescription, nodes: cluster.nodes.map(\.id)))
        }
    }

    /// Disconnects everyone and stops (in a cluster, leaves it first, so that the rooms' clients find
    /// them on another node at once). Idempotent.
    public func stop() {
        cluster?.stop()
        web.stop()
        webRTC.stop()
        media.stop()
        recorder?.finish(tick: media.tickCount)
        serverLog.flush()
        eventsPublisher?.close()
        if let webhooks {
            let lost = webhooks.stop(within: 2)
            if lost > 0 { serverLog(.webhookLost(count: lost)) }
            serverLog.flush()
        }
    }

    /// Returns once every event logged before the call has been written to the log output (log lines
    /// leave through their own queue; `stop()` waits for them too).
    public func flushLog() {
        serverLog.flush()
    }

    /// Seconds since the server started.
    private var now: Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }

    /// Logs a server event, and in a cluster publishes a room's events on its channel.
    private func log(_ event: ServerEvent) {
        guard let room = event.channelRoom, cluster != nil || webhooks != nil || eventsPublisher != nil else { return serverLog(event) }
        serverLog(event) { [cluster, webhooks, eventsPublisher] line in
            cluster?.publish(room: room, line: line)
            eventsPublisher?.publish(room: room, line: line)
            webhooks?.add(room: room, line: line)
        }
    }

    // MARK: Decisions and their effects

    /// Runs one decision of the registry under its lock, queues its effects in that order, and carries
    /// them out (with everything queued before) after unlocking.
    func decide<T: Sendable>(_ decision: (inout RoomRegistry) throws(CallError) -> (T, [Effect])) throws(CallError) -> T {
        let value = try registry.withLock { registry throws(CallError) in
            let (value, effects) = try decision(&registry)
            executor.enqueue(effects)
            return value
        }
        executor.drain(perform)
        return value
    }

    /// `decide` for the decisions that cannot fail and answer only with effects.
    private func decide(_ decision: (inout RoomRegistry) -> [Effect]) {
        registry.withLock { executor.enqueue(decision(&$0)) }
        executor.drain(perform)
    }

    /// Reads the registry (no effects).
    func read<T: Sendable>(_ body: (RoomRegistry) throws(CallError) -> T) throws(CallError) -> T {
        try registry.withLock { registry throws(CallError) in try body(registry) }
    }

    private func perform(_ effect: Effect) {
        switch effect {
        case .send(let connection, let message):
            web.send(encoder.json(of: message), to: connection)
            if case .error(let error) = message { log(.error(connection: connection, code: error.code)) }
        case .close(let connection, let code):
            web.close(connection, code: code)
        case .locate(let connection, let room, let message):
            routing.async { [self] in locate(connection, room, message) }
        case .webRTC(let command):
            webRTC.perform(command)
        case .media(let command):
            media.post(command)
            switch command {
            case .openRoom(let room, _): log(.roomOpened(room: room))
            case .closeRoom(let room): log(.roomClosed(room: room))
            case .addMember(let room, let participant, let ssrc, _, _):
                log(.participantJoined(room: room, participant: participant, ssrc: ssrc))
            case .addStreamed(let room, let participant, _): log(.participantJoined(room: room, participant: participant, ssrc: nil))
            case .removeMember(let room, let participant): log(.participantLeft(room: room, participant: participant))
            case .setMuted(let room, let participant, let muted): log(.micMuted(room: room, participant: participant, muted: muted))
            case .bind(let room, let participant, _, _, _): log(.webRTC(room: room, participant: participant, event: "answered"))
            }
        }
    }

    // MARK: The transport's delegate (transport thread; see `WebDelegate`)

    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {
        if path == Self.pcmPath { return streamedOpened(connection, query: query) }
        let now = self.now
        decide { $0.opened(connection, room: query["room"].map { CallRoomID($0) }, peerHost: Self.unmapped(peer.host), now: now); return [] }
    }

    func webSocketReceived(_ connection: ConnectionID, text: String) {
        let now = self.now, epoch = Self.epochSeconds
        decide { $0.received(connection, text: text, now: now, epochSeconds: epoch) }
    }

    func webSocketClosed(_ connection: ConnectionID) {
        if let source = streamed.withLock({ $0.removeValue(forKey: connection) }) {
            source.finish()
            return decide { $0.streamedClosed(connection) }
        }
        decide { $0.closed(connection) }
    }

    func webSocketReceived(_ connection: ConnectionID, bytes: [UInt8]) {
        streamed.withLock { $0[connection] }?.append(bytes)
    }

    // MARK: Streamed publishers (`/v1/pcm`)

    /// The WebSocket path of streamed publishers: raw PCM in binary messages (LiveKit's track egress).
    /// Query: `room`, `participant`, `token` (a moderator's, or the participant's own publisher token),
    /// `rate` (Hz, 48000 by default), `channels` (1 by default), `name` (the display name).
    public static let pcmPath = "/v1/pcm"

    /// Adds the participant, or closes the connection with the error's code (4001…) and message.
    private func streamedOpened(_ connection: ConnectionID, query: [String: String]) {
        let epoch = Self.epochSeconds
        do throws(CallError) {
            guard let room = query["room"], let participant = query["participant"] else {
                throw CallError(.malformedMessage, "\(Self.pcmPath) needs ?room=ID&participant=ID&token=TOKEN")
            }
            guard let rate = Int(query["rate"] ?? "48000"), (8000...192_000).contains(rate) else {
                throw CallError(.malformedMessage, "rate must be 8000-192000 Hz")
            }
            guard let channels = Int(query["channels"] ?? "1"), (1...8).contains(channels) else {
                throw CallError(.malformedMessage, "channels must be 1-8")
            }
            let source: PCMHopSource
            do {
                source = try PCMHopSource(sampleRate: rate, channels: channels)
            } catch {
                throw CallError(.malformedMessage, "rate \(rate) Hz cannot be resampled: \(error)")
            }
            try decide { registry throws(CallError) in
                ((), try registry.addStreamed(
                    room: CallRoomID(room), participant: ParticipantID(participant), displayName: query["name"], connection: connection,
                    input: StreamedInput(source: source), token: query["token"], now: epoch))
            }
            streamed.withLock { $0[connection] = source }
        } catch {
            web.close(connection, code: UInt16(error.code.rawValue), reason: error.message)
        }
    }

    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse {
        HTTPAPI(server: self, relayed: false).answer(request)
    }

    /// With several nodes, a call may wait for Redis or another node (resolving, relaying, placing a
    /// room): it is answered on a thread of its own (`BlockingWork`), so a stalled Redis holds up that
    /// call alone, never the transport thread's other connections. One process answers at once.
    func handle(_ request: HTTPRequest, from peer: PeerAddress, answer: @escaping @Sendable (HTTPResponse) -> Void) {
        guard cluster != nil else { return answer(handle(request, from: peer)) }
        BlockingWork.start("activespeaker-cluster-http") { [self] in answer(handle(request, from: peer)) }
    }

    /// Seconds since 1970, as tokens count them.
    static var epochSeconds: Int { Int(Date().timeIntervalSince1970) }

    // MARK: WebRTC sessions (their queue, webrtcbin's threads)

    private func webRTCReported(_ report: WebRTCReport) {
        switch report {
        case .answered(let connection, let answer, let endpoint, let mixSSRC):
            decide { $0.webRTCAnswered(connection, answer: answer, endpoint: endpoint, mixSSRC: mixSSRC) }
        case .refused(let connection, let error): decide { $0.webRTCRefused(connection, error) }
        case .localCandidate(let connection, let candidate): decide { $0.webRTCLocalCandidate(connection, candidate) }
        case .candidateRefused(let connection, let error): decide { $0.webRTCCandidateRefused(connection, error) }
        case .state(_, let room, let participant, let connected):
            log(.webRTC(room: room, participant: participant, event: connected ? "connected" : "disconnected"))
        }
    }

    // MARK: MediaLoopDelegate (media thread)

    func speakerChanged(room: CallRoomID, participant: ParticipantID?, time: Double) {
        decide { $0.speakerChanged(room: room, participant: participant, time: time) }
        log(.speakerChanged(room: room, participant: participant, time: time))
        recorder?.floor(room: room, participant: participant, time: time)
    }

    func audioLevels(room: CallRoomID, time: Double, levels: [String: Double], speaking: [String]) {
        decide { $0.audioLevels(room: room, time: time, levels: levels, speaking: speaking) }
    }

    func tickEnded(ticks: Int) {
        guard ticks % 50 == 0 else { return }
        let now = self.now
        decide { $0.sweep(now: now) }
    }

    func recordHop(room: CallRoomID, participant: ParticipantID, hop: UnsafeBufferPointer<Float>, tick: Int) {
        recorder?.hop(room: room, participant: participant, hop: hop, tick: tick)
    }

    func speechChanged(room: CallRoomID, participant: ParticipantID, active: Bool, time: Double) {
        recorder?.speech(room: room, participant: participant, active: active, time: time)
    }

    func roomOpened(_ room: CallRoomID, tick: Int) {
        recorder?.roomOpened(room, tick: tick)
        // Room time 0 in server time, so a recording's events can be placed on its audio.
        serverLog.record(room: room, .roomOpened(room: room))
    }

    func roomClosed(_ room: CallRoomID, tick: Int) {
        recorder?.roomClosed(room, tick: tick)
    }

    // MARK: Several nodes

    /// Where a joining (or observing) client's room lives: it is redirected to that node, or the room is
    /// opened here and its message handled again.
    private func locate(_ connection: ConnectionID, _ room: CallRoomID, _ message: ClientMessage) {
        guard let cluster else { return }
        switch cluster.resolve(room) {
        case .here:
            let now = self.now, epoch = Self.epochSeconds
            decide { $0.received(connection, text: message.json, now: now, epochSeconds: epoch) }
        case .node(let node):
            let redirect = Redirect(url: node.signal + "?room=" + room.rawValue, nodeId: node.id, roomId: room.rawValue)
            decide { $0.redirect(connection, to: redirect) }
        case .absent:
            decide { $0.refuseLocated(connection, CallError(.roomNotFound, "room \(room) not found")) }
        case .unavailable(let why):
            decide { $0.refuseLocated(connection, CallError(.unavailable, "room \(room) cannot be reached now: \(why)")) }
        }
    }

    func hostedRooms() -> (rooms: [RoomState], participants: Int) {
        let nodeID = cluster?.nodeID ?? ""
        return registry.withLock { registry in
            let rooms = registry.rooms.values.map { room in
                RoomState(
                    roomId: room.id, maxParticipants: room.maxParticipants, participants: room.participants.map(\.info),
                    speakerId: room.speaker, node: nodeID)
            }
            return (rooms.sorted { $0.roomId.rawValue < $1.roomId.rawValue }, registry.participantCount)
        }
    }

    func hosts(_ room: CallRoomID) -> Bool { registry.withLock { $0.room(room) != nil } }

    func openClaimed(_ record: RoomRecord) {
        _ = try? decide { registry throws(CallError) in
            guard registry.room(record.roomId) == nil else { return ((), []) }
            let (_, effects) = try registry.createRoom(
                id: record.roomId, maxParticipants: record.maxParticipants, levelsOnly: record.levelsOnly ?? false)
            return ((), effects)
        }
    }

    func answerRelayed(_ request: HTTPRequest) -> HTTPResponse {
        HTTPAPI(server: self, relayed: true).answer(request)
    }

    func clusterLogged(_ event: ServerEvent) { log(event) }

    /// `::ffff:127.0.0.1` → `127.0.0.1`: a dual-stack socket's view of an IPv4 peer.
    static func unmapped(_ host: String) -> String {
        host.hasPrefix("::ffff:") && host.contains(".") ? String(host.dropFirst(7)) : host
    }
}

/// The transport's delegate of one room server: each call goes to the server's method of the same name, so
/// that `RoomServer`'s public API shows no CallTransport type. The web server holds it (and through it the
/// room server) until `stop()` returns, as it held the room server itself.
private final class WebDelegate: WebServerDelegate {
    let server: RoomServer

    init(server: RoomServer) { self.server = server }

    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse { server.handle(request, from: peer) }

    func handle(_ request: HTTPRequest, from peer: PeerAddress, answer: @escaping @Sendable (HTTPResponse) -> Void) {
        server.handle(request, from: peer, answer: answer)
    }

    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {
        server.webSocketOpened(connection, path: path, query: query, peer: peer)
    }

    func webSocketReceived(_ connection: ConnectionID, text: String) { server.webSocketReceived(connection, text: text) }

    func webSocketReceived(_ connection: ConnectionID, bytes: [UInt8]) { server.webSocketReceived(connection, bytes: bytes) }

    func webSocketClosed(_ connection: ConnectionID) { server.webSocketClosed(connection) }
}

/// The PEM files a room server serves https and wss with (`serve --tls-cert`, `--tls-key`).
public struct ServerCertificate: Sendable, Hashable {
    /// The server's certificate first, then any intermediate certificates (PEM).
    public var certificateChainPath: String
    /// The private key of the server's certificate (PEM, unencrypted).
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

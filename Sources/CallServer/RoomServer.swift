import CallProtocol
import CallTransport
import Foundation
import SpeakerCore
import SpeakerIO
import Synchronization

/// How a `RoomServer` runs. The defaults are the embedded set-up: loopback only, rooms in memory.
public struct RoomServerConfiguration: Sendable {
    /// HTTP and WebSocket address.
    public var host = "127.0.0.1"
    /// 0: any free port (see `RoomServer.port`).
    public var port = 0
    /// The certificate chain and private key (PEM files) to serve https and wss with; nil: plain
    /// http and ws. With them, plain requests on the port fail the TLS handshake.
    public var tls: TLSIdentity?
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

    public init() {}
}

/// The room server: HTTP API, WebSocket signalling, RTP forwarding and the engine on every room
/// (docs/call.md).
///
/// Threads: the transport's service thread calls the delegate methods; the media loop's thread
/// reports speakers and levels. Both go through `registry`, one `Mutex`, and carry out the effects
/// it returns after unlocking (the transport and the media loop queue them).
public final class RoomServer: WebServerDelegate, MediaLoopDelegate, @unchecked Sendable {
    // @unchecked Sendable: `web` and `media` are set once in `init` and never replaced; all mutable
    // state is inside `registry` (a Mutex) or owned by the media loop's and transport's own threads.

    public let configuration: RoomServerConfiguration
    /// The secret tokens must be signed with.
    public let secret: TokenSecret
    private let registry: Mutex<RoomRegistry>
    private var web: WebServer!
    private var media: MediaLoop!
    private let recorder: CallRecorder?
    private let log: @Sendable (String) -> Void
    private let started = DispatchTime.now().uptimeNanoseconds

    /// Binds the HTTP/WebSocket port and the RTP port and makes the configured rooms. Call `start()`.
    /// - Parameter log: Receives one JSON line per server event (room, participant, speaker changes).
    /// - Throws: `TransportError` or `SpeakerIOError` when a port cannot be bound; `CallError` for a bad room id.
    public init(configuration: RoomServerConfiguration, log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.configuration = configuration
        secret = configuration.secret ?? TokenSecret.random()
        self.log = log
        recorder = try configuration.recordingDirectory.map { try CallRecorder(directory: $0, log: log) }
        let rtpSocket = try UDPSocket(address: configuration.rtpAddress)
        registry = Mutex(RoomRegistry(settings: RoomRegistry.Settings(
            secret: secret, rtp: rtpSocket.ownAddresses(), defaultMaxParticipants: configuration.maxParticipants,
            clientTimeout: configuration.clientTimeout, rejoinBan: configuration.rejoinBan,
            messageRate: configuration.messageRate, byteRate: configuration.messageBytesPerSecond)))
        media = try MediaLoop(
            socket: rtpSocket, configuration: configuration.engine, levelInterval: configuration.levelInterval,
            recordsAudio: recorder != nil, delegate: self)
        web = try WebServer(
            host: configuration.host, port: configuration.port, webSocketPaths: [Self.signallingPath],
            maximumConnectionsPerAddress: configuration.maxConnectionsPerAddress, tls: configuration.tls, delegate: self)
        for room in configuration.rooms {
            let effects = try registry.withLock { registry throws(CallError) in try registry.createRoom(id: room, maxParticipants: nil).1 }
            perform(effects)
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
    /// Audio hops (10 ms of one participant) the recording dropped because its writer was behind.
    public var droppedRecordingHops: Int { recorder?.droppedHops ?? 0 }

    public func start() {
        media.start()
        web.start()
        log(#"{"type":"listening","http":\#(port),"rtp":\#(rtpPort),"tls":\#(configuration.tls != nil)}"#)
    }

    /// Disconnects everyone and stops. Idempotent.
    public func stop() {
        web.stop()
        media.stop()
        recorder?.finish(tick: media.tickCount)
    }

    /// Seconds since the server started.
    private var now: Double { Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9 }
    private var epochSeconds: Int { Int(Date().timeIntervalSince1970) }

    private func perform(_ effects: [Effect]) {
        for effect in effects {
            switch effect {
            case .send(let connection, let message):
                web.send(message.json, to: ConnectionID(rawValue: connection))
                if case .error(let error) = message { log(#"{"type":"error","connection":\#(connection),"code":\#(error.code.rawValue)}"#) }
            case .close(let connection, let code):
                web.close(ConnectionID(rawValue: connection), code: code)
            case .media(let command):
                media.post(command)
                logMedia(command)
            }
        }
    }

    private func logMedia(_ command: MediaCommand) {
        switch command {
        case .openRoom(let room): log(#"{"type":"room-opened","room":\#(JSON.quoted(room))}"#)
        case .closeRoom(let room): log(#"{"type":"room-closed","room":\#(JSON.quoted(room))}"#)
        case .addMember(let room, let participant, let ssrc, _, _):
            roomEvent(room, #""type":"participant-joined","room":\#(JSON.quoted(room)),"participant":\#(JSON.quoted(participant)),"ssrc":\#(ssrc.map(String.init) ?? "null")"#)
        case .removeMember(let room, let participant):
            roomEvent(room, #""type":"participant-left","room":\#(JSON.quoted(room)),"participant":\#(JSON.quoted(participant))"#)
        case .setMuted(let room, let participant, let muted):
            roomEvent(room, #""type":"mic-muted","room":\#(JSON.quoted(room)),"participant":\#(JSON.quoted(participant)),"muted":\#(muted)"#)
        }
    }

    /// Logs a room's event (JSON members without braces) and records it with the server time.
    private func roomEvent(_ room: String, _ members: String) {
        log("{" + members + "}")
        recorder?.event(room: room, line: #"{"serverTime":\#(String(format: "%.3f", now)),"# + members + "}")
    }

    // MARK: WebServerDelegate (transport thread)

    public func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {
        let now = self.now
        registry.withLock { $0.opened(connection.rawValue, room: query["room"], peerHost: Self.unmapped(peer.host), now: now) }
    }

    public func webSocketReceived(_ connection: ConnectionID, text: String) {
        let now = self.now, epoch = epochSeconds
        perform(registry.withLock { $0.received(connection.rawValue, text: text, now: now, epochSeconds: epoch) })
    }

    public func webSocketClosed(_ connection: ConnectionID) {
        perform(registry.withLock { $0.closed(connection.rawValue) })
    }

    public func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse {
        do throws(CallError) {
            return try route(request)
        } catch {
            return .json(status: error.code.httpStatus, #"{"error":{"code":\#(error.code.rawValue),"message":\#(JSON.quoted(error.message))}}"#)
        }
    }

    private func route(_ request: HTTPRequest) throws(CallError) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let epoch = epochSeconds
        // HEAD is GET without the body (RFC 9110 §9.3.2); the transport leaves the body out.
        let method = request.method == "HEAD" ? "GET" : request.method
        switch (method, parts.count, parts.first) {
        case ("GET", 2, "v1") where parts[1] == "health":
            let (rooms, participants) = registry.withLock { ($0.rooms.count, $0.participantCount) }
            return .json(#"{"participants":\#(participants),"rooms":\#(rooms),"status":"ok"}"#)
        case ("POST", 2, "v1") where parts[1] == "rooms":
            let body = try Self.decode(RoomRequest.self, request.body, empty: RoomRequest())
            let (id, effects) = try registry.withLock { registry throws(CallError) in
                _ = try registry.authorize(request.bearerToken, room: nil, moderator: true, now: epoch)
                return try registry.createRoom(id: body.roomId, maxParticipants: body.maxParticipants)
            }
            perform(effects)
            return .json(status: 201, #"{"roomId":\#(JSON.quoted(id))}"#)
        case ("GET", 3, "v1") where parts[1] == "rooms":
            let room = parts[2]
            return try registry.withLock { registry throws(CallError) in
                _ = try registry.authorize(request.bearerToken, room: room, moderator: false, now: epoch)
                guard let state = registry.room(room) else { throw CallError(.roomNotFound, "room \(room) not found") }
                return .json(JSON.text(RoomSnapshot(state)))
            }
        case ("DELETE", 3, "v1") where parts[1] == "rooms":
            let room = parts[2]
            perform(try registry.withLock { registry throws(CallError) in
                _ = try registry.authorize(request.bearerToken, room: room, moderator: true, now: epoch)
                return try registry.deleteRoom(room)
            })
            return .empty()
        case ("POST", 4, "v1") where parts[1] == "rooms" && parts[3] == "ingest":
            let room = parts[2]
            let body = try Self.decode(IngestRequest.self, request.body, empty: nil)
            let (info, effects) = try registry.withLock { registry throws(CallError) in
                _ = try registry.authorize(request.bearerToken, room: room, moderator: true, now: epoch)
                let source = try MediaSource(ingest: body.source, rtp: registry.settings.rtp)
                return try registry.addIngest(room: room, participant: body.participantId, displayName: body.displayName, source: source, ssrc: body.ssrc)
            }
            perform(effects)
            let media = MediaDescription(rtpPort: rtpPort, ssrc: info.ssrc!)
            let answer = IngestAnswer(participantId: info.id, ssrc: info.ssrc!, media: media)
            return .json(status: 201, JSON.text(answer))
        case ("DELETE", 5, "v1") where parts[1] == "rooms" && parts[3] == "ingest":
            let room = parts[2], participant = parts[4]
            perform(try registry.withLock { registry throws(CallError) in
                _ = try registry.authorize(request.bearerToken, room: room, moderator: true, now: epoch)
                return try registry.removeIngest(room: room, participant: participant)
            })
            return .empty()
        case ("GET", 2, "rooms"):
            let room = parts[1]
            try registry.withLock { registry throws(CallError) in
                _ = try registry.authorize(request.query["token"], room: room, moderator: false, now: epoch)
                guard registry.room(room) != nil else { throw CallError(.roomNotFound, "room \(room) not found") }
            }
            return .html(Dashboard.page(room: room))
        default:
            throw CallError(.malformedMessage, "no such API call: \(request.method) \(request.path)")
        }
    }

    // MARK: MediaLoopDelegate (media thread)

    func speakerChanged(room: String, participant: String?, time: Double) {
        perform(registry.withLock { $0.speakerChanged(room: room, participant: participant, time: time) })
        roomEvent(room, #""type":"speaker-changed","room":\#(JSON.quoted(room)),"participant":\#(participant.map(JSON.quoted) ?? "null"),"t":\#(String(format: "%.2f", time))"#)
        recorder?.floor(room: room, participant: participant, time: time)
    }

    func audioLevels(room: String, time: Double, levels: [String: Double], speaking: [String]) {
        perform(registry.withLock { $0.audioLevels(room: room, time: time, levels: levels, speaking: speaking) })
    }

    func tickEnded(ticks: Int) {
        guard ticks % 50 == 0 else { return }
        let now = self.now
        perform(registry.withLock { $0.sweep(now: now) })
    }

    func recordHop(room: String, participant: String, hop: UnsafeBufferPointer<Float>, tick: Int) {
        recorder?.hop(room: room, participant: participant, hop: hop, tick: tick)
    }

    func speechChanged(room: String, participant: String, active: Bool, time: Double) {
        recorder?.speech(room: room, participant: participant, active: active, time: time)
    }

    func roomOpened(_ room: String, tick: Int) {
        recorder?.roomOpened(room, tick: tick)
        // Room time 0 in server time, so a recording's events can be placed on its audio.
        recorder?.event(room: room, line: #"{"serverTime":\#(String(format: "%.3f", now)),"type":"room-opened","room":\#(JSON.quoted(room))}"#)
    }

    func roomClosed(_ room: String, tick: Int) {
        recorder?.roomClosed(room, tick: tick)
    }

    // MARK: Helpers

    private static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8], empty: T?) throws(CallError) -> T {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }), let empty { return empty }
        guard let value = JSON.decode(type, from: body) else {
            throw CallError(.malformedMessage, "the request body is not the JSON this call takes (see docs/call.md)")
        }
        return value
    }

    /// `::ffff:127.0.0.1` → `127.0.0.1`: a dual-stack socket's view of an IPv4 peer.
    static func unmapped(_ host: String) -> String {
        host.hasPrefix("::ffff:") && host.contains(".") ? String(host.dropFirst(7)) : host
    }
}

/// `POST /v1/rooms` body.
private struct RoomRequest: Decodable {
    var roomId: String?
    var maxParticipants: Int?
}

/// `POST /v1/rooms/{id}/ingest` body.
private struct IngestRequest: Decodable {
    var participantId: String
    var displayName: String?
    var source: String
    var ssrc: UInt32?
}

private struct IngestAnswer: Encodable {
    var participantId: String
    var ssrc: UInt32
    var media: MediaDescription
}

/// `GET /v1/rooms/{id}` answer.
private struct RoomSnapshot: Encodable {
    var roomId: String
    var maxParticipants: Int
    var participants: [ParticipantInfo]
    var speakerId: String?

    init(_ room: RoomRegistry.Room) {
        roomId = room.id
        maxParticipants = room.maxParticipants
        participants = room.participants.map(\.info)
        speakerId = room.speaker
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(roomId, forKey: .roomId)
        try c.encode(maxParticipants, forKey: .maxParticipants)
        try c.encode(participants, forKey: .participants)
        try c.encode(speakerId, forKey: .speakerId)
    }

    enum CodingKeys: String, CodingKey { case roomId, maxParticipants, participants, speakerId }
}

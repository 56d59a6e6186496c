import CallProtocol
import CallServer
import CallTransport
import Foundation
import SpeakerCore
import SpeakerRTP
import Synchronization

/// A room server in the test process (loopback, an ephemeral port, one room `room`) and tokens for it.
enum CallTestServer {
    static let secret = TokenSecret("end-to-end-test-secret-01")!

    /// Starts a server with the one room `room` (or `rooms`); the caller stops it.
    static func server(
        rooms: [String] = ["room"], clientTimeout: Double = 15, recordingDirectory: String? = nil, iceHost: String? = nil,
        engine: EngineConfiguration = EngineConfiguration(), log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws -> RoomServer {
        var configuration = RoomServerConfiguration()
        configuration.iceHost = iceHost
        configuration.port = 0
        configuration.secret = secret
        configuration.rooms = rooms
        configuration.clientTimeout = clientTimeout
        configuration.recordingDirectory = recordingDirectory
        configuration.engine = engine
        let server = try RoomServer(configuration: configuration, log: log)
        server.start()
        return server
    }

    /// A token for `room` (or another), valid for ten minutes.
    static func token(_ participant: String, role: Role = .publisher, room: String = "room") -> String {
        let now = Int(Date().timeIntervalSince1970)
        return AccessToken(room: room, participantID: participant, role: role, issuedAt: now, expiresAt: now + 600).signed(with: secret)
    }
}

extension CallTestServer {
    /// A server-wide moderator token (room management, ingest), valid for ten minutes.
    static func adminToken() -> String {
        let now = Int(Date().timeIntervalSince1970)
        return AccessToken(room: AccessToken.anyRoom, participantID: "admin", role: .moderator, issuedAt: now, expiresAt: now + 600)
            .signed(with: secret)
    }

    /// Runs `body` on a thread of its own and waits at most `timeout` seconds for it to return.
    /// - Returns: False if it had not returned by then (that thread is left waiting).
    static func returns(within timeout: Double, _ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        return done.wait(timeout: .now() + timeout) == .success
    }

    /// Stops `server` and waits at most `timeout` seconds for `stop()` to return (see `returns(within:_:)`).
    static func stop(_ server: RoomServer, within timeout: Double) -> Bool {
        returns(within: timeout) { server.stop() }
    }
}

/// A signalling client without the SDK, for tests that count every datagram and message: a WebSocket
/// that joins `room`, and a UDP socket on loopback whose port it announces as `rtpPort` (unless the test
/// names another port).
final class RawCallClient: Sendable {
    /// Where forwarded RTP arrives (when the join named this socket's port).
    let media: UDPSocket
    private let webSocket: WebSocketClient
    private let inbox = Inbox()

    /// The messages, filled on the WebSocket's service thread.
    private final class Inbox: Sendable {
        let messages = Mutex<[ServerMessage]>([])
    }

    /// Connects and sends `join`; the answer arrives later (see `joined`, `errorCode`).
    /// - Parameters:
    ///   - withoutMedia: Join without `rtpPort`, as the meeting page does before its WebRTC `offer`.
    ///   - token: Another token than `participant`'s for `room`.
    ///   - room: The room to join (the server's rooms: `CallTestServer.server(rooms:)`).
    init(
        _ server: RoomServer, _ participant: String, role: Role = .publisher, rtpPort: Int? = nil, withoutMedia: Bool = false,
        token: String? = nil, room: String = "room"
    ) throws {
        media = try UDPSocket(address: "127.0.0.1:0")
        webSocket = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal?room=\(room)")
        webSocket.setHandler(
            message: { [inbox] text in
                guard let message = try? ServerMessage(json: text) else { return }
                inbox.messages.withLock { $0.append(message) }
            },
            closed: { _, _ in })
        try webSocket.connect(timeout: 10)
        let port = withoutMedia ? nil : rtpPort ?? media.port
        webSocket.send(ClientMessage.join(token: token ?? CallTestServer.token(participant, role: role, room: room), mic: false, webcam: false, rtpPort: port).json)
    }

    /// Every message received so far, in order.
    var messages: [ServerMessage] { inbox.messages.withLock { $0 } }

    var joined: Bool { messages.contains { if case .joined = $0 { true } else { false } } }

    /// The code of the first `error` received.
    var errorCode: CallErrorCode? {
        for case .error(let error) in messages { return error.code }
        return nil
    }

    /// The `audio-levels` messages received so far that name `participant`.
    func levelReports(naming participant: String) -> Int {
        messages.count { if case .audioLevels(_, let levels, _) = $0 { levels[participant] != nil } else { false } }
    }

    /// Takes the datagrams waiting on `media` (at most 100,000) and returns how many there were.
    func takeDatagrams() -> Int {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        var count = 0
        while count < 100_000, media.receive(into: buffer) != nil { count += 1 }
        return count
    }

    /// The `error` messages received so far, in order.
    var errors: [CallError] { messages.compactMap { if case .error(let error) = $0 { error } else { nil } } }

    /// Sends any message.
    func send(_ message: ClientMessage) { webSocket.send(message.json) }

    /// Sends `ping`; `pongs` counts the answers.
    func ping() { webSocket.send(ClientMessage.ping.json) }

    var pongs: Int { messages.count { $0 == .pong } }

    func close() { webSocket.close() }
}

import CallProtocol
@testable import CallServer
import CallTransport
import Foundation
import Redis
import Synchronization
import Testing
import TestSupport

/// A webhook receiver on loopback: records every request, answers 503 to the first `failing` attempts of each
/// room (by `ActiveSpeaker-Room`) and 204 after.
final class WebhookReceiver: WebServerDelegate {
    struct Received: Sendable {
        var room: String
        var sequence: Int
        var attempt: Int
        var delivery: String
        var body: [UInt8]
        var signature: String
        var accepted: Bool
    }

    let received = Mutex<[Received]>([])
    private let failing: Int
    private let server = Mutex<WebServer?>(nil)

    init(failing: Int) throws {
        self.failing = failing
        let server = try WebServer(
            customHeaders: ["activespeaker-room", "activespeaker-sequence", "activespeaker-attempt", "activespeaker-delivery", "activespeaker-signature"],
            delegate: self)
        server.start()
        self.server.withLock { $0 = server }
    }

    var url: String { "http://127.0.0.1:\(server.withLock { $0!.port })/hooks/activespeaker" }

    func stop() { server.withLock { $0?.stop() } }

    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse {
        let room = request.headers["activespeaker-room"] ?? ""
        return received.withLock { received in
            let earlier = received.filter { $0.room == room }.count
            let accepted = earlier >= failing && request.path == "/hooks/activespeaker"
            received.append(Received(
                room: room, sequence: Int(request.headers["activespeaker-sequence"] ?? "") ?? -1,
                attempt: Int(request.headers["activespeaker-attempt"] ?? "") ?? -1, delivery: request.headers["activespeaker-delivery"] ?? "",
                body: request.body, signature: request.headers["activespeaker-signature"] ?? "", accepted: accepted))
            return accepted ? .empty(status: 204) : .text(status: 503, "try later\n")
        }
    }

    /// The accepted deliveries of `room`, in the order they arrived.
    func accepted(_ room: String) -> [Received] { received.withLock { $0.filter { $0.room == room && $0.accepted } } }

    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {}
    func webSocketReceived(_ connection: ConnectionID, text: String) {}
    func webSocketClosed(_ connection: ConnectionID) {}
}

@Suite("Webhooks")
struct WebhookTests {
    static let secret = Array("webhook-test-secret-0123456789".utf8)

    @Test("The outbox: in order per room, rooms independent, backoff doubling to its cap, given up when too old")
    func outboxRules() throws {
        var outbox = WebhookOutbox(settings: .init(firstRetry: 0.5, maximumRetry: 4, maximumAge: 10, maximumPending: 3))
        let dropped1 = outbox.add(room: "a", body: [1], now: 0)
        #expect(dropped1 == nil)
        let dropped2 = outbox.add(room: "a", body: [2], now: 0.1)
        #expect(dropped2 == nil)
        let dropped3 = outbox.add(room: "b", body: [3], now: 0.2)
        #expect(dropped3 == nil)
        let taken4 = outbox.take(now: 0)
        let a1 = try #require(taken4)
        #expect(a1.room == "a" && a1.sequence == 1)
        // a's second waits for its first; b goes meanwhile.
        let taken5 = outbox.take(now: 0.3)
        let b1 = try #require(taken5)
        #expect(b1.room == "b" && b1.sequence == 1)
        let taken6 = outbox.take(now: 0.3)
        #expect(taken6 == nil)
        let givenUp7 = outbox.finish(a1, delivered: false, now: 1)
        #expect(givenUp7 == nil)
        let taken8 = outbox.take(now: 1.4)
        #expect(taken8 == nil)
        #expect(outbox.nextDue(now: 1.4) == 1.5)
        let taken9 = outbox.take(now: 1.5)
        let retry = try #require(taken9)
        #expect(retry.sequence == 1 && retry.attempts == 1)
        #expect([1, 2, 3, 4, 5].map { outbox.retryDelay(afterAttempts: $0) } == [0.5, 1, 2, 4, 4])
        let givenUp10 = outbox.finish(retry, delivered: true, now: 1.6)
        #expect(givenUp10 == nil)
        let taken11 = outbox.take(now: 1.6)
        let a2 = try #require(taken11)
        #expect(a2.sequence == 2 && a2.body == [2])
        // Too old after a failure: given up, and the room's next goes.
        let givenUp12 = outbox.finish(a2, delivered: false, now: 10.2)
        #expect(givenUp12 == .tooOld(a2))
        let givenUp13 = outbox.finish(b1, delivered: true, now: 10.2)
        #expect(givenUp13 == nil)
        #expect(outbox.pending == 0)
        #expect(outbox.delivered == 2 && outbox.failedAttempts == 2 && outbox.givenUp == 1)
        // A full room gives up its oldest waiting event, never the one in flight; sequence numbers go on.
        for body in 4...6 { _ = outbox.add(room: "a", body: [UInt8(body)], now: 11) }
        let taken14 = outbox.take(now: 11)
        let inFlight = try #require(taken14)
        #expect(inFlight.sequence == 3)
        guard case .overflow(let dropped) = outbox.add(room: "a", body: [7], now: 11) else {
            Issue.record("a fourth event in a room of three should push one out")
            return
        }
        #expect(dropped.sequence == 4)
        let givenUp15 = outbox.finish(inFlight, delivered: true, now: 11)
        #expect(givenUp15 == nil)
        let taken16 = outbox.take(now: 11)
        #expect(taken16?.sequence == 5)
    }

    @Test("Signatures: made and checked; another body, secret or a stale time fails")
    func signatures() throws {
        let body = Array(#"{"type":"speaker-changed"}"#.utf8)
        let header = WebhookSignature(secret: Self.secret, time: 1_800_000_000, body: body).headerValue
        #expect(header.hasPrefix("t=1800000000,v1=") && header.count == 16 + 64)
        #expect(WebhookSignature.verify(header: header, body: body, secret: Self.secret, now: 1_800_000_100))
        #expect(!WebhookSignature.verify(header: header, body: body + [32], secret: Self.secret, now: 1_800_000_100))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: Array("another-secret-0123456789".utf8), now: 1_800_000_100))
        #expect(!WebhookSignature.verify(header: header, body: body, secret: Self.secret, now: 1_800_000_301))
        #expect(!WebhookSignature.verify(header: "t=1,v1=zz", body: body, secret: Self.secret, now: 1))
    }

    @Test("A receiver that fails each room's first 3 attempts gets every event, in order per room, signed, none twice")
    func nothingLostAcrossFailures() throws {
        let receiver = try WebhookReceiver(failing: 3)
        defer { receiver.stop() }
        let reports = Mutex<[WebhookSender.Report]>([])
        let started = Date()
        let sender = WebhookSender(
            WebhookConfiguration(url: receiver.url, secret: Self.secret),
            settings: .init(firstRetry: 0.02, maximumRetry: 0.1, maximumAge: 600, maximumPending: 1000),
            clock: { Date().timeIntervalSince(started) }
        ) { report in reports.withLock { $0.append(report) } }
        let rooms = ["standup", "retro"]
        for index in 1...25 {
            for room in rooms { sender.add(room: CallRoomID(room), line: #"{"type":"speaker-changed","room":"\#(room)","n":\#(index)}"#) }
        }
        #expect(Waiting.until(timeout: 30) { rooms.allSatisfy { receiver.accepted($0).count == 25 } })
        #expect(sender.stop(within: 5) == 0)
        let now = Int(Date().timeIntervalSince1970)
        for room in rooms {
            let accepted = receiver.accepted(room)
            #expect(accepted.map(\.sequence) == Array(1...25))
            #expect(accepted.map { String(decoding: $0.body, as: UTF8.self) } == (1...25).map { #"{"type":"speaker-changed","room":"\#(room)","n":\#($0)}"# })
            #expect(accepted.allSatisfy { WebhookSignature.verify(header: $0.signature, body: $0.body, secret: Self.secret, now: now) })
            #expect(accepted.first?.attempt == 4)
            #expect(Set(accepted.map(\.delivery)).count == 25)
            let all = receiver.received.withLock { $0.filter { $0.room == room } }
            #expect(all.prefix(4).map(\.sequence) == [1, 1, 1, 1])
            #expect(all.count == 28)
        }
        let statistics = sender.statistics
        #expect(statistics.delivered == 50 && statistics.failedAttempts == 6 && statistics.givenUp == 0 && statistics.pending == 0)
        let failed = reports.withLock { $0 }
        #expect(failed.count == 6)
        #expect(failed.allSatisfy { if case .failed(_, 1, _, "HTTP 503", _) = $0 { true } else { false } })
    }

    @Test("An unreachable receiver: attempts fail and are retried until the delivery is too old, then given up and reported")
    func givenUpWhenTooOld() throws {
        let reports = Mutex<[WebhookSender.Report]>([])
        let started = Date()
        let sender = WebhookSender(
            WebhookConfiguration(url: "http://127.0.0.1:9/hooks", secret: Self.secret),
            settings: .init(firstRetry: 0.02, maximumRetry: 0.05, maximumAge: 0.3, maximumPending: 10),
            clock: { Date().timeIntervalSince(started) }
        ) { report in reports.withLock { $0.append(report) } }
        sender.add(room: "standup", line: "{}")
        sender.add(room: "standup", line: "{}")
        #expect(Waiting.until(timeout: 20) { sender.statistics.givenUp == 2 })
        #expect(sender.stop(within: 0) == 0)
        let all = reports.withLock { $0 }
        let givenUp = all.compactMap { if case .givenUp(_, let sequence, let reason) = $0 { (sequence, reason) } else { nil } }
        #expect(givenUp.map(\.0) == [1, 2])
        #expect(givenUp.first?.1.contains("connect failed") == true)
        #expect(all.count > 2)
    }

    @Test("serve posts its rooms' events to the webhook: a receiver failing the first 3 attempts gets them all, in order")
    func serverPostsRoomEvents() throws {
        let receiver = try WebhookReceiver(failing: 3)
        defer { receiver.stop() }
        let lines = Mutex<[String]>([])
        var configuration = RoomServerConfiguration()
        configuration.secret = CallTestServer.secret
        configuration.webhook = WebhookConfiguration(url: receiver.url, secret: Self.secret)
        let server = try RoomServer(configuration: configuration) { line in lines.withLock { $0.append(line) } }
        server.start()
        let admin = ["authorization": "Bearer \(CallTestServer.adminToken())"]
        func call(_ method: String, _ path: String, _ body: String = "") -> Int {
            server.handle(HTTPRequest(method: method, path: path, headers: admin, body: Array(body.utf8)), from: PeerAddress(host: "127.0.0.1", port: 50000)).status
        }
        #expect(call("POST", "/v1/rooms", #"{"roomId":"standup"}"#) == 201)
        #expect(call("POST", "/v1/rooms/standup/ingest", #"{"participantId":"janus-41","displayName":"Alice","source":"127.0.0.1"}"#) == 201)
        #expect(call("DELETE", "/v1/rooms/standup/ingest/janus-41") == 204)
        #expect(call("DELETE", "/v1/rooms/standup") == 204)
        let expected = ["room-opened", "participant-joined", "participant-left", "room-closed"]
        #expect(Waiting.until(timeout: 30) { receiver.accepted("standup").count == expected.count })
        let accepted = receiver.accepted("standup")
        let types = accepted.map { (try? JSONSerialization.jsonObject(with: Data($0.body))) as? [String: Any] }.map { $0?["type"] as? String }
        #expect(types == expected)
        #expect(accepted.map(\.sequence) == [1, 2, 3, 4])
        let joinedBody = try #require(accepted.count > 1 ? accepted[1].body : nil)
        let joined = try JSONSerialization.jsonObject(with: Data(joinedBody)) as? [String: Any]
        #expect(joined?["participant"] as? String == "janus-41")
        let now = Int(Date().timeIntervalSince1970)
        #expect(accepted.allSatisfy { WebhookSignature.verify(header: $0.signature, body: $0.body, secret: Self.secret, now: now) })
        let metrics = String(decoding: server.handle(HTTPRequest(method: "GET", path: "/metrics"), from: PeerAddress(host: "127.0.0.1", port: 50000)).body, as: UTF8.self)
        #expect(metrics.contains(#"activespeaker_webhook_deliveries_total{outcome="delivered"} 4"#))
        #expect(metrics.contains(#"activespeaker_webhook_deliveries_total{outcome="failed"} 3"#))
        server.stop()
        let failures = lines.withLock { $0.filter { $0.contains(#""type":"webhook-failed""#) } }
        #expect(failures.count == 3)
        #expect(failures.allSatisfy { !$0.contains("webhook-test-secret") })
    }
}

/// `serve --events-redis`: one process publishes its rooms' events on Redis without joining a cluster (the
/// sidecar's way to Redis).
@Suite("Room events on Redis without a cluster", .enabled(if: RedisServer.isAvailable, "needs redis-server (tools/install-deps.sh)"))
struct EventsOnRedisTests {
    @Test func aSingleServerPublishesEachRoomsEventsOnItsChannelInOrder() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let lines = Locked<[String]>([])
        let subscribed = Locked(false)
        let subscriber = RedisSubscriber(
            url: try RedisURL(redis.url), channels: ["activespeaker:room:standup:events"],
            onMessage: { _, payload in lines.withLock { $0.append(payload) } }, onState: { up in subscribed.withLock { $0 = up } })
        subscriber.start()
        defer { subscriber.stop() }
        #expect(Waiting.until { subscribed.withLock { $0 } })
        var configuration = RoomServerConfiguration()
        configuration.secret = CallTestServer.secret
        configuration.eventsRedis = redis.url
        let server = try RoomServer(configuration: configuration)
        server.start()
        defer { server.stop() }
        try server.openRoomIfMissing("standup")
        _ = try server.addIngest(room: "standup", participant: "janus-7", displayName: "Alice", source: "127.0.0.1")
        try server.removeIngest(room: "standup", participant: "janus-7")
        server.closeRoomIfPresent("standup")
        let expected = ["room-opened", "participant-joined", "participant-left", "room-closed"]
        #expect(Waiting.until { lines.withLock { $0.count } == expected.count })
        let types = lines.withLock { $0 }.map { (try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])?["type"] as? String }
        #expect(types == expected)
        #expect(lines.withLock { $0[1] }.contains(#""participant":"janus-7""#))
        var clustered = configuration
        clustered.cluster = try ClusterConfiguration(redis: redis.url, nodeID: "n1", advertiseHost: "127.0.0.1")
        #expect(throws: CallError.self) { _ = try RoomServer(configuration: clustered) }
    }
}

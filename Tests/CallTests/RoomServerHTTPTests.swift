import Foundation
import SpeakerRTP
import TestSupport
import CallTransport
import Testing

@testable import CallServer

/// The room server's HTTP and upgrade routing, without clients.
@Suite struct RoomServerHTTPTests {
    /// HEAD is GET without the body (RFC 9110 §9.3.2): the answer carries GET's status and headers,
    /// and the transport leaves the body out (HTTPTests).
    @Test func headOfHealthAnswersAsGet() throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let peer = PeerAddress(host: "127.0.0.1", port: 50000)
        let head = server.handle(HTTPRequest(method: "HEAD", path: "/v1/health"), from: peer)
        let get = server.handle(HTTPRequest(method: "GET", path: "/v1/health"), from: peer)
        #expect(head.status == 200)
        #expect(head.contentType == get.contentType && head.body == get.body)
    }

    /// Signalling is the WebSocket on /v1/signal; an upgrade anywhere else is not a way into a room.
    @Test(arguments: ["/", "/v1/health", "/v1/rooms/room", "/v1/signal/x", "/rooms/room"])
    func signallingOnlyOnItsPath(path: String) throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let elsewhere = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)\(path)?room=room")
        #expect(throws: TransportError.self) { try elsewhere.connect(timeout: 5) }
        elsewhere.close()
        let signal = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal?room=room")
        try signal.connect(timeout: 5)
        signal.close()
    }

    /// `POST /v1/rooms` with `levelsOnly`: the room says so when read back, others do not; a recording server
    /// answers 400 (a level-only room has no audio to record) and makes no room.
    @Test func aRoomCanBeCreatedLevelOnly() throws {
        let peer = PeerAddress(host: "127.0.0.1", port: 50000)
        let authorization = ["authorization": "Bearer \(CallTestServer.adminToken())"]
        func create(_ body: String, on server: RoomServer) -> HTTPResponse {
            server.handle(HTTPRequest(method: "POST", path: "/v1/rooms", headers: authorization, body: Array(body.utf8)), from: peer)
        }
        func read(_ room: String, on server: RoomServer) -> String {
            String(decoding: server.handle(HTTPRequest(method: "GET", path: "/v1/rooms/\(room)", headers: authorization), from: peer).body, as: UTF8.self)
        }
        let server = try CallTestServer.server()
        defer { server.stop() }
        #expect(create(#"{"roomId":"quiet","levelsOnly":true}"#, on: server).status == 201)
        #expect(read("quiet", on: server).contains(#""levelsOnly":true"#), "\(read("quiet", on: server))")
        #expect(read("room", on: server).contains(#""levelsOnly":false"#), "\(read("room", on: server))")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("levels-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let recording = try CallTestServer.server(recordingDirectory: directory)
        defer { recording.stop() }
        let refused = create(#"{"roomId":"quiet","levelsOnly":true}"#, on: recording)
        #expect(refused.status == 400, "\(String(decoding: refused.body, as: UTF8.self))")
        #expect(read("quiet", on: recording).contains("4003"), "\(read("quiet", on: recording))")
    }

    /// `POST /v1/rooms/room/ingest` for participant `lobby` from `source`, as a server-wide moderator.
    static func addIngest(source: String, to server: RoomServer) -> HTTPResponse {
        let request = HTTPRequest(
            method: "POST", path: "/v1/rooms/room/ingest", headers: ["authorization": "Bearer \(CallTestServer.adminToken())"],
            body: Array(#"{"participantId":"lobby","source":"\#(source)"}"#.utf8))
        return server.handle(request, from: PeerAddress(host: "127.0.0.1", port: 50000))
    }

    /// Hardening item 11: ingest sources were resolved with a blocking getaddrinfo on the signalling
    /// thread, and `[::1]`/`0.0.0.0` were accepted on an IPv4 RTP socket, where they can never match.
    @Test(arguments: ["[::1]:5004", "::1", "0.0.0.0", "0.0.0.0:5004", "localhost", "localhost:5004", "example.invalid"])
    func ingestSourcesAreNumericAndReachable(source: String) throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let answer = Self.addIngest(source: source, to: server)
        #expect(answer.status == 400, "\(String(decoding: answer.body, as: UTF8.self))")
        #expect(String(decoding: answer.body, as: UTF8.self).contains("4007"))
    }

    @Test(arguments: ["127.0.0.1", "127.0.0.1:5004", "192.0.2.7"])
    func numericIPv4SourcesAreAccepted(source: String) throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let answer = Self.addIngest(source: source, to: server)
        #expect(answer.status == 201, "\(String(decoding: answer.body, as: UTF8.self))")
    }
}

/// `GET /metrics` (Prometheus text format) and `GET /v1/ready`.
@Suite struct MetricsTests {
    static let python = "/usr/bin/python3"
    /// Debian's python3-prometheus-client (tools/install-deps.sh) in the system Python; tools/test.sh
    /// runs the test without it, and fails.
    static var hasParser: Bool {
        if ProcessInfo.processInfo.environment["ACTIVESPEAKER_ALL_TESTS"] == "1" { return true }
        return FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/prometheus_client/__init__.py")
    }

    /// The page parses with the Prometheus client's own parser, and says what the server holds.
    @Test(.enabled(if: hasParser, "no python3-prometheus-client; tools/install-deps.sh installs it"))
    func metricsParseWithPrometheusParser() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let peer = PeerAddress(host: "127.0.0.1", port: 50000)
        #expect(RoomServerHTTPTests.addIngest(source: "127.0.0.1:5004", to: server).status == 201)
        // The quantiles are taken once a second of media clock: wait for them.
        #expect(await Waiting.until(timeout: 30) { server.mediaStatistics.tickTimes.p99 > 0 })
        let answer = server.handle(HTTPRequest(method: "GET", path: "/metrics"), from: peer)
        #expect(answer.status == 200)
        #expect(answer.contentType.hasPrefix("text/plain; version=0.0.4"))
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("metrics-\(UUID().uuidString).txt")
        try Data(answer.body).write(to: page)
        defer { try? FileManager.default.removeItem(at: page) }
        let script = """
            import json, sys
            from prometheus_client.parser import text_string_to_metric_families
            out = {}
            for family in text_string_to_metric_families(open(sys.argv[1]).read()):
                for sample in family.samples:
                    key = sample.name + ("{" + ",".join(k + "=" + v for k, v in sorted(sample.labels.items())) + "}" if sample.labels else "")
                    out[key] = [family.type, sample.value]
            print(json.dumps(out))
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.python)
        process.arguments = ["-c", script, page.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let samples = try #require(try JSONSerialization.jsonObject(with: output) as? [String: [Any]])
        func value(_ key: String) -> Double? { samples[key]?[1] as? Double }
        func type(_ key: String) -> String? { samples[key]?[0] as? String }
        #expect(value("activespeaker_rooms") == 1 && type("activespeaker_rooms") == "gauge")
        #expect(value("activespeaker_participants") == 1)
        #expect(type("activespeaker_rtp_packets_accepted_total") == "counter")
        #expect(value("activespeaker_rtp_packets_dropped_total{reason=unknown_ssrc}") == 0)
        #expect(value("activespeaker_recording_dropped_hops_total") == 0)
        let median = try #require(value("activespeaker_media_tick_seconds{quantile=0.5}"))
        let worst = try #require(value("activespeaker_media_tick_seconds{quantile=1}"))
        #expect(type("activespeaker_media_tick_seconds{quantile=0.5}") == "summary")
        #expect(median > 0 && median <= worst && worst < 10)
        #expect((value("activespeaker_media_tick_seconds_count") ?? 0) >= 100)
    }

    /// Issue 29: RTCP on the RTP port was counted as `malformed` although it is skipped.
    @Test func rtcpIsCountedApartFromMalformedDatagrams() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let sender = try UDPSocket(address: "127.0.0.1:0")
        let rtp = try #require(SocketAddress(host: "127.0.0.1", port: server.rtpPort))
        // A sender report, a receiver report and an SDES (payload types 200, 201, 202), then one datagram that is not RTP.
        let datagrams: [[UInt8]] = [
            [0x80, 200, 0, 6] + [UInt8](repeating: 1, count: 24), [0x80, 201, 0, 1, 0, 0, 0, 7],
            [0x81, 202, 0, 2, 0, 0, 0, 7, 1, 1, 0x41, 0], [0x12, 0x34, 0x56],
        ]
        for datagram in datagrams { #expect(datagram.withUnsafeBytes { sender.send($0, to: rtp) }) }
        #expect(await Waiting.until { let s = server.mediaStatistics; return s.rtcp + s.malformed == 4 }, "\(server.mediaStatistics)")
        #expect(server.mediaStatistics.rtcp == 3 && server.mediaStatistics.malformed == 1)
        let page = String(decoding: server.handle(HTTPRequest(method: "GET", path: "/metrics"), from: PeerAddress(host: "127.0.0.1", port: 50000)).body, as: UTF8.self)
        #expect(page.contains("\nactivespeaker_rtcp_packets_total 3\n"), "\(page)")
        #expect(page.contains("\nactivespeaker_rtp_packets_dropped_total{reason=\"malformed\"} 1\n"), "\(page)")
    }

    /// Ready once the media loop's thread runs its clock (a moment after `start`), not once stopped.
    @Test func readyWhileTheMediaLoopKeepsTime() async throws {
        let server = try CallTestServer.server()
        let peer = PeerAddress(host: "127.0.0.1", port: 50000)
        #expect(await Waiting.until(timeout: 30) { server.handle(HTTPRequest(method: "GET", path: "/v1/ready"), from: peer).status == 200 })
        let ready = server.handle(HTTPRequest(method: "GET", path: "/v1/ready"), from: peer)
        #expect(String(decoding: ready.body, as: UTF8.self).hasPrefix(#"{"mediaBehindSeconds":"#))
        server.stop()
        let stopped = server.handle(HTTPRequest(method: "GET", path: "/v1/ready"), from: peer)
        #expect(stopped.status == 503)
        #expect(String(decoding: stopped.body, as: UTF8.self) == #"{"mediaBehindSeconds":null,"ready":false}"#)
    }
}

/// `GET /`: the rooms, for a server-wide token.
@Suite struct RoomIndexTests {
    @Test func theIndexListsRoomsForAServerWideToken() throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let peer = PeerAddress(host: "127.0.0.1", port: 50000)
        let admin = CallTestServer.adminToken()
        let page = server.handle(HTTPRequest(method: "GET", path: "/", query: ["token": admin]), from: peer)
        #expect(page.status == 200 && page.contentType.hasPrefix("text/html"))
        let html = String(decoding: page.body, as: UTF8.self)
        #expect(html.contains(#"<a href="/rooms/room?token=\#(admin)">room</a> (0 participants)"#), "\(html)")
        // A room's own token may open that room's dashboard, not the list of every room.
        #expect(server.handle(HTTPRequest(method: "GET", path: "/", query: ["token": CallTestServer.token("alice")]), from: peer).status == 403)
        #expect(server.handle(HTTPRequest(method: "GET", path: "/"), from: peer).status == 401)
        #expect(server.handle(HTTPRequest(method: "GET", path: "/", query: ["token": "<script>"]), from: peer).status == 401)
    }
}

import CallProtocol
import CallServer
import Foundation
@testable import SFUSidecar
import CallTransport
import Synchronization
import Testing
import TestSupport

/// A Janus VideoRoom in memory: rooms, publishers and forwarders that the adapter reads and changes through
/// `JanusVideoRoom`, as Janus's HTTP API would; `reachable` false answers every request with a refused connection.
final class FakeJanus: JanusVideoRoom {
    struct State {
        var rooms: [JanusID: [JanusPublisher]] = [:]
        var forwarders: [JanusID: [JanusForwarder]] = [:]
        var reachable = true
        var nextStream: UInt64 = 100
        var requests: [String] = []
    }

    let state = Mutex(State())

    func rooms() throws(SidecarError) -> [JanusID] {
        try answer("list") { Array($0.rooms.keys) }
    }

    func publishers(in room: JanusID) throws(SidecarError) -> [JanusPublisher] {
        try answer("listparticipants") { $0.rooms[room] ?? [] }
    }

    func forwarders(in room: JanusID) throws(SidecarError) -> [JanusForwarder] {
        try answer("listforwarders") { $0.forwarders[room] ?? [] }
    }

    func forward(room: JanusID, publisher: JanusID, host: String, port: Int, ssrc: UInt32) throws(SidecarError) {
        try answer("rtp_forward") { state in
            state.nextStream += 1
            state.forwarders[room, default: []].append(
                JanusForwarder(publisher: publisher, stream: state.nextStream, host: host, port: port, ssrc: ssrc, type: "audio"))
        }
    }

    func stopForward(room: JanusID, publisher: JanusID, stream: UInt64) throws(SidecarError) {
        try answer("stop_rtp_forward") { $0.forwarders[room]?.removeAll { $0.stream == stream } }
    }

    /// A publisher joins (no forwarder yet), or leaves (its forwarders go, as Janus drops them on unpublish).
    func publish(_ id: UInt64, _ display: String, in room: UInt64 = 1234) {
        state.withLock { $0.rooms[.number(room), default: []].append(JanusPublisher(id: .number(id), display: display)) }
    }

    func unpublish(_ id: UInt64, in room: UInt64 = 1234) {
        state.withLock {
            $0.rooms[.number(room)]?.removeAll { $0.id == .number(id) }
            $0.forwarders[.number(room)]?.removeAll { $0.publisher == .number(id) }
        }
    }

    func forwarders() -> [JanusForwarder] { state.withLock { $0.forwarders.values.flatMap { $0 } } }

    private func answer<T>(_ request: String, _ body: (inout State) -> T) throws(SidecarError) -> T {
        let result: T? = state.withLock { state in
            state.requests.append(request)
            return state.reachable ? body(&state) : nil
        }
        guard let result else { throw SidecarError("janus \(request)", "connect failed (Connection refused)") }
        return result
    }
}

@Suite("Janus sidecar: rules, events, credentials, and the adapter on a fake Janus")
struct JanusSidecarTests {
    static let target = JanusForwarding.Target(host: "127.0.0.1", port: 5004)

    @Test("The plan: a new publisher is published, a missing forwarder made, stale and duplicate ones stopped, the gone removed")
    func planRules() {
        let room = JanusID.number(1234)
        let janus = [
            JanusForwarding.Room(
                id: room,
                publishers: [JanusPublisher(id: .number(1), display: "alice"), JanusPublisher(id: .number(2), display: "bob"),
                             JanusPublisher(id: .number(3), display: "carol")],
                forwarders: [
                    // alice: ours, kept; a duplicate of it, stopped.
                    JanusForwarder(publisher: .number(1), stream: 11, host: "127.0.0.1", port: 5004, ssrc: 0xA, type: "audio"),
                    JanusForwarder(publisher: .number(1), stream: 12, host: "127.0.0.1", port: 5004, ssrc: 0xA, type: "audio"),
                    // bob: an earlier run's SSRC, stopped, and a new one made.
                    JanusForwarder(publisher: .number(2), stream: 21, host: "127.0.0.1", port: 5004, ssrc: 0x99, type: "audio"),
                    // someone else's forwarder (a recorder elsewhere): left alone.
                    JanusForwarder(publisher: .number(2), stream: 22, host: "10.0.0.9", port: 6000, ssrc: 0x77, type: "audio"),
                ]),
        ]
        let ingests = [
            IngestPublisher(room: "1234", participant: "1", ssrc: 0xA), IngestPublisher(room: "1234", participant: "2", ssrc: 0xB),
            IngestPublisher(room: "1234", participant: "4", ssrc: 0xD),
        ]
        let actions = JanusForwarding.plan(janus: janus, ingests: ingests, mirrored: ["1234", "old"], target: Self.target)
        let expected: [JanusForwarding.Action] = [
            .stopForward(room: room, publisher: .number(1), stream: 12),
            .stopForward(room: room, publisher: .number(2), stream: 21),
            .forward(room: room, publisher: .number(2), ssrc: 0xB),
            .publish(room: room, publisher: JanusPublisher(id: .number(3), display: "carol")),
            .remove(room: "1234", participant: "4"),
            .closeRoom("old"),
        ]
        #expect(actions == expected)
        // Once carried out, the same snapshot asks for nothing more.
        let settled = JanusForwarding.Room(
            id: room, publishers: janus[0].publishers,
            forwarders: [
                JanusForwarder(publisher: .number(1), stream: 11, host: "127.0.0.1", port: 5004, ssrc: 0xA, type: "audio"),
                JanusForwarder(publisher: .number(2), stream: 23, host: "127.0.0.1", port: 5004, ssrc: 0xB, type: "audio"),
                JanusForwarder(publisher: .number(3), stream: 31, host: "127.0.0.1", port: 5004, ssrc: 0xC, type: "audio"),
            ])
        let after = ingests.dropLast() + [IngestPublisher(room: "1234", participant: "3", ssrc: 0xC)]
        #expect(JanusForwarding.plan(janus: [settled], ingests: Array(after), mirrored: ["1234"], target: Self.target).isEmpty)
    }

    @Test("Events: published, leaving, unpublished, kicked and destroyed read from the event handler's posts; the rest skipped")
    func events() throws {
        let grouped = """
            [{"emitter":"j","type":1,"timestamp":1,"session_id":5,"event":{"name":"created","transport":{"transport":"janus.transport.http","id":"9"}}},
             {"emitter":"j","type":64,"timestamp":2,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"joined","room":1234,"id":7,"display":"alice"}}},
             {"emitter":"j","type":64,"timestamp":3,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"published","room":1234,"id":7,"display":"alice","streams":[{"type":"audio","mid":"0"}]}}},
             {"emitter":"j","type":64,"timestamp":4,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"rtp_forward","room":1234,"publisher_id":7,"stream_id":3}}},
             {"emitter":"j","type":64,"timestamp":5,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"leaving","room":1234,"id":7}}},
             {"emitter":"j","type":64,"timestamp":6,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"unpublished","room":"lobby","id":"x1"}}},
             {"emitter":"j","type":64,"timestamp":7,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"kicked","room":1234,"id":8,"odd":{"x":[1]}}}},
             {"emitter":"j","type":64,"timestamp":8,"event":{"plugin":"janus.plugin.audiobridge","data":{"event":"leaving","room":1234,"id":9}}},
             {"emitter":"j","type":64,"timestamp":9,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"destroyed","room":1234}}}]
            """
        #expect(try JanusEvent.events(in: Array(grouped.utf8)) == [
            .published(room: .number(1234), publisher: JanusPublisher(id: .number(7), display: "alice")),
            .gone(room: .number(1234), publisher: .number(7)),
            .gone(room: .text("lobby"), publisher: .text("x1")),
            .gone(room: .number(1234), publisher: .number(8)),
            .destroyed(room: .number(1234)),
        ])
        let single = #"{"type":64,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"published","room":5,"id":6}}}"#
        #expect(try JanusEvent.events(in: Array(single.utf8)) == [.published(room: .number(5), publisher: JanusPublisher(id: .number(6), display: nil))])
        #expect(throws: SidecarError.self) { _ = try JanusEvent.events(in: Array("not json".utf8)) }
    }

    @Test("Credentials: read from JSON, secrets never shown, events password checked as HTTP basic")
    func credentials() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("janus-credentials-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("janus.json").path
        try #"{"roomSecret":"s3cret-room","roomSecrets":{"7":"other"},"eventsUser":"janus","eventsPassword":"pw-123"}"#
            .write(toFile: file, atomically: true, encoding: .utf8)
        let credentials = try JanusCredentials(file: file)
        #expect(!credentials.description.contains("s3cret") && !credentials.description.contains("pw-123"))
        #expect(credentials.description.contains("roomSecret"))
        let basic = "Basic " + Data("janus:pw-123".utf8).base64EncodedString()
        let wrong = "Basic " + Data("janus:nope".utf8).base64EncodedString()
        #expect(credentials.allowsEvents(authorization: basic) && !credentials.allowsEvents(authorization: wrong) && !credentials.allowsEvents(authorization: nil))
        try #"{"roomSecret":5}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let typed = #expect(throws: SidecarError.self) { _ = try JanusCredentials(file: file) }
        #expect(typed?.message.contains("roomSecret") == true)
        try #"{"eventsUser":"janus"}"#.write(toFile: file, atomically: true, encoding: .utf8)
        #expect(throws: SidecarError.self) { _ = try JanusCredentials(file: file) }
        #expect(throws: SidecarError.self) { _ = try JanusCredentials(file: directory.appendingPathComponent("none").path) }
    }

    /// A room server with the adapter on a fake Janus, snapshots every 0.1 s.
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func withLock<T>(_ body: (inout [String]) -> T) -> T { lines.withLock { body(&$0) } }
    }

    static func adapter(_ janus: FakeJanus, server: RoomServer, events: Bool = false) throws -> (JanusAdapter, Lines) {
        var configuration = JanusAdapterConfiguration(url: "http://127.0.0.1:1/janus", target: target, source: "127.0.0.1")
        configuration.interval = 0.1
        configuration.events = events ? ("127.0.0.1", 0) : nil
        let lines = Lines()
        let adapter = try JanusAdapter(configuration: configuration, server: server, janus: janus) { line in lines.withLock { $0.append(line) } }
        adapter.start()
        return (adapter, lines)
    }

    @Test("The adapter mirrors publishers as they come and go, heals after Janus forgets everything, and stops stale forwarders")
    func adapterFollowsJanus() throws {
        let server = try CallTestServer.server(rooms: [])
        defer { server.stop() }
        let janus = FakeJanus()
        janus.publish(1, "alice")
        janus.publish(2, "bob")
        // A forwarder an earlier run of the sidecar left: stopped.
        janus.state.withLock {
            $0.forwarders[.number(1234)] = [JanusForwarder(publisher: .number(1), stream: 7, host: "127.0.0.1", port: 5004, ssrc: 42, type: "audio")]
        }
        let (adapter, lines) = try Self.adapter(janus, server: server)
        defer { adapter.stop() }
        func mirrored() -> [String: UInt32] {
            Dictionary(uniqueKeysWithValues: server.ingestPublishers().filter { $0.room == "1234" }.map { ($0.participant, $0.ssrc) })
        }
        func forwardedExactly() -> Bool {
            let ours = mirrored()
            let forwarders = janus.forwarders()
            return forwarders.count == ours.count && forwarders.allSatisfy { ours[$0.publisher.description] == $0.ssrc && $0.port == 5004 }
        }
        #expect(Waiting.until { Set(mirrored().keys) == ["1", "2"] && forwardedExactly() })
        #expect(server.roomIDs().contains("1234"))
        janus.publish(3, "carol")
        janus.unpublish(1)
        #expect(Waiting.until { Set(mirrored().keys) == ["2", "3"] && forwardedExactly() })
        // Janus restarts: unreachable for a while, then back with nothing; the pages publish again with new ids.
        janus.state.withLock { $0.reachable = false }
        #expect(Waiting.until { lines.withLock { $0.contains { $0.contains(#""type":"janus-unreachable""#) } } })
        janus.state.withLock {
            $0.rooms = [:]
            $0.forwarders = [:]
            $0.reachable = true
        }
        #expect(Waiting.until { lines.withLock { $0.contains { $0.contains(#""type":"janus-reachable""#) } } })
        #expect(Waiting.until { !server.roomIDs().contains("1234") }, "the room Janus no longer has is closed")
        janus.publish(11, "alice")
        #expect(Waiting.until { Set(mirrored().keys) == ["11"] && forwardedExactly() })
        let logged = lines.withLock { $0 }
        #expect(logged.contains { $0.contains(#""type":"janus-forwarding""#) && $0.contains(#""display":"alice""#) })
        #expect(logged.contains { $0.contains(#""type":"janus-forward-stopped""#) })
    }

    @Test("Events act at once: a publisher that leaves is removed before the next snapshot; posts need the events password")
    func eventsActAtOnce() throws {
        let server = try CallTestServer.server(rooms: [])
        defer { server.stop() }
        let janus = FakeJanus()
        janus.publish(1, "alice")
        var configuration = JanusAdapterConfiguration(url: "http://127.0.0.1:1/janus", target: Self.target, source: "127.0.0.1")
        configuration.interval = 3600  // one snapshot at start, then events only
        configuration.events = ("127.0.0.1", 0)
        var credentials = JanusCredentials()
        credentials.eventsUser = "janus"
        credentials.eventsPassword = "events-pw"
        configuration.credentials = credentials
        let adapter = try JanusAdapter(configuration: configuration, server: server, janus: janus) { _ in }
        adapter.start()
        defer { adapter.stop() }
        #expect(Waiting.until { server.ingestPublishers().map(\.participant) == ["1"] })
        let port = try #require(adapter.eventsPort)
        let authorization = ("Authorization", "Basic " + Data("janus:events-pw".utf8).base64EncodedString())
        let leaving = Array(#"[{"type":64,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"leaving","room":1234,"id":1}}}]"#.utf8)
        let url = "http://127.0.0.1:\(port)/janus/events"
        let refused = try HTTPClient().send("POST", url, body: leaving).status
        #expect(refused == 401)
        #expect(server.ingestPublishers().count == 1)
        janus.unpublish(1)
        #expect(try HTTPClient().send("POST", url, headers: [authorization], body: leaving).status == 200)
        #expect(Waiting.until { server.ingestPublishers().isEmpty })
        let published = Array(#"{"type":64,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"published","room":1234,"id":5,"display":"eve"}}}"#.utf8)
        janus.publish(5, "eve")
        #expect(try HTTPClient().send("POST", url, headers: [authorization], body: published).status == 200)
        #expect(Waiting.until { server.ingestPublishers().map(\.participant) == ["5"] && janus.forwarders().count == 1 })
        #expect(adapter.snapshots == 1, "events alone did it")
    }
}

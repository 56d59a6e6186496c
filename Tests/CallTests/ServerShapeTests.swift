import CallProtocol
import CallTransport
import Foundation
import SpeakerIO
import Synchronization
import Testing

@testable import CallServer

/// The room server's small parts: routes, the effect executor's order, the log's lines.
@Suite struct ServerShapeTests {
    @Test(arguments: [
        ("GET", "/v1/health", Route.health),
        ("HEAD", "/v1/health", .health),
        ("GET", "/v1/ready", .ready),
        ("GET", "/metrics", .metrics),
        ("POST", "/v1/rooms", .createRoom),
        ("POST", "/v1/rooms/", .createRoom),
        ("GET", "/v1/rooms/standup", .room("standup")),
        ("DELETE", "/v1/rooms/standup", .deleteRoom("standup")),
        ("POST", "/v1/rooms/standup/ingest", .addIngest(room: "standup")),
        ("DELETE", "/v1/rooms/standup/ingest/cam1", .removeIngest(room: "standup", participant: "cam1")),
        ("GET", "/rooms/standup", .dashboard(room: "standup")),
        ("GET", "/", .index),
    ])
    func routesAreTheDocumentedCalls(method: String, path: String, route: Route) throws {
        #expect(try Route(method: method, path: path) == route)
    }

    /// A path no call has is 404 (4016); a call's path with another method is 405 (4017), with `Allow`.
    @Test(arguments: [
        ("GET", "/v1"), ("POST", "/v1/rooms/a/other"), ("GET", "/rooms"), ("GET", "/v2/health"),
        ("POST", "/v1/rooms/a/participants/b/dance"),
    ])
    func unknownPathsAreNotFound(method: String, path: String) {
        #expect(throws: CallError(.noSuchCall, "no such API call: \(method) \(path)")) { try Route(method: method, path: path) }
    }

    @Test(arguments: [
        ("POST", "/", "GET, HEAD"), ("POST", "/v1/health", "GET, HEAD"), ("PUT", "/v1/rooms/a", "GET, HEAD, DELETE"),
        ("GET", "/v1/rooms/a/ingest", "POST"), ("DELETE", "/rooms/a", "GET, HEAD"), ("PATCH", "/v1/rooms", "GET, HEAD, POST"),
        ("GET", "/v1/rooms/a/participants/b", "DELETE"), ("DELETE", "/v1/rooms/a/ingest", "POST"),
    ])
    func otherMethodsAreNotAllowed(method: String, path: String, allowed: String) throws {
        #expect(throws: CallError(.methodNotAllowed, "\(path) takes \(allowed), not \(method)")) { try Route(method: method, path: path) }
        let server = try CallTestServer.server()
        defer { server.stop() }
        let answer = server.handle(HTTPRequest(method: method, path: path), from: PeerAddress(host: "127.0.0.1", port: 50000))
        #expect(answer.status == 405)
        #expect(answer.headers.contains { $0.0 == "Allow" && $0.1 == allowed })
    }

    /// Decisions made on several threads are carried out in the order they were queued, one effect at a
    /// time, each exactly once.
    @Test func effectsAreCarriedOutInDecisionOrderOneAtATime() async {
        final class Record: Sendable {
            let executor = EffectExecutor()
            let decided = Mutex<[Int]>([])
            let performed = Mutex<[Int]>([])
            let inside = Atomic<Int>(0)
            let overlapped = Atomic<Bool>(false)
        }
        let record = Record()
        let threads = 4, decisions = 2_000
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<threads {
                group.addTask {
                    for index in 0..<decisions {
                        let number = thread * decisions + index
                        // The decision's lock: the order of `decided` is the decision order.
                        record.decided.withLock { order in
                            order.append(number)
                            record.executor.enqueue([.send(ConnectionID(rawValue: number), .pong), .close(ConnectionID(rawValue: number))])
                        }
                        record.executor.drain { effect in
                            if record.inside.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                                record.overlapped.store(true, ordering: .relaxed)
                            }
                            if case .send(let connection, _) = effect { record.performed.withLock { $0.append(connection.rawValue) } }
                            record.inside.subtract(1, ordering: .sequentiallyConsistent)
                        }
                    }
                }
            }
        }
        let anyOverlap = record.overlapped.load(ordering: .relaxed)
        #expect(!anyOverlap)
        let performed = record.performed.withLock { $0 }, decided = record.decided.withLock { $0 }
        #expect(performed.count == threads * decisions)
        let firstDifference = zip(performed, decided).enumerated().first { $0.element.0 != $0.element.1 }
        #expect(firstDifference == nil, "performed \(firstDifference.map { "\($0.element.0) where \($0.element.1) was decided, at \($0.offset)" } ?? "")")
    }

    @Test func logLinesAreTheDocumentedJSON() {
        #expect(
            ServerEvent.listening(http: 8080, rtp: 40000, tls: false, mediaPriority: LoopSchedulingOutcome(priority: .realtime)).line()
                == #"{"type":"listening","http":8080,"rtp":40000,"tls":false,"mediaPriority":"realtime"}"#)
        #expect(
            ServerEvent.listening(http: 8080, rtp: 40000, tls: false, mediaPriority: LoopSchedulingOutcome(priority: .normal, refusal: "no")).line()
                == #"{"type":"listening","http":8080,"rtp":40000,"tls":false,"mediaPriority":"normal","realtimeRefused":"no"}"#)
        #expect(ServerEvent.error(connection: 7, code: .rateLimited).line() == #"{"type":"error","connection":7,"code":4015}"#)
        #expect(
            ServerEvent.participantJoined(room: "r", participant: "cam\"1", ssrc: nil).line()
                == #"{"type":"participant-joined","room":"r","participant":"cam\"1","ssrc":null}"#)
        #expect(
            ServerEvent.speakerChanged(room: "r", participant: nil, time: 12.3456).line()
                == #"{"type":"speaker-changed","room":"r","participant":null,"t":12.35}"#)
        #expect(
            ServerEvent.micMuted(room: "r", participant: "bob", muted: true).line(serverTime: 1.23456)
                == #"{"serverTime":1.235,"type":"mic-muted","room":"r","participant":"bob","muted":true}"#)
        #expect(ServerEvent.roomOpened(room: "r").room == nil)
        #expect(ServerEvent.participantLeft(room: "r", participant: "bob").room == "r")
    }
}

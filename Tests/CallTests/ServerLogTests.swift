import CallClient
import CallProtocol
import Foundation
import Synchronization
import Testing
import TestSupport

@testable import CallServer

/// Nothing waits for the server's log (issue 31): the media thread and the signalling thread hand
/// events over and go on while the output is held up; and a broadcast's message is encoded once.
@Suite(.serialized) struct ServerLogTests {
    /// An output that holds every write until the gate opens, keeping the lines written.
    final class HeldOutput: Sendable {
        let gate = DispatchSemaphore(value: 0)
        let lines = Mutex<[String]>([])
        func write(_ line: String) {
            gate.wait()
            gate.signal()
            lines.withLock { $0.append(line) }
        }
        func open() { gate.signal() }
    }

    @Test func eventsAreHandedOverWhileTheOutputIsHeldAndWrittenInOrder() {
        let output = HeldOutput()
        let log = ServerLog(output: output.write, recorder: nil) { 0 }
        let events = (0..<100).map { ServerEvent.micMuted(room: "r", participant: ParticipantID("p\($0)"), muted: true) }
        // With the lines written on the caller's thread, the first call would wait for the gate for ever.
        #expect(CallTestServer.returns(within: 30) { for event in events { log(event) } }, "a call waited for the output")
        output.open()
        log.flush()
        #expect(output.lines.withLock { $0 } == events.map { $0.line() })
    }

    /// A server whose log output is held from the start: a client still joins and is told who speaks
    /// (the transport's thread logs the join, the media thread the speaker change), and the lines all
    /// come once the output moves again.
    @Test(.realTime) func aHeldLogHoldsUpNeitherSignallingNorTheMediaThread() async throws {
        let output = HeldOutput()
        let server = try CallTestServer.server(log: output.write)
        defer { server.stop() }
        let bob = CallEndToEndTests.meeting(
            server, "bob", track: try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac")))
        let speakers = CallEndToEndTests.SpeakerLog()
        bob.addEventListener(speakers)
        try await bob.join()
        defer { bob.leave() }
        #expect(await Waiting.until { speakers.changes.withLock { $0 }.contains("bob") }, "\(speakers.changes.withLock { $0 })")
        #expect(output.lines.withLock { $0 }.isEmpty)
        output.open()
        #expect(await Waiting.until { output.lines.withLock { $0 }.contains { $0.contains(#""type":"speaker-changed""#) } })
        // In the order the events happened: the room opening, the server listening, bob joining, then the
        // speaker change.
        let types = output.lines.withLock { $0 }.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["type"] as? String
        }
        let joined = types.firstIndex(of: "participant-joined"), speaker = types.firstIndex(of: "speaker-changed")
        #expect(types.prefix(3) == ["room-opened", "listening", "participant-joined"] && speaker != nil && joined! < speaker!, "\(types)")
    }

    @Test func aBroadcastIsEncodedOnce() {
        let encoder = BroadcastEncoder()
        let levels = ServerMessage.audioLevels(time: 1.2, levels: ["alice": -20, "bob": -45], speaking: ["alice"])
        let sent = (0..<64).map { _ in encoder.json(of: levels) }
        #expect(encoder.encodings == 1)
        #expect(Set(sent) == [levels.json])
        let next = ServerMessage.speakerChanged("bob", time: 1.3)
        #expect(encoder.json(of: next) == next.json)
        #expect(encoder.json(of: levels) == levels.json)
        #expect(encoder.encodings == 3)
    }
}

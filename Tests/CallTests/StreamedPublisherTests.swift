import CallProtocol
@testable import CallServer
import CallTransport
import Foundation
import SpeakerIO
import Synchronization
import Testing
import TestSupport

/// Raw PCM over a WebSocket (`/v1/pcm`), as LiveKit's track egress sends a track: pcm_s16le at the source
/// rate, one connection per track, the identity in the URL.
@Suite("Streamed publishers: raw PCM over a WebSocket", .realTime)
struct StreamedPublisherTests {
    /// `samples` (16 kHz) as 48 kHz interleaved s16le with `channels` equal channels.
    static func pcm(_ samples: [Float], channels: Int) throws -> [UInt8] {
        let upsampled = try Resampler(inputRate: 16000, outputRate: 48000).process(samples)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(upsampled.count * 2 * channels)
        for sample in upsampled {
            let value = UInt16(bitPattern: Int16(max(-32768, min(32767, (sample * 32768).rounded()))))
            for _ in 0..<channels { bytes += [UInt8(value & 0xFF), UInt8(value >> 8)] }
        }
        return bytes
    }

    /// A client on `/v1/pcm` that records how it was closed.
    final class Streamer: Sendable {
        final class Closing: Sendable {
            let state = Mutex<(code: UInt16?, reason: String)?>(nil)
        }

        let client: WebSocketClient
        private let closing = Closing()

        init(port: Int, query: String) throws {
            client = try WebSocketClient(url: "ws://127.0.0.1:\(port)/v1/pcm?\(query)")
            let closing = self.closing
            client.setHandler(message: { _ in }, closed: { code, reason in closing.state.withLock { $0 = (code, reason) } })
            try client.connect(timeout: 10)
        }

        /// How the server closed it; nil while open.
        var closed: (code: UInt16?, reason: String)? { closing.state.withLock { $0 } }
    }

    static func query(_ participant: String, room: String = "room", token: String? = nil, channels: Int = 1) -> String {
        "room=\(room)&participant=\(participant)&rate=48000&channels=\(channels)&token=\(token ?? CallTestServer.token(participant))"
    }

    @Test("Three tracks streamed in real time, each its own connection: the room names their turns in order, then nobody")
    func threeTracksGiveTheTurns() throws {
        let lines = Mutex<[String]>([])
        let server = try CallTestServer.server { line in lines.withLock { $0.append(line) } }
        defer { server.stop() }
        let names = ["alice", "bob", "carol"]
        // 7 s each: quiet noise, and a 1.6 s turn for each, one after another.
        let tracks = try names.enumerated().map { index, _ in
            var signal = Synthesis.noise(seconds: 7, levelDBFS: -65, seed: UInt64(20 + index))
            Synthesis.add(Synthesis.voice(seconds: 1.6, f0: [120, 170, 220][index], levelDBFS: -20, seed: UInt64(index + 1)), into: &signal, at: 0.8 + 2.0 * Double(index))
            // Stereo for bob: LiveKit sends a stereo track as two interleaved channels.
            return try Self.pcm(signal, channels: index == 1 ? 2 : 1)
        }
        let streamers = try names.enumerated().map { index, name in
            try Streamer(port: server.port, query: Self.query(name, channels: index == 1 ? 2 : 1))
        }
        #expect(Waiting.until { lines.withLock { $0.filter { $0.contains(#""type":"participant-joined""#) }.count } == 3 })
        // 20 ms chunks, paced as a sender is.
        let start = DispatchTime.now().uptimeNanoseconds
        for chunk in 0..<350 {
            let due = start + UInt64(chunk) * 20_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            for (index, streamer) in streamers.enumerated() {
                let size = 960 * 2 * (index == 1 ? 2 : 1)
                let bytes = tracks[index]
                guard chunk * size < bytes.count else { continue }
                streamer.client.send(bytes: Array(bytes[(chunk * size)..<min((chunk + 1) * size, bytes.count)]))
            }
        }
        #expect(Waiting.until { lines.withLock { $0.last { $0.contains(#""type":"speaker-changed""#) }?.contains(#""participant":null"#) == true } })
        let speakers = lines.withLock { $0 }.filter { $0.contains(#""type":"speaker-changed""#) }
            .compactMap { line in names.first { line.contains(#""participant":"\#($0)""#) } }
        #expect(speakers == names, "\(lines.withLock { $0 })")
        for streamer in streamers { streamer.client.close() }
        #expect(Waiting.until { lines.withLock { $0.filter { $0.contains(#""type":"participant-left""#) }.count } == 3 })
    }

    @Test("Refused: a bad token, another participant's token, no participant, a room that does not exist, a bad rate")
    func refusals() throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let cases: [(String, UInt16)] = [
            (Self.query("alice", token: "nope"), 4001),
            (Self.query("alice", token: CallTestServer.token("bob")), 4006),
            (Self.query("alice", token: CallTestServer.token("alice", role: .subscriber)), 4006),
            ("room=room&token=\(CallTestServer.token("alice"))", 4007),
            (Self.query("alice", room: "nowhere", token: CallTestServer.adminToken()), 4003),
            ("room=room&participant=alice&rate=7&token=\(CallTestServer.token("alice"))", 4007),
        ]
        for (query, code) in cases {
            let streamer = try Streamer(port: server.port, query: query)
            #expect(Waiting.until { streamer.closed != nil }, "\(query)")
            #expect(streamer.closed?.code == code, "\(query): \(String(describing: streamer.closed))")
            streamer.client.close()
        }
    }

    @Test("A moderator's removal closes the participant's stream; so does deleting its room")
    func removalClosesTheStream() throws {
        let lines = Mutex<[String]>([])
        let server = try CallTestServer.server(rooms: ["room", "other"]) { line in lines.withLock { $0.append(line) } }
        defer { server.stop() }
        let alice = try Streamer(port: server.port, query: Self.query("alice"))
        let bob = try Streamer(port: server.port, query: Self.query("bob", room: "other", token: CallTestServer.adminToken()))
        #expect(Waiting.until { lines.withLock { $0.filter { $0.contains(#""type":"participant-joined""#) }.count } == 2 })
        let admin = ["authorization": "Bearer \(CallTestServer.adminToken())"]
        func call(_ method: String, _ path: String) -> Int {
            server.handle(HTTPRequest(method: method, path: path, headers: admin), from: PeerAddress(host: "127.0.0.1", port: 50000)).status
        }
        #expect(call("DELETE", "/v1/rooms/room/participants/alice") == 204)
        #expect(Waiting.until { alice.closed != nil })
        #expect(call("DELETE", "/v1/rooms/other") == 204)
        #expect(Waiting.until { bob.closed != nil })
        #expect(bob.closed?.code == 4013)
    }
}

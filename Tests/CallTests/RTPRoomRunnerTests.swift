import Foundation
import SpeakerCore
import SpeakerMedia
import SpeakerRTP
import Testing
import TestSupport

/// SpeakerMedia's `RTPRoomRunner`, played faster than real time: rooms of RTP streams in the caller's ids, a
/// decoded room beside a level-only one, and decoding on the engine's workers deciding as on one thread.
@Suite struct RTPRoomRunnerTests {
    /// Two talkers taking turns (alice 0.5–2.5 s, bob 3–5 s) over quiet noise, as 20 ms Opus datagrams with
    /// RFC 6464 levels (extension id 1), by SSRC.
    static let talkers: [(name: String, ssrc: UInt32, datagrams: [[UInt8]])] = {
        (0..<2).map { index in
            var signal = Synthesis.noise(seconds: 6, levelDBFS: -65, seed: UInt64(20 + index))
            let voice = Synthesis.voice(seconds: 2, f0: [120, 200][index], levelDBFS: -20, seed: UInt64(index + 5))
            Synthesis.add(voice, into: &signal, at: [0.5, 3.0][index])
            let ssrc = UInt32(5001 + index)
            return (["alice", "bob"][index], ssrc, try! MediaLoopAllocationTests.datagrams(of: signal, ssrc: ssrc))
        }
    }()

    /// Plays the talkers into room `room` of each runner at their arrival times (one packet each per two
    /// ticks), and returns the dominant-speaker events per room, with the hops heard per stream.
    static func play(_ runner: RTPRoomRunner<String, String>, rooms: [String]) -> (events: [String: [String?]], heard: [String: Int]) {
        var events: [String: [String?]] = [:], heard: [String: Int] = [:]
        runner.start()
        let ticks = talkers.map(\.datagrams.count).max()! * 2
        for tick in 0..<ticks {
            if tick % 2 == 0 {
                for room in rooms {
                    for talker in talkers where tick / 2 < talker.datagrams.count {
                        talker.datagrams[tick / 2].withUnsafeBytes { bytes in
                            guard case .packet(let packet) = RTPPacket.parse(bytes, audioLevelID: 1) else { return }
                            runner.insert(packet, datagram: bytes, into: room + "/" + talker.name, arrival: tick * AnalysisFormat.hopSize)
                        }
                    }
                }
            }
            runner.tick(hearing: { stream, _ in heard[stream, default: 0] += 1 })
            runner.consumeEvents { event in
                if case .dominant(let room, let stream, _) = event { events[room, default: []].append(stream) }
            }
        }
        return (events, heard)
    }

    static func runner(workers: Int, modes: [(String, RTPRoomRunner<String, String>.RoomMode)]) throws -> RTPRoomRunner<String, String> {
        let runner = try RTPRoomRunner<String, String>(workers: workers)
        for (room, mode) in modes {
            runner.addRoom(room, mode: mode)
            // Each room has its own streams; an SSRC is one stream, so the second room's are offset.
            for (index, talker) in talkers.enumerated() {
                let ssrc = talker.ssrc + (room == modes[0].0 ? 0 : 100)
                try runner.addStream(room + "/" + talker.name, ssrc: ssrc, in: room, name: talker.name)
                #expect(runner.stream(ofSSRC: ssrc) == room + "/" + talker.name, "stream \(index)")
            }
        }
        return runner
    }

    /// A decoded room and a level-only room in one runner each name alice then bob, in their own ids; only the
    /// decoded room's hops are heard.
    @Test func aDecodedAndALevelOnlyRoomRunSideBySide() throws {
        let runner = try Self.runner(workers: 1, modes: [("decoded", .decode), ("levels", .levels)])
        #expect(runner.mode(of: "levels") == .levels && runner.mode(of: "decoded") == .decode)
        let played = Self.play(runner, rooms: ["decoded", "levels"])
        for room in ["decoded", "levels"] {
            let named = played.events[room, default: []].compactMap { $0 }
            #expect(named.first == "\(room)/alice" && named.contains("\(room)/bob"), "\(room): \(played.events[room] ?? [])")
        }
        #expect(played.heard["decoded/alice", default: 0] > 150 && played.heard["decoded/bob", default: 0] > 150, "\(played.heard)")
        #expect(played.heard.keys.allSatisfy { $0.hasPrefix("decoded/") }, "\(played.heard)")
        // Removing the level-only room leaves the decoded one and its streams.
        let removed = runner.removeRoom("levels")
        #expect(removed.map(\.stream) == ["levels/alice", "levels/bob"])
        #expect(removed.allSatisfy { $0.statistics.packets > 0 })
        #expect(!runner.hasRoom("levels") && runner.stream(ofSSRC: 5101) == nil)
        #expect(runner.receiver(of: "decoded/alice") != nil)
    }

    /// Decoding on two engine workers (each room's streams decoded by the worker that analyses the room)
    /// decides exactly as one thread does.
    @Test func decodingOnTwoWorkersDecidesAsOne() throws {
        let rooms = ["north", "south"]
        let one = Self.play(try Self.runner(workers: 1, modes: rooms.map { ($0, .decode) }), rooms: rooms)
        let two = Self.play(try Self.runner(workers: 2, modes: rooms.map { ($0, .decode) }), rooms: rooms)
        #expect(one.events == two.events)
        #expect(one.heard == two.heard)
        #expect(one.events["north", default: []].compactMap { $0 }.first == "north/alice", "\(one.events)")
    }
}

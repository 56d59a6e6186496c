import CAllocationCounter
import CallProtocol
import Foundation
import SpeakerCore
import SpeakerIO
import SpeakerRTP
import Synchronization
import Testing
import TestSupport

@testable import CallServer

/// The server's per-tick path allocates nothing once warm: taking a datagram (parse, admission, budget),
/// forwarding it, the jitter buffers and Opus decoding (or, level-only, the packets' levels), the engine,
/// and the mix a WebRTC member hears.
@Suite struct MediaLoopAllocationTests {
    /// Counts speaker changes without allocating (the loop calls it on the thread being measured).
    final class Counting: TickWatchingDelegate {
        let speakerChanges = Atomic<Int>(0)
        func speakerChanged(room: CallRoomID, participant: ParticipantID?, time: Double) {
            speakerChanges.add(1, ordering: .relaxed)
        }
        func tickEnded(ticks: Int) {}

    }

    /// One publisher's RTP datagrams: 20 ms Opus packets of `signal` (16 kHz, sent at 48 kHz), as
    /// `RTPAudioSender` sends them. Its RTCP sender reports are left out: they would place the packets by
    /// their capture time, and this test plays the loop faster than they were made.
    static func datagrams(of signal: [Float], ssrc: UInt32, audioLevelID: Int = 1) throws -> [[UInt8]] {
        let capture = try UDPSocket(address: "127.0.0.1:0")
        let sender = try RTPAudioSender(socket: capture, ssrc: ssrc, audioLevelID: audioLevelID)
        let upsampled = try Resampler(inputRate: 16000, outputRate: 48000).process(signal)
        var bytes = [UInt8](repeating: 0, count: 2048)
        var datagrams: [[UInt8]] = []
        for start in stride(from: 0, through: upsampled.count - RTPAudioSender.frameSize, by: RTPAudioSender.frameSize) {
            let frame = Array(upsampled[start..<start + RTPAudioSender.frameSize])
            _ = try frame.withUnsafeBufferPointer { try sender.send(frame: $0, to: capture.localAddress) }
            while let count = bytes.withUnsafeMutableBytes({ capture.receive(into: $0) }) {
                let datagram = Array(bytes[..<count])
                if !datagram.withUnsafeBytes({ RTPPacket.isRTCP($0) }) { datagrams.append(datagram) }
            }
        }
        return datagrams
    }

    /// What one run of the loop did.
    struct Run {
        var statistics: MediaStatistics
        var packets: [Int]
        var speakerChanges: Int
        var allocations: Int
    }

    /// Plays a loop on this thread: alice, bob and carol take turns of 2 s each, twice. alice and bob publish
    /// over RTP and hear the others forwarded; carol is a browser's relay (`bind`), publishing from her relay
    /// socket and hearing the others mixed (or, in a level-only loop, which makes no mixes, forwarded).
    /// Counts the allocations of the second round's ticks: the first warms up (each path's first use
    /// instantiates runtime metadata, buffers reach their size).
    /// - Parameters:
    ///   - levelsOnly: The server hears levels only (`serve --levels-only`).
    ///   - roomLevelsOnly: The room is opened level-only (in a server that decodes).
    ///   - workers: The engine's threads (`serve --media-workers`); counted are this thread's allocations.
    ///   - audioLevelIDs: The extension id the publishers send their levels with, and the one their
    ///     bindings name (the ingest's `audioLevelId`).
    static func run(
        levelsOnly: Bool, roomLevelsOnly: Bool = false, workers: Int = 1, audioLevelIDs: (sent: Int, bound: Int) = (1, 1)
    ) throws -> Run {
        let delegate = Counting()
        // No level reports in the measured ticks (they build the `audio-levels` message's dictionary).
        let loop = try MediaLoop(
            socket: UDPSocket(address: "127.0.0.1:0"), configuration: EngineConfiguration(), levelInterval: 1000,
            recordsAudio: false, levelsOnly: levelsOnly, workers: workers, delegate: delegate)
        let ears = try (0..<3).map { _ in try UDPSocket(address: "127.0.0.1:0") }
        func endpoint(_ socket: UDPSocket) -> MediaEndpoint { MediaEndpoint(host: "127.0.0.1", port: socket.port) }
        loop.post(.openRoom(room: "room", levelsOnly: roomLevelsOnly))
        let names: [ParticipantID] = ["alice", "bob", "carol"]
        let sources = (0..<3).map { SocketAddress(host: "127.0.0.1", port: 41000 + $0)! }
        for index in 0..<2 {
            loop.post(.addMember(
                room: "room", participant: names[index], ssrc: SSRC(UInt32(1001 + index)),
                sender: MediaSource(host: "127.0.0.1", port: sources[index].port, audioLevelID: audioLevelIDs.bound),
                receiver: endpoint(ears[index])))
        }
        loop.post(.addMember(room: "room", participant: "carol", ssrc: 1003, sender: nil, receiver: nil))
        loop.post(.bind(
            room: "room", participant: "carol", sender: MediaSource(host: "127.0.0.1", port: sources[2].port, audioLevelID: audioLevelIDs.bound),
            receiver: endpoint(ears[2]), mixSSRC: 77))
        // Each publisher sends all the time (quiet noise between its turns).
        let seconds = 12.0
        let packets = try (0..<3).map { index in
            var signal = Synthesis.noise(seconds: seconds, levelDBFS: -65, seed: UInt64(10 + index))
            for round in 0..<2 {
                let voice = Synthesis.voice(seconds: 1.8, f0: [110, 160, 210][index], levelDBFS: -20, seed: UInt64(2 * index + round + 1))
                Synthesis.add(voice, into: &signal, at: 6.0 * Double(round) + 2.0 * Double(index) + 0.1)
            }
            return try Self.datagrams(of: signal, ssrc: UInt32(1001 + index), audioLevelID: audioLevelIDs.sent)
        }
        let warmUpTicks = 600
        var allocations = 0
        // This thread plays the loop's: commands, then per 10 ms tick the datagrams due, then the tick.
        loop.startClock()
        loop.applyCommands()
        for tick in 0..<Int(seconds * 100) {
            let before = allocation_counter_current_thread()
            if tick % 2 == 0 {
                for index in 0..<3 where tick / 2 < packets[index].count {
                    packets[index][tick / 2].withUnsafeBytes {
                        loop.route($0, from: sources[index], arrival: tick * AnalysisFormat.hopSize)
                    }
                }
            }
            loop.runTick()
            if tick >= warmUpTicks { allocations += allocation_counter_current_thread() - before }
        }
        return Run(
            statistics: loop.statistics, packets: packets.map(\.count), speakerChanges: delegate.speakerChanges.load(ordering: .relaxed),
            allocations: allocations)
    }

    @Test func aTickWithForwardingDecodingTheEngineAndAMixAllocatesNothing() throws {
        let run = try Self.run(levelsOnly: false)
        // Every packet was taken; alice's and bob's forwarded to each other, carol's to both; carol heard a mix.
        #expect(run.statistics.accepted == run.packets.reduce(0, +))
        #expect(run.statistics.forwarded + run.statistics.sendFailures == run.packets[0] + run.packets[1] + 2 * run.packets[2])
        #expect(run.statistics.mixed > 200)
        #expect(run.speakerChanges >= 6, "the engine named each turn")
        #expect(run.allocations == 0, "allocations in 600 ticks after warm-up")
    }

    /// `serve --levels-only`: nothing decoded, the engine hears the packets' RFC 6464 levels and names the turns.
    @Test func aLevelOnlyTickNamesTheTurnsAndAllocatesNothing() throws {
        let run = try Self.run(levelsOnly: true)
        #expect(run.statistics.accepted == run.packets.reduce(0, +))
        // No mix: carol hears the others' packets forwarded, as alice and bob do.
        #expect(run.statistics.mixed == 0)
        #expect(run.statistics.forwarded + run.statistics.sendFailures == 2 * run.packets.reduce(0, +))
        #expect(run.speakerChanges >= 6, "the engine named each turn from the levels")
        #expect(run.allocations == 0, "allocations in 600 ticks after warm-up")
    }

    /// Senders number their extensions themselves (Firefox, Janus-forwarded browsers): a publisher bound with its own
    /// id is heard by its levels; bound with another id, nothing of its levels is read and no turn is named.
    @Test func eachPublisherIsHeardUnderItsOwnExtensionID() throws {
        let own = try Self.run(levelsOnly: true, audioLevelIDs: (sent: 3, bound: 3))
        #expect(own.statistics.accepted == own.packets.reduce(0, +))
        #expect(own.speakerChanges >= 6, "the engine named each turn from the levels under id 3")
        #expect(own.allocations == 0, "allocations in 600 ticks after warm-up")
        let other = try Self.run(levelsOnly: true, audioLevelIDs: (sent: 3, bound: 1))
        #expect(other.statistics.accepted == other.packets.reduce(0, +))
        #expect(other.speakerChanges == 0, "levels under id 3 read as id 1: nothing heard")
    }

    /// A room opened level-only in a server that decodes (`POST /v1/rooms` with `levelsOnly`): its turns named
    /// from the levels, no mix made, nothing allocated.
    @Test func aLevelOnlyRoomInADecodingServerNamesTheTurnsAndAllocatesNothing() throws {
        let run = try Self.run(levelsOnly: false, roomLevelsOnly: true)
        #expect(run.statistics.accepted == run.packets.reduce(0, +))
        #expect(run.statistics.mixed == 0)
        #expect(run.statistics.forwarded + run.statistics.sendFailures == 2 * run.packets.reduce(0, +))
        #expect(run.speakerChanges >= 6, "the engine named each turn from the levels")
        #expect(run.allocations == 0, "allocations in 600 ticks after warm-up")
    }

    /// Two engine workers (`serve --media-workers 2`): the publishers are decoded on the worker that analyses
    /// the room, and the mix is made from the hops it decoded; the loop's own thread allocates nothing.
    @Test func decodingOnTheEnginesWorkersNamesTheTurnsAndMixes() throws {
        let run = try Self.run(levelsOnly: false, workers: 2)
        #expect(run.statistics.accepted == run.packets.reduce(0, +))
        #expect(run.statistics.mixed > 200)
        #expect(run.speakerChanges >= 6, "the engine named each turn")
        #expect(run.allocations == 0, "allocations on the loop's thread in 600 ticks after warm-up")
    }
}

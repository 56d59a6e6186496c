import CallProtocol
import Foundation
import SpeakerCore
import SpeakerRTP
import Synchronization
import Testing
@testable import CallServer
import TestSupport

/// The media loop alone, without the registry in front of it: what it forwards, what it drops, and that
/// its 10 ms clock keeps going whatever arrives.
@Suite(.serialized) struct MediaLoopTests {
    /// Counts the loop's ticks and the datagrams each tick took (from the statistics the loop publishes
    /// just before `tickEnded`).
    final class Watcher: TickWatchingDelegate {
        private struct State {
            var ticks = 0
            var datagrams = 0
            var mostInOneTick = 0
        }

        private let state = Mutex(State())
        let loop = Mutex<MediaLoop?>(nil)

        var ticks: Int { state.withLock { $0.ticks } }
        /// The most datagrams any one tick took from the socket.
        var mostDatagramsInOneTick: Int { state.withLock { $0.mostInOneTick } }

        func tickEnded(ticks: Int) {
            let statistics = loop.withLock { $0?.statistics } ?? MediaStatistics()
            let datagrams = statistics.accepted + statistics.unknownSSRC + statistics.wrongSource + statistics.muted
                + statistics.malformed + statistics.rtcp + statistics.fromSelf + statistics.oversized + statistics.overBudget
            state.withLock { state in
                state.mostInOneTick = max(state.mostInOneTick, datagrams - state.datagrams)
                state.datagrams = datagrams
                state.ticks = ticks
            }
        }
    }

    /// A started loop on `127.0.0.1`, any port, with the room `room`, an ingest `lobby` (SSRC 4097) that
    /// accepts any port of 127.0.0.1 (as `"source":"127.0.0.1"` does), and members that only receive.
    /// - Parameter receivers: The members and where they receive, given the loop's port.
    static func loop(_ watcher: Watcher, receivers: (_ loopPort: Int) -> [(String, MediaEndpoint)]) throws -> MediaLoop {
        let loop = try MediaLoop(
            socket: UDPSocket(address: "127.0.0.1:0"), configuration: EngineConfiguration(), levelInterval: 0.2, recordsAudio: false,
            delegate: watcher)
        watcher.loop.withLock { $0 = loop }
        loop.post(.openRoom(room: "room"))
        loop.post(.addMember(room: "room", participant: "lobby", ssrc: 4097, sender: MediaSource(host: "127.0.0.1", port: nil), receiver: nil))
        for (participant, receiver) in receivers(loop.port) {
            loop.post(.addMember(room: "room", participant: ParticipantID(participant), ssrc: nil, sender: nil, receiver: receiver))
        }
        loop.start(priority: .normal)
        return loop
    }

    /// One RTP packet of SSRC 4097 (Opus, with an audio level).
    static func packet() throws -> [UInt8] {
        let capture = try UDPSocket(address: "127.0.0.1:0")
        let frame = [Float](repeating: 0.1, count: RTPAudioSender.frameSize)
        _ = try frame.withUnsafeBufferPointer { try RTPAudioSender(socket: capture, ssrc: 4097).send(frame: $0, to: capture.localAddress) }
        var bytes = [UInt8](repeating: 0, count: 2048)
        let count = try #require(bytes.withUnsafeMutableBytes { capture.receive(into: $0) })
        return Array(bytes[..<count])
    }

    /// Stops `loop` on a thread of its own and waits at most `timeout` seconds for `stop()` to return.
    static func stop(_ loop: MediaLoop, within timeout: Double) -> Bool {
        CallTestServer.returns(within: timeout) { loop.stop() }
    }

    /// Waits for `count` more ticks (at most 20 s): the positive event that bounds "never" checks.
    static func ticks(_ count: Int, of watcher: Watcher) async -> Bool {
        let target = watcher.ticks + count
        return await Waiting.until(timeout: 20) { watcher.ticks >= target }
    }

    static func take(_ socket: UDPSocket) -> Int {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var count = 0
        while count < 100_000, buffer.withUnsafeMutableBytes({ socket.receive(into: $0) }) != nil { count += 1 }
        return count
    }

    @Test func theLoopNeitherSendsToItselfNorTakesItsOwnDatagrams() async throws {
        let watcher = Watcher()
        let listener = try UDPSocket(address: "127.0.0.1:0")
        // Two members that would receive on the loop's own socket, and one that receives elsewhere.
        let loop = try Self.loop(watcher) { loopPort in
            [("mirror", MediaEndpoint(host: "127.0.0.1", port: loopPort)), ("mirror-any", MediaEndpoint(host: "0.0.0.0", port: loopPort)),
             ("listener", MediaEndpoint(host: "127.0.0.1", port: listener.port))]
        }
        defer { _ = Self.stop(loop, within: 10) }
        #expect(await Self.ticks(2, of: watcher), "the loop does not tick")

        let packet = try Self.packet()
        let intruder = try UDPSocket(address: "127.0.0.1:0")
        _ = packet.withUnsafeBytes { intruder.send($0, to: loop.socket.localAddress) }
        var copies = 0
        #expect(await Waiting.until { copies += Self.take(listener); return copies > 0 })
        #expect(await Self.ticks(20, of: watcher), "no ticks after the datagram: the loop is stuck forwarding")
        copies += Self.take(listener)
        #expect(copies == 1)
        var statistics = loop.statistics
        #expect(statistics.refusedReceivers == 2, "\(statistics)")
        #expect(statistics.accepted == 1 && statistics.forwarded == 1 && statistics.fromSelf == 0, "\(statistics)")

        // A datagram from the loop's own address (as a loop would bring back) is dropped, not forwarded.
        _ = packet.withUnsafeBytes { loop.socket.send($0, to: loop.socket.localAddress) }
        #expect(await Waiting.until { loop.statistics.fromSelf == 1 })
        #expect(await Self.ticks(20, of: watcher))
        statistics = loop.statistics
        #expect(statistics.accepted == 1 && statistics.forwarded == 1, "\(statistics)")
        #expect(Self.take(listener) == 0)
        #expect(Self.stop(loop, within: 10), "stop() did not return")
    }

    /// A sender that floods the socket as fast as it can keeps more arriving than the loop can take: the
    /// loop still ticks, takes at most its budget per tick, forwards only the publisher's packet budget,
    /// and stops.
    @Test func aFloodNeitherStopsTheTicksNorStop() async throws {
        let watcher = Watcher()
        let listener = try UDPSocket(address: "127.0.0.1:0")
        let loop = try Self.loop(watcher) { _ in [("listener", MediaEndpoint(host: "127.0.0.1", port: listener.port))] }
        defer { _ = Self.stop(loop, within: 10) }
        #expect(await Self.ticks(2, of: watcher), "the loop does not tick")

        let flooding = Atomic<Bool>(true)
        let flooderDone = DispatchSemaphore(value: 0)
        let server = loop.socket.localAddress
        let packet = try Self.packet()
        let flooder = try UDPSocket(address: "127.0.0.1:0")
        Thread {
            packet.withUnsafeBytes { bytes in
                while flooding.load(ordering: .relaxed) {
                    for _ in 0..<64 { _ = flooder.send(bytes, to: server) }
                }
            }
            flooderDone.signal()
        }.start()
        defer {
            flooding.store(false, ordering: .relaxed)
            flooderDone.wait()
        }

        // The flood is on: several ticks' worth of datagrams have been taken.
        #expect(
            await Waiting.until(timeout: 20) { loop.statistics.overBudget > 4 * MediaLoop.datagramsPerTick }, "\(loop.statistics)")
        #expect(await Self.ticks(50, of: watcher), "the loop stopped ticking under the flood")
        #expect(watcher.mostDatagramsInOneTick <= MediaLoop.datagramsPerTick, "\(watcher.mostDatagramsInOneTick)")
        let statistics = loop.statistics
        let seconds = Double(watcher.ticks) / 100
        #expect(
            Double(statistics.accepted) <= MediaLoop.packetBurst + MediaLoop.packetRate * seconds + 1,
            "accepted \(statistics.accepted) in \(seconds) s")
        #expect(Self.stop(loop, within: 10), "stop() did not return under the flood")
    }

    /// Hardening item 10: a bound publisher's 65 KB datagrams and 50,000 packets a second were forwarded
    /// unchanged to every member.
    @Test func aPublishersDatagramsAreHeldToAudiosSizeAndRate() async throws {
        let watcher = Watcher()
        let listener = try UDPSocket(address: "127.0.0.1:0")
        let loop = try Self.loop(watcher) { _ in [("listener", MediaEndpoint(host: "127.0.0.1", port: listener.port))] }
        defer { _ = Self.stop(loop, within: 10) }
        #expect(await Self.ticks(2, of: watcher), "the loop does not tick")
        let publisher = try UDPSocket(address: "127.0.0.1:0")
        let server = loop.socket.localAddress

        // An oversized datagram: a valid RTP header of the bound SSRC and 60,000 bytes of payload.
        var huge = try Self.packet()
        huge += [UInt8](repeating: 0x55, count: 60_000)
        _ = huge.withUnsafeBytes { publisher.send($0, to: server) }
        #expect(await Waiting.until { loop.statistics.oversized == 1 }, "\(loop.statistics)")

        // 1,000 packets at once (about 1 MB in the kernel, within the socket's 4 MiB buffer): the burst
        // and what the rate adds meanwhile are forwarded, the rest dropped. Waiting for 900 of them to be
        // counted leaves room for a kernel that drops a few.
        let packet = try Self.packet()
        packet.withUnsafeBytes { bytes in
            for _ in 0..<1000 { _ = publisher.send(bytes, to: server) }
        }
        #expect(await Waiting.until { let s = loop.statistics; return s.accepted + s.overBudget >= 900 }, "\(loop.statistics)")
        #expect(await Self.ticks(5, of: watcher))
        let statistics = loop.statistics
        let seconds = Double(watcher.ticks) / 100
        #expect(statistics.overBudget > 0, "\(statistics)")
        #expect(Double(statistics.accepted) <= MediaLoop.packetBurst + MediaLoop.packetRate * seconds + 1, "\(statistics)")
        var copies = 0
        var largest = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while let count = buffer.withUnsafeMutableBytes({ listener.receive(into: $0) }) {
            copies += 1
            largest = max(largest, count)
        }
        #expect(copies == statistics.forwarded && copies == statistics.accepted, "\(copies) copies, \(statistics)")
        #expect(largest <= MediaLoop.maximumDatagramBytes)
    }

    /// Members are found by room and participant, and datagrams go only to the publisher's room: the same
    /// participant id in another room is another member (its mute is not this one's), and a member of
    /// another room receives nothing.
    @Test func commandsAndForwardingKeepToTheirRoom() async throws {
        let watcher = Watcher()
        let listener = try UDPSocket(address: "127.0.0.1:0")
        let outsider = try UDPSocket(address: "127.0.0.1:0")
        let loop = try Self.loop(watcher) { _ in [("listener", MediaEndpoint(host: "127.0.0.1", port: listener.port))] }
        defer { _ = Self.stop(loop, within: 10) }
        loop.post(.openRoom(room: "other"))
        loop.post(.addMember(room: "other", participant: "lobby", ssrc: nil, sender: nil, receiver: nil))
        loop.post(.addMember(room: "other", participant: "outsider", ssrc: nil, sender: nil, receiver: MediaEndpoint(host: "127.0.0.1", port: outsider.port)))
        loop.post(.setMuted(room: "other", participant: "lobby", muted: true))
        #expect(await Self.ticks(2, of: watcher), "the loop does not tick")

        let packet = try Self.packet()
        let publisher = try UDPSocket(address: "127.0.0.1:0")
        let server = loop.socket.localAddress
        _ = packet.withUnsafeBytes { publisher.send($0, to: server) }
        var copies = 0
        #expect(await Waiting.until { copies += Self.take(listener); return copies > 0 })
        #expect(await Self.ticks(5, of: watcher))
        #expect(copies + Self.take(listener) == 1)
        #expect(Self.take(outsider) == 0, "forwarded to another room")
        #expect(loop.statistics.accepted == 1 && loop.statistics.forwarded == 1 && loop.statistics.muted == 0, "\(loop.statistics)")

        // Muting the room's own lobby drops its packets; removing it unbinds its SSRC.
        loop.post(.setMuted(room: "room", participant: "lobby", muted: true))
        #expect(await Self.ticks(2, of: watcher))
        _ = packet.withUnsafeBytes { publisher.send($0, to: server) }
        #expect(await Waiting.until { loop.statistics.muted == 1 }, "\(loop.statistics)")
        loop.post(.removeMember(room: "room", participant: "lobby"))
        #expect(await Self.ticks(2, of: watcher))
        _ = packet.withUnsafeBytes { publisher.send($0, to: server) }
        #expect(await Waiting.until { loop.statistics.unknownSSRC == 1 }, "\(loop.statistics)")
        #expect(await Self.ticks(5, of: watcher))
        #expect(Self.take(listener) == 0 && Self.take(outsider) == 0)
        #expect(loop.statistics.forwarded == 1, "\(loop.statistics)")
    }

    /// Holds the loop's thread inside `tickEnded` once asked to, and notes any callback that runs after
    /// a `stop()` returned.
    final class Holder: TickWatchingDelegate {
        let hold = Atomic<Bool>(false)
        /// The loop's thread is inside `tickEnded`, held.
        let held = Atomic<Bool>(false)
        let release = DispatchSemaphore(value: 0)
        let ticks = Atomic<Int>(0)
        let stopReturned = Atomic<Bool>(false)
        let callbackAfterStop = Atomic<Bool>(false)

        func tickEnded(ticks: Int) {
            self.ticks.store(ticks, ordering: .releasing)
            if hold.exchange(false, ordering: .acquiringAndReleasing) {
                held.store(true, ordering: .releasing)
                release.wait()
                held.store(false, ordering: .releasing)
            }
            if stopReturned.load(ordering: .acquiring) { callbackAfterStop.store(true, ordering: .releasing) }
        }
    }

    /// Two threads stop the loop at once while it is busy (held in a callback): neither returns before
    /// the loop's thread is done. A second `stop()` used to return at once, while the loop still ran.
    @Test func everyConcurrentStopWaitsForTheLoop() async throws {
        let holder = Holder()
        let loop = try MediaLoop(
            socket: UDPSocket(address: "127.0.0.1:0"), configuration: EngineConfiguration(), levelInterval: 0.2, recordsAudio: false,
            delegate: holder)
        loop.start(priority: .normal)
        #expect(await Waiting.until { loop.tickCount >= 2 }, "the loop does not tick")
        holder.hold.store(true, ordering: .releasing)
        #expect(await Waiting.until { holder.held.load(ordering: .acquiring) })

        let entered = Atomic<Int>(0)
        let returned = Atomic<Int>(0)
        let returnedWhileHeld = Atomic<Int>(0)
        for _ in 0..<2 {
            Thread {
                entered.add(1, ordering: .acquiringAndReleasing)
                loop.stop()
                if holder.held.load(ordering: .acquiring) { returnedWhileHeld.add(1, ordering: .acquiringAndReleasing) }
                holder.stopReturned.store(true, ordering: .releasing)
                returned.add(1, ordering: .acquiringAndReleasing)
            }.start()
        }
        #expect(await Waiting.until { entered.load(ordering: .acquiring) == 2 })
        // Both are in stop(); give a wrongly returning one a second to show itself.
        #expect(!(await Waiting.until(timeout: 1) { returned.load(ordering: .acquiring) > 0 }), "stop() returned while the loop was busy")
        holder.release.signal()
        #expect(await Waiting.until { returned.load(ordering: .acquiring) == 2 }, "stop() did not return")
        let (whileHeld, callbackAfterStop) = (returnedWhileHeld.load(ordering: .acquiring), holder.callbackAfterStop.load(ordering: .acquiring))
        #expect(whileHeld == 0, "stop() returned while the loop was busy")
        #expect(!callbackAfterStop, "a callback ran after stop() returned")
        let lastTick = holder.ticks.load(ordering: .acquiring)
        #expect(loop.tickCount == lastTick)
        #expect(Self.stop(loop, within: 10), "a third stop() did not return")
    }
}

/// A media-loop delegate that watches only the ticks: every other callback does nothing.
protocol TickWatchingDelegate: MediaLoopDelegate {}

extension TickWatchingDelegate {
    func speakerChanged(room: CallRoomID, participant: ParticipantID?, time: Double) {}
    func audioLevels(room: CallRoomID, time: Double, levels: [String: Double], speaking: [String]) {}
    func recordHop(room: CallRoomID, participant: ParticipantID, hop: UnsafeBufferPointer<Float>, tick: Int) {}
    func speechChanged(room: CallRoomID, participant: ParticipantID, active: Bool, time: Double) {}
    func roomOpened(_ room: CallRoomID, tick: Int) {}
    func roomClosed(_ room: CallRoomID, tick: Int) {}
}

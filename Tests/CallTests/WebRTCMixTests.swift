import CAllocationCounter
import CallProtocol
import Foundation
import SpeakerCore
import SpeakerOpus
import SpeakerRTP
import Testing
@testable import CallServer
import TestSupport

/// The mix a WebRTC member hears (`WebRTCMix` in the media loop): the other publishers summed into one
/// Opus stream, its own voice left out, while plain-RTP members still get every publisher's packets.
@Suite(.serialized, .realTime) struct WebRTCMixTests {
    /// Goertzel: the mean-square amplitude of `frequency` (Hz) in `samples` at `rate`.
    static func power(_ samples: [Float], frequency: Double, rate: Double = 16000) -> Double {
        let coefficient = 2 * cos(2 * Double.pi * frequency / rate)
        var s1 = 0.0, s2 = 0.0
        for x in samples {
            let s0 = Double(x) + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        // |X(f)|² = s1² + s2² − c·s1·s2; a sine of amplitude A over N samples gives (A·N/2)², mean square A²/2.
        let magnitude = s1 * s1 + s2 * s2 - coefficient * s1 * s2
        return 2 * magnitude / Double(samples.count * samples.count)
    }

    /// 20 ms of a sine at 48 kHz, frame `index` of a continuous tone.
    static func frame(_ index: Int, frequency: Double) -> [Float] {
        (0..<960).map { Float(0.25 * sin(2 * Double.pi * frequency * Double(index * 960 + $0) / 48000)) }
    }

    /// Takes every datagram waiting on `socket` and parses it.
    static func drain(_ socket: UDPSocket, into packets: inout [(RTPPacket, [UInt8])]) {
        var buffer = [UInt8](repeating: 0, count: 2048)
        while let count = buffer.withUnsafeMutableBytes({ socket.receive(into: $0) }) {
            let bytes = Array(buffer[..<count])
            if case .packet(let packet) = bytes.withUnsafeBytes({ RTPPacket.parse($0, audioLevelID: 1) }) { packets.append((packet, bytes)) }
        }
    }

    @Test("The mix's stage allocates nothing per hop after warm-up, and makes one packet every 20 ms")
    func theMixAllocatesNothing() throws {
        var mix = try WebRTCMix(ssrc: 7)
        let hop = (0..<160).map { Float(0.3 * sin(Double($0) * 0.2)) }
        var packets = 0, bytes = 0, allocations = 0
        hop.withUnsafeBufferPointer { hop in
            for round in 0..<1000 {
                let before = allocation_counter_current_thread()
                mix.add(hop) { packet in
                    packets += 1
                    bytes += packet.count
                }
                if round >= 10 { allocations += allocation_counter_current_thread() - before }
            }
        }
        #expect(allocations == 0)
        #expect(packets == 500 && mix.packetsMade == 500)
        #expect(bytes > 500 * 12)
    }

    @Test("A WebRTC member hears the other publishers mixed in one Opus stream without its own voice; a plain member gets each one's packets")
    func aBoundMemberHearsTheOthersMixed() throws {
        let watcher = MediaLoopTests.Watcher()
        let browser = try UDPSocket(address: "127.0.0.1:0"), plain = try UDPSocket(address: "127.0.0.1:0")
        let alice = try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: 1001)
        let bob = try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: 1002)
        let browserVoice = try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: 1003)
        let loop = try MediaLoop(
            socket: UDPSocket(address: "127.0.0.1:0"), configuration: EngineConfiguration(), levelInterval: 0.2, recordsAudio: false,
            delegate: watcher)
        watcher.loop.withLock { $0 = loop }
        loop.post(.openRoom(room: "room"))
        for (name, sender) in [("alice", alice), ("bob", bob)] {
            loop.post(.addMember(room: "room", participant: ParticipantID(name), ssrc: SSRC(sender.ssrc), sender: MediaSource(host: "127.0.0.1", port: sender.port), receiver: nil))
        }
        loop.post(.addMember(room: "room", participant: "carl", ssrc: nil, sender: nil, receiver: MediaEndpoint(host: "127.0.0.1", port: plain.port)))
        // A WebRTC session: joined without media, then bound to its relay's address (here the test's sockets).
        loop.post(.addMember(room: "room", participant: "browser", ssrc: 1003, sender: nil, receiver: nil))
        loop.post(.bind(
            room: "room", participant: "browser", sender: MediaSource(host: "127.0.0.1", port: browserVoice.port),
            receiver: MediaEndpoint(host: "127.0.0.1", port: browser.port), mixSSRC: nil))
        loop.start(priority: .normal)
        defer { _ = MediaLoopTests.stop(loop, within: 10) }

        // 2 s: alice 500 Hz, bob 1300 Hz, the browser itself 2100 Hz, at the pace of real senders.
        let server = loop.socket.localAddress
        var mixed: [(RTPPacket, [UInt8])] = [], forwarded: [(RTPPacket, [UInt8])] = []
        let started = DispatchTime.now().uptimeNanoseconds
        for index in 0..<100 {
            for (sender, frequency) in [(alice, 500.0), (bob, 1300.0), (browserVoice, 2100.0)] {
                _ = try Self.frame(index, frequency: frequency).withUnsafeBufferPointer { try sender.send(frame: $0, to: server) }
            }
            Self.drain(browser, into: &mixed)
            Self.drain(plain, into: &forwarded)
            // Pacing, as a microphone would: the next frame 20 ms after this one's start.
            let next = started + UInt64(index + 1) * 20_000_000, now = DispatchTime.now().uptimeNanoseconds
            if next > now { usleep(useconds_t((next - now) / 1000)) }
        }
        // The mix goes on (silence) after the talk: wait until it has covered it.
        #expect(Waiting.until { Self.drain(browser, into: &mixed); return mixed.count >= 110 }, "mixed packets: \(mixed.count)")
        Self.drain(plain, into: &forwarded)

        // The browser's socket gets one stream, the mix, and none of the publishers' own packets.
        let ssrcs = Set(mixed.map(\.0.ssrc))
        #expect(ssrcs.count == 1 && ssrcs.isDisjoint(with: [1001, 1002, 1003]), "\(ssrcs)")
        #expect(mixed.allSatisfy { $0.0.payloadType == 111 })
        let steps = zip(mixed, mixed.dropFirst()).map { ($1.0.sequenceNumber &- $0.0.sequenceNumber, $1.0.timestamp &- $0.0.timestamp) }
        #expect(steps.allSatisfy { $0 == (1, 960) }, "sequence and timestamp steps")
        // It decodes to alice's and bob's tones, not the browser's own.
        let decoder = try OpusPacketDecoder(sampleRate: 16000)
        var audio: [Float] = []
        var output = [Float](repeating: 0, count: decoder.maximumPacketSamples)
        for (packet, bytes) in mixed {
            let count = try bytes.withUnsafeBytes { raw in
                try output.withUnsafeMutableBufferPointer { try decoder.decode(packet: UnsafeRawBufferPointer(rebasing: raw[packet.payload]), into: $0) }
            }
            audio += output[..<count]
        }
        let (a, b, own, between) = (Self.power(audio, frequency: 500), Self.power(audio, frequency: 1300), Self.power(audio, frequency: 2100), Self.power(audio, frequency: 900))
        #expect(a > 0.002 && b > 0.002, "alice \(a), bob \(b)")
        #expect(own < a / 100 && own < b / 100, "the browser's own voice in its mix: \(own) (alice \(a))")
        #expect(between < a / 100, "900 Hz \(between), alice \(a)")
        // The plain member still gets each publisher's own packets, the browser's included.
        #expect(Set(forwarded.map(\.0.ssrc)) == [1001, 1002, 1003], "\(Set(forwarded.map(\.0.ssrc)))")
        #expect(loop.statistics.mixed >= 110)
        print("measured: mix of 2 s, mean squares alice (500 Hz) \(a), bob (1300 Hz) \(b), own voice (2100 Hz) \(own), 900 Hz \(between)")
    }

    /// Issue 29: a member of room a that named a room-b browser's relay socket as its `rtpPort` had room
    /// a's audio forwarded into that browser.
    @Test("A relay's socket is its session's alone: a member of another room that names it, before or after the bind, gets nothing there")
    func aRelaySocketIsItsSessionsAlone() throws {
        let watcher = MediaLoopTests.Watcher()
        let early = try UDPSocket(address: "127.0.0.1:0"), late = try UDPSocket(address: "127.0.0.1:0")
        let alice = try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: 1001)
        let loop = try MediaLoop(
            socket: UDPSocket(address: "127.0.0.1:0"), configuration: EngineConfiguration(), levelInterval: 0.2, recordsAudio: false,
            delegate: watcher)
        watcher.loop.withLock { $0 = loop }
        func endpoint(_ socket: UDPSocket) -> MediaEndpoint { MediaEndpoint(host: "127.0.0.1", port: socket.port) }
        loop.post(.openRoom(room: "a"))
        loop.post(.openRoom(room: "b"))
        loop.post(.addMember(room: "a", participant: "alice", ssrc: 1001, sender: MediaSource(host: "127.0.0.1", port: alice.port), receiver: nil))
        // mallory names the socket before the browser's relay is bound to it, eve after.
        loop.post(.addMember(room: "a", participant: "mallory", ssrc: nil, sender: nil, receiver: endpoint(early)))
        for (browser, socket, mix) in [("browser1", early, SSRC(501)), ("browser2", late, SSRC(502))] {
            loop.post(.addMember(room: "b", participant: ParticipantID(browser), ssrc: nil, sender: nil, receiver: nil))
            loop.post(.bind(room: "b", participant: ParticipantID(browser), sender: nil, receiver: endpoint(socket), mixSSRC: mix))
        }
        loop.post(.addMember(room: "a", participant: "eve", ssrc: nil, sender: nil, receiver: endpoint(late)))
        loop.start(priority: .normal)
        defer { _ = MediaLoopTests.stop(loop, within: 10) }

        // 1 s of alice's tone in room a, at the pace of a real sender.
        let server = loop.socket.localAddress
        var first: [(RTPPacket, [UInt8])] = [], second: [(RTPPacket, [UInt8])] = []
        let started = DispatchTime.now().uptimeNanoseconds
        for index in 0..<50 {
            _ = try Self.frame(index, frequency: 500).withUnsafeBufferPointer { try alice.send(frame: $0, to: server) }
            Self.drain(early, into: &first)
            Self.drain(late, into: &second)
            let next = started + UInt64(index + 1) * 20_000_000, now = DispatchTime.now().uptimeNanoseconds
            if next > now { usleep(useconds_t((next - now) / 1000)) }
        }
        #expect(Waiting.until { loop.statistics.accepted >= 45 }, "alice's packets were not taken: \(loop.statistics.accepted)")
        // Each browser's socket gets its own room's mix (silence) and nothing of room a.
        #expect(Waiting.until {
            Self.drain(early, into: &first)
            Self.drain(late, into: &second)
            return first.count >= 50 && second.count >= 50
        }, "mix packets: \(first.count), \(second.count)")
        #expect(Set(first.map(\.0.ssrc)) == [501], "\(Set(first.map(\.0.ssrc)))")
        #expect(Set(second.map(\.0.ssrc)) == [502], "\(Set(second.map(\.0.ssrc)))")
        #expect(loop.statistics.refusedReceivers == 2)
    }
}

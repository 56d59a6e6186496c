import CAllocationCounter
import Foundation
import SpeakerIO
import SpeakerOpus
import SpeakerRTP
import Testing
import TestSupport

@Suite("RTP audio sender")
struct RTPAudioSenderTests {
    /// One received packet: the parsed header, the Opus payload and where it came from.
    struct Received {
        var packet: RTPPacket
        var payload: [UInt8]
        var source: SocketAddress
    }

    /// Takes the RTP packet the sender just sent, passing over its RTCP sender reports (into `reports`).
    static func receive(_ socket: UDPSocket, reports: inout [RTCPSenderReport]) throws -> Received {
        var buffer = [UInt8](repeating: 0, count: 2048)
        var source = try #require(SocketAddress(host: "0.0.0.0", port: 0))
        var bytes: [UInt8] = []
        for _ in 0..<3 {
            try #require(UDPSocket.wait([socket], timeout: 2))
            let count = try #require(buffer.withUnsafeMutableBytes { socket.receive(into: $0, from: &source) })
            bytes = Array(buffer[..<count])
            guard bytes.withUnsafeBytes({ RTPPacket.isRTCP($0) }) else { break }
            reports.append(try #require(bytes.withUnsafeBytes { RTCPSenderReport.parse($0) }))
        }
        guard case .packet(let packet) = bytes.withUnsafeBytes({ RTPPacket.parse($0, audioLevelID: 1) }) else {
            Issue.record("malformed packet")
            throw SpeakerIOError(.address(source.description), .invalidPacket)
        }
        return Received(packet: packet, payload: Array(bytes[packet.payload]), source: source)
    }

    @Test("frames arrive as Opus over RTP with levels, sequence, timestamps and markers", arguments: ["127.0.0.1", "[::1]"])
    func sendsFrames(host: String) throws {
        let receiver = try UDPSocket(address: "\(host):0")
        let sender = try RTPAudioSender(
            socket: UDPSocket(address: "\(host):0"), ssrc: 0xCAFE_F00D,
            firstSequenceNumber: 65530, firstTimestamp: UInt32.max - 2000)
        #expect(sender.port > 0 && sender.payloadType == 111 && sender.audioLevelID == 1 && sender.bitrate == 32000)
        let destination = receiver.localAddress
        // A 440 Hz tone of amplitude 0.25: mean square 0.03125, −15.05 dBov, level 15.
        let tone = Signals.tone(frequency: 440, sampleRate: 48000, count: 48000, amplitude: 0.25)
        var received: [Received] = []
        var reports: [RTCPSenderReport] = []
        var frameIndex = 0
        func send(_ count: Int, voice: Bool = true) throws {
            for _ in 0..<count {
                let sent = try tone[frameIndex * 960..<(frameIndex + 1) * 960].withUnsafeBufferPointer {
                    try sender.send(frame: $0, to: destination, voice: voice)
                }
                #expect(sent)
                received.append(try Self.receive(receiver, reports: &reports))
                frameIndex += 1
            }
        }
        try send(20)
        sender.skip(frames: 10)  // muted for 200 ms
        frameIndex += 10
        try send(10, voice: false)
        sender.resume()
        try send(5)
        #expect(sender.packetsSent == 35 && sender.packetsNotSent == 0)

        let frameNumbers = Array(0..<20) + Array(30..<45)
        for (index, packet) in received.enumerated() {
            #expect(packet.source == sender.socket.localAddress && packet.source.port == sender.port)
            #expect(packet.packet.ssrc == 0xCAFE_F00D && packet.packet.payloadType == 111)
            #expect(packet.packet.sequenceNumber == 65530 &+ UInt16(index), "consecutive, wrapping")
            #expect(packet.packet.timestamp == (UInt32.max - 2000) &+ UInt32(frameNumbers[index] * 960), "with a gap after skip")
            #expect(packet.packet.marker == [0, 20, 30].contains(index))
            #expect(packet.packet.audioLevel == AudioLevel(level: 15, voice: !(20..<30).contains(index)))
        }
        #expect(sender.lastAudioLevel?.level == 15)
        // A sender report after the first packet: the timestamp where that frame ends, the wall clock now.
        #expect(sender.senderReportsSent == 1 && reports.count == 1)
        #expect(reports.first?.ssrc == 0xCAFE_F00D && reports.first?.rtpTimestamp == (UInt32.max - 2000) &+ 960)
        #expect(abs((reports.first?.unixTime ?? 0) - Date().timeIntervalSince1970) < 60)

        // The audio decodes to the tone's level (after the codec settles).
        let decoder = try OpusPacketDecoder(sampleRate: 48000)
        var decoded: [Float] = []
        var pcm = [Float](repeating: 0, count: decoder.maximumPacketSamples)
        for packet in received[..<20] {
            let count = try pcm.withUnsafeMutableBufferPointer { output in
                try packet.payload.withUnsafeBytes { try decoder.decode(packet: $0, into: output) }
            }
            #expect(count == 960)
            decoded += pcm[..<count]
        }
        let level = Signals.decibels(Signals.rms(decoded, 4800..<19200), relativeTo: 1)
        #expect(abs(level - -15.05) < 1, "decoded level \(level) dBov")
    }

    @Test func aRefusedPacketIsCountedAndStillAdvancesTheClock() throws {
        let sender = try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: 1, firstSequenceNumber: 0, firstTimestamp: 0)
        let silence = [Float](repeating: 0, count: 960)
        let v6 = try #require(SocketAddress(host: "::1", port: 9))
        #expect(try silence.withUnsafeBufferPointer { try sender.send(frame: $0, to: v6) } == false)
        #expect(sender.packetsNotSent == 1 && sender.packetsSent == 0)
        #expect(sender.sequenceNumber == 1 && sender.timestamp == 960)
        #expect(sender.lastAudioLevel == AudioLevel(level: 127, voice: false))
    }

    @Test func sendingAllocatesNothingAfterWarmUp() throws {
        let receiver = try UDPSocket(address: "127.0.0.1:0")
        let sender = try RTPAudioSender(localAddress: "127.0.0.1:0", ssrc: 7)
        let speech = Signals.speechLike(sampleRate: 48000, seconds: 2)
        var datagram = [UInt8](repeating: 0, count: 2048)
        var source = receiver.localAddress
        var allocations = 0, received = 0
        try speech.withUnsafeBufferPointer { speech in
            try datagram.withUnsafeMutableBytes { datagram in
                for frame in 0..<100 {
                    let before = allocation_counter_current_thread()
                    try sender.send(frame: UnsafeBufferPointer(rebasing: speech[frame * 960..<(frame + 1) * 960]), to: receiver.localAddress)
                    if frame % 10 == 9 { sender.skip(frames: 1) }
                    if frame >= 5 { allocations += allocation_counter_current_thread() - before }
                    _ = UDPSocket.wait([receiver], timeout: 2)  // allocates its pollfd array: not counted
                    let beforeReceiving = allocation_counter_current_thread()
                    let count = receiver.receive(into: datagram, from: &source)
                    if frame >= 5 { allocations += allocation_counter_current_thread() - beforeReceiving }
                    if count != nil { received += 1 }
                }
            }
        }
        #expect(sender.packetsSent == 100 && received == 100)
        #expect(source == sender.socket.localAddress)
        #expect(allocations == 0)
    }
}

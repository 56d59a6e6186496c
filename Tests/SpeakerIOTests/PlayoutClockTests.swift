import Foundation
import SpeakerOpus
import SpeakerRTP
import Testing
import TestSupport

/// Packets of one stream with the clock sample (16 kHz) each arrives at.
typealias Arrivals = [(arrival: Int, datagram: [UInt8])]

/// Plays the streams of one room for `ticks` ticks: before each tick, every datagram that arrived during
/// it goes to its receiver (in arrival order, with its arrival sample); then each receiver plays the tick.
/// Returns each stream's audio (zeros for silent ticks).
func playRoom(_ receivers: [RTPStreamReceiver], ticks: Int, arrivals: [Arrivals]) -> [[Float]] {
    var byTick: [Int: [(arrival: Int, stream: Int, datagram: [UInt8])]] = [:]
    for (stream, list) in arrivals.enumerated() {
        for item in list { byTick[item.arrival / 160, default: []].append((item.arrival, stream, item.datagram)) }
    }
    var audio = [[Float]](repeating: [], count: receivers.count)
    var hop = [Float](repeating: 0, count: 160)
    for tick in 0..<ticks {
        for item in (byTick[tick] ?? []).sorted(by: { $0.arrival < $1.arrival }) {
            item.datagram.withUnsafeBytes { bytes in
                if RTPPacket.isRTCP(bytes) {
                    if let report = RTCPSenderReport.parse(bytes) { receivers[item.stream].receive(report) }
                } else if case .packet(let packet) = RTPPacket.parse(bytes, audioLevelID: 1) {
                    receivers[item.stream].insert(packet, datagram: bytes, arrival: item.arrival)
                }
            }
        }
        for (index, receiver) in receivers.enumerated() {
            let output = hop.withUnsafeMutableBufferPointer { receiver.pull(tick: tick, into: $0) }
            audio[index] += output == .audio ? hop : [Float](repeating: 0, count: 160)
        }
    }
    return audio
}

@Suite("A room's playout clock: streams aligned by capture time; FEC; losses counted apart")
struct PlayoutClockTests {
    /// 6 s of a voice at 48 kHz (16 kHz repeated).
    static let signal = Synthesis.voice(seconds: 6, f0: 130, levelDBFS: -20, seed: 5).flatMap { [$0, $0, $0] }

    /// Packet `i` (20 ms) is captured by the end of its frame, at clock sample `start + 320 (i + 1)`, and
    /// arrives `delay(i)` samples later.
    static func arrivals(_ sender: OpusSender, ssrc: UInt32, start: Int = 0, delay: (Int) -> Int) -> Arrivals {
        sender.packets.indices.map { (start + 320 * ($0 + 1) + delay($0), sender.datagram($0, ssrc: ssrc)) }
    }

    /// The lag (samples) of `b` against `a` over the samples `range`, by cross-correlation.
    static func lag(_ a: [Float], _ b: [Float], _ range: Range<Int>) -> (lag: Int, correlation: Double) {
        Signals.bestLag(Array(b[range]), Array(a[range]), maximumLag: 2400)
    }

    static func receivers(_ count: Int, configuration: JitterBufferConfiguration = JitterBufferConfiguration()) throws -> [RTPStreamReceiver] {
        let clock = PlayoutClock(configuration: configuration)
        return try (0..<count).map { try RTPStreamReceiver(ssrc: UInt32(100 + $0), mode: .decode, configuration: configuration, startTick: 0, clock: clock) }
    }

    /// Two streams of the same capture with 10–70 ms of jitter (packets reordered), the second's first
    /// packet 60 ms late: with each buffer anchored on its own first packet they played 60 ms apart.
    @Test func streamsWithJitterPlayAligned() throws {
        let sender = try OpusSender(signal: Self.signal)
        var random = SeededGenerator(seed: 21)
        let jitter: (Int) -> Int = { _ in 160 + Int.random(in: 0...960, using: &random) }
        let a = Self.arrivals(sender, ssrc: 100, delay: jitter)
        let b = Self.arrivals(sender, ssrc: 101) { $0 == 0 ? 1120 : jitter($0) }
        let receivers = try Self.receivers(2)
        let audio = playRoom(receivers, ticks: 2 * sender.packets.count + 30, arrivals: [a, b])
        let (lag, correlation) = Self.lag(audio[0], audio[1], 16000..<(16000 * 5))
        #expect(abs(lag) <= 40, "streams \(lag) samples apart")
        #expect(correlation > 0.9)
        for receiver in receivers {
            #expect(receiver.statistics.played >= sender.packets.count - 4, "\(receiver.statistics)")
        }
        // The delay covers the jitter: 70 ms late at most, plus the guard.
        #expect(receivers[0].clock.delay >= 70 * 16 && receivers[0].clock.delay <= 90 * 16)
    }

    /// The second stream's network delay grows by 100 ms after 2 s and stays: the room's delay grows, the
    /// streams stay aligned, and nothing is lost.
    @Test func streamsStayAlignedWhenOneStreamsDelayGrows() throws {
        let sender = try OpusSender(signal: Self.signal)
        let a = Self.arrivals(sender, ssrc: 100) { _ in 320 }
        let b = Self.arrivals(sender, ssrc: 101) { $0 < 100 ? 320 : 320 + 1600 }
        let receivers = try Self.receivers(2)
        let audio = playRoom(receivers, ticks: 2 * sender.packets.count + 40, arrivals: [a, b])
        #expect(abs(Self.lag(audio[0], audio[1], 16000..<(16000 * 2)).lag) <= 40)
        let (lag, correlation) = Self.lag(audio[0], audio[1], (16000 * 3)..<(16000 * 6))
        #expect(abs(lag) <= 40, "streams \(lag) samples apart after the change")
        #expect(correlation > 0.9)
        #expect(receivers[1].statistics.lost == 0 && receivers[1].statistics.late == 0, "\(receivers[1].statistics)")
        #expect(receivers[0].clock.delay >= 1600 + 160)
    }

    /// Sender reports (read 0–5 ms late) of a stream whose path is 110 ms slower: aligned by capture time with them; 110 ms
    /// behind without them (what arrivals alone can tell), which shows the reports are what aligns it.
    @Test(arguments: [true, false])
    func senderReportsAlignStreamsOnDifferentPaths(reports: Bool) throws {
        let sender = try OpusSender(signal: Self.signal)
        var random = SeededGenerator(seed: 4)
        var a = Self.arrivals(sender, ssrc: 100) { _ in 160 + Int.random(in: 0...160, using: &random) }
        var b = Self.arrivals(sender, ssrc: 101) { _ in 1920 + Int.random(in: 0...160, using: &random) }
        let receivers = try Self.receivers(2)
        let wallClockAtZero = 1_800_000_000.0
        receivers[0].clock.wallClockAtZero = wallClockAtZero
        if reports {
            // Once a second: the timestamp of the end of packet i and the wall clock a little after (0–5 ms:
            // a sender reads its clock once the frame is encoded, later when busy).
            for index in stride(from: 0, to: sender.packets.count, by: 50) {
                let capture = 320 * (index + 1)
                for (ssrc, path) in [(UInt32(100), 160), (UInt32(101), 1920)] {
                    let late = Double(Int.random(in: 0...80, using: &random)) / 16000
                    let report = RTCPSenderReport(
                        ssrc: ssrc, ntpTimestamp: RTCPSenderReport.ntpTimestamp(unixTime: wallClockAtZero + Double(capture) / 16000 + late),
                        rtpTimestamp: sender.packets[index].timestamp &+ 960, packetCount: UInt32(index), octetCount: 0)
                    var bytes = [UInt8](repeating: 0, count: RTCPSenderReport.compoundLength(cnameBytes: 4))
                    bytes.withUnsafeMutableBytes { buffer in
                        _ = Array("test".utf8).withUnsafeBytes { report.write(cname: $0, into: buffer) }
                    }
                    if ssrc == 100 { a.append((capture + path, bytes)) } else { b.append((capture + path, bytes)) }
                }
            }
        }
        let audio = playRoom(receivers, ticks: 2 * sender.packets.count + 40, arrivals: [a, b])
        let (lag, _) = Self.lag(audio[0], audio[1], (16000 * 2)..<(16000 * 5))
        if reports {
            #expect(abs(lag) <= 40, "streams \(lag) samples apart")
            #expect(receivers.allSatisfy { $0.usesSenderReports })
            #expect(receivers[1].statistics.senderReports == (sender.packets.count + 49) / 50)
        } else {
            #expect(abs(abs(lag) - 1760) <= 200, "streams \(lag) samples apart")
            #expect(!receivers.contains { $0.usesSenderReports })
        }
        #expect(receivers.allSatisfy { $0.statistics.lost == 0 })
    }

    /// A sender report whose wall clock is far from the receiver's (an unsynchronised sender) is not used.
    @Test func aSenderReportFromAnotherClockIsIgnored() throws {
        let sender = try OpusSender(signal: Self.signal)
        let receivers = try Self.receivers(1)
        receivers[0].clock.wallClockAtZero = 1_800_000_000
        var a = Self.arrivals(sender, ssrc: 100) { _ in 320 }
        let report = RTCPSenderReport(
            ssrc: 100, ntpTimestamp: RTCPSenderReport.ntpTimestamp(unixTime: 1_800_000_000 + 3600), rtpTimestamp: sender.packets[0].timestamp,
            packetCount: 1, octetCount: 0)
        var bytes = [UInt8](repeating: 0, count: RTCPSenderReport.compoundLength(cnameBytes: 1))
        bytes.withUnsafeMutableBytes { buffer in _ = [UInt8(65)].withUnsafeBytes { report.write(cname: $0, into: buffer) } }
        a.insert((330, bytes), at: 1)
        _ = playRoom(receivers, ticks: 2 * sender.packets.count + 10, arrivals: [a])
        #expect(receivers[0].statistics.senderReports == 1)
        #expect(!receivers[0].usesSenderReports)
        #expect(receivers[0].statistics.played == sender.packets.count)
    }

    /// Single lost packets: decoded from the next packet's FEC when the sender sends FEC (and closer to the
    /// lossless decoding than concealment), concealed otherwise.
    @Test func lostPacketsAreRecoveredFromInbandFEC() throws {
        let lostPackets: Set = [40, 90, 140, 190]
        func run(fec: Bool, losing lost: Set<Int>) throws -> (audio: [Float], statistics: RTPStreamStatistics) {
            let sender = try OpusSender(signal: Self.signal, expectedLossPercent: fec ? 10 : 0)
            let arrivals = Self.arrivals(sender, ssrc: 100) { _ in 320 }.enumerated().filter { !lost.contains($0.offset) }.map(\.element)
            let receivers = try Self.receivers(1)
            let audio = playRoom(receivers, ticks: 2 * sender.packets.count + 10, arrivals: [arrivals])[0]
            return (audio, receivers[0].statistics)
        }
        let withFEC = try run(fec: true, losing: lostPackets)
        #expect(withFEC.statistics.lost == 4 && withFEC.statistics.recovered == 4 && withFEC.statistics.concealed == 0)
        let withoutFEC = try run(fec: false, losing: lostPackets)
        #expect(withoutFEC.statistics.lost == 4 && withoutFEC.statistics.concealed == 4 && withoutFEC.statistics.recovered == 0)
        // In the lost packets' places, FEC is nearer the lossless decoding than concealment.
        let reference = try run(fec: true, losing: []).audio
        func error(_ audio: [Float]) -> Double {
            lostPackets.reduce(0.0) { sum, index in
                let start = 320 * (index + 1) + 320 + 960  // its capture, the 20 ms path and the 60 ms delay
                return sum + (start..<(start + 320)).reduce(0.0) { $0 + Double((audio[$1] - reference[$1]) * (audio[$1] - reference[$1])) }
            }
        }
        #expect(error(withFEC.audio) < 0.5 * error(withoutFEC.audio), "FEC \(error(withFEC.audio)), PLC \(error(withoutFEC.audio))")
    }

    @Test func fecIsDetectedInPackets() throws {
        for loss in [0, 10] {
            let sender = try OpusSender(signal: Self.signal, expectedLossPercent: loss)
            let flagged = sender.packets.filter { packet in packet.payload.withUnsafeBytes { OpusPacketDecoder.hasInbandFEC($0) } }.count
            if loss == 0 {
                #expect(flagged == 0)
            } else {
                #expect(flagged > sender.packets.count / 2, "\(flagged) of \(sender.packets.count)")
            }
        }
    }

    /// A burst of 10 lost packets: 100 ms concealed (5 packets), the rest silent. Three packets lost
    /// before a 1 s pause are concealed as the buffer runs empty. Every loss is counted once.
    @Test func burstLossesAreConcealedThenSilenced() throws {
        let sender = try OpusSender(signal: Self.signal)
        // Packets 50…59 lost; 120…122 lost, and from 123 on the sender resumes after a second (DTX).
        var arrivals = Self.arrivals(sender, ssrc: 100) { $0 >= 123 ? 320 + 16000 : 320 }
        for index in 123..<arrivals.count {
            var packet = sender.packets[index]
            packet.timestamp &+= 48000
            arrivals[index].datagram = RTPBuilder.packet(sequence: packet.sequence, timestamp: packet.timestamp, ssrc: 100, payload: packet.payload)
        }
        arrivals = arrivals.enumerated().filter { !(50..<60).contains($0.offset) && !(120..<123).contains($0.offset) }.map(\.element)
        let receivers = try Self.receivers(1)
        let audio = playRoom(receivers, ticks: 2 * sender.packets.count + 120, arrivals: [arrivals])[0]
        let statistics = receivers[0].statistics
        #expect(statistics.concealed == 5 + 3, "\(statistics)")
        #expect(statistics.silenced == 5, "\(statistics)")
        #expect(statistics.lost == statistics.concealed + statistics.recovered + statistics.silenced)
        #expect(statistics.played == sender.packets.count - 13)
        // The pause is silent after the concealment: nothing from 100 ms after packet 120's place until 123's.
        let pause = (320 * 121 + 1280 + 1600 + 160)..<(320 * 124 + 1280 + 16000 - 160)
        #expect(audio[pause].allSatisfy { $0 == 0 })
    }
}

@Suite("RTCP sender reports")
struct RTCPSenderReportTests {
    @Test func writeThenParse() throws {
        let report = RTCPSenderReport(
            ssrc: 0xDEAD_BEEF, ntpTimestamp: RTCPSenderReport.ntpTimestamp(unixTime: 1_764_000_000.25), rtpTimestamp: 4_000_000_000,
            packetCount: 17, octetCount: 1234)
        let cname = Array("activespeaker-deadbeef".utf8)
        var bytes = [UInt8](repeating: 0xAA, count: RTCPSenderReport.compoundLength(cnameBytes: cname.count))
        let length = bytes.withUnsafeMutableBytes { buffer in cname.withUnsafeBytes { report.write(cname: $0, into: buffer) } }
        #expect(length == bytes.count && length % 4 == 0)
        #expect(bytes.withUnsafeBytes { RTPPacket.isRTCP($0) })
        #expect(bytes.withUnsafeBytes { RTCPSenderReport.parse($0) } == report)
        #expect(abs(report.unixTime - 1_764_000_000.25) < 1e-6)
        // 48,000 timestamps later is one second later, across the 2³² wrap.
        #expect(abs(report.wallClock(ofTimestamp: 4_000_000_000 &+ 48000 &* 10, clockRate: 48000) - (report.unixTime + 10)) < 1e-6)
        // The SDES packet's length field covers it exactly, and the CNAME is there.
        #expect(bytes[28] == 0x81 && bytes[29] == 202)
        #expect(4 * (Int(bytes[30]) << 8 | Int(bytes[31]) + 1) == length - 28)
        #expect(Array(bytes[38..<(38 + cname.count)]) == cname)
    }

    @Test func aReportAfterAReceiverReportIsFound() {
        let receiverReport: [UInt8] = [0x80, 201, 0, 1, 0, 0, 0, 2]
        let report = RTCPSenderReport(ssrc: 7, ntpTimestamp: 1 << 32 | 5, rtpTimestamp: 9, packetCount: 1, octetCount: 2)
        var sr = [UInt8](repeating: 0, count: RTCPSenderReport.compoundLength(cnameBytes: 1))
        sr.withUnsafeMutableBytes { buffer in _ = [UInt8(1)].withUnsafeBytes { report.write(cname: $0, into: buffer) } }
        let compound = receiverReport + Array(sr[..<28])
        #expect(compound.withUnsafeBytes { RTCPSenderReport.parse($0) } == report)
        #expect(receiverReport.withUnsafeBytes { RTCPSenderReport.parse($0) } == nil)
    }

    @Test(arguments: [
        [0x80, 200, 0, 6, 0, 0, 0, 1] as [UInt8],  // says 28 bytes, has 8
        [0x80, 200, 0, 0, 0, 0, 0, 1] as [UInt8],  // a sender report of 4 bytes
        [0x40, 200, 0, 1, 0, 0, 0, 1] as [UInt8],  // version 1
    ])
    func malformedReportsAreRefused(bytes: [UInt8]) {
        #expect(bytes.withUnsafeBytes { RTCPSenderReport.parse($0) } == nil)
    }
}

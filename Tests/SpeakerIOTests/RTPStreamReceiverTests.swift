import Foundation
import SpeakerOpus
import SpeakerRTP
import Testing
import TestSupport

/// A sender of one Opus stream: 20 ms packets of a signal at 48 kHz, with RTP numbering.
struct OpusSender {
    var packets: [(sequence: UInt16, timestamp: UInt32, payload: [UInt8], level: UInt8)] = []

    /// Encodes `signal` (48 kHz) from `firstSequence`/`firstTimestamp` on; `level` per packet as RFC 6464.
    /// `expectedLossPercent` > 0 makes the packets carry in-band FEC.
    init(signal: [Float], firstSequence: UInt16 = 1000, firstTimestamp: UInt32 = 123_456, expectedLossPercent: Int = 0) throws {
        let encoder = try OpusPacketEncoder(sampleRate: 48000, bitrate: 32000)
        try encoder.setInbandFEC(expectedLossPercent: expectedLossPercent)
        var sequence = firstSequence, timestamp = firstTimestamp
        for start in stride(from: 0, to: signal.count - 960 + 1, by: 960) {
            let frame = Array(signal[start..<start + 960])
            let payload = try frame.withUnsafeBufferPointer { try encoder.encode($0) }
            let meanSquare = frame.reduce(0) { $0 + $1 * $1 } / 960
            let level = meanSquare > 0 ? UInt8(max(0, min(127, (-10 * log10(meanSquare)).rounded()))) : 127
            packets.append((sequence, timestamp, payload, level))
            sequence &+= 1
            timestamp &+= 960
        }
    }

    /// The datagram of packet `index`, with the audio level as one-byte extension id 1.
    func datagram(_ index: Int, ssrc: UInt32 = 42) -> [UInt8] {
        let packet = packets[index]
        return RTPBuilder.packet(
            sequence: packet.sequence, timestamp: packet.timestamp, ssrc: ssrc,
            extension: RTPBuilder.oneByteExtension([(1, [packet.level])]), payload: packet.payload)
    }
}

/// Runs a receiver for `ticks` ticks, inserting the datagrams scheduled before each tick.
/// Returns the concatenated audio (zeros for silent ticks) and each tick's output.
func play(
    _ receiver: RTPStreamReceiver, ticks: Int, schedule: [Int: [[UInt8]]]
) -> (audio: [Float], outputs: [RTPStreamReceiver.Output]) {
    var audio: [Float] = []
    var outputs: [RTPStreamReceiver.Output] = []
    var hop = [Float](repeating: 0, count: 160)
    for tick in 0..<ticks {
        for datagram in schedule[tick] ?? [] {
            datagram.withUnsafeBytes { bytes in
                if case .packet(let packet) = RTPPacket.parse(bytes, audioLevelID: 1) {
                    receiver.insert(packet, datagram: bytes)
                }
            }
        }
        let output = hop.withUnsafeMutableBufferPointer { receiver.pull(tick: tick, into: $0) }
        outputs.append(output)
        audio += output == .audio ? hop : [Float](repeating: 0, count: 160)
    }
    return (audio, outputs)
}

@Suite("RTP jitter buffer and Opus playout")
struct RTPStreamReceiverTests {
    static let signal = Synthesis.voice(seconds: 1.2, f0: 140, levelDBFS: -20, seed: 3).flatMap { [$0, $0, $0] }  // 16 → 48 kHz by repetition

    /// Packet i arrives just before tick 2i (real time: one 20 ms packet per two 10 ms ticks).
    static func inOrder(_ sender: OpusSender) -> [Int: [[UInt8]]] {
        Dictionary(uniqueKeysWithValues: sender.packets.indices.map { (2 * $0, [sender.datagram($0)]) })
    }

    @Test func inOrderPacketsPlayAfterTheJitterDelay() throws {
        let sender = try OpusSender(signal: Self.signal)
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let (audio, outputs) = play(receiver, ticks: 2 * sender.packets.count + 10, schedule: Self.inOrder(sender))
        // 60 ms of delay: the first 6 ticks are silent, then audio continues without a gap.
        #expect(outputs.prefix(6).allSatisfy { $0 == .silence })
        #expect(outputs[6..<(6 + 2 * sender.packets.count)].allSatisfy { $0 == .audio })
        #expect(receiver.statistics.played == sender.packets.count)
        #expect(receiver.statistics.lost == 0 && receiver.statistics.spurts == 1)
        // The decoded audio matches the source (Opus delay of 6.5 ms aside).
        let source = stride(from: 0, to: Self.signal.count, by: 3).map { Self.signal[$0] }
        let best = Signals.bestLag(Array(audio[960...]), source, maximumLag: 400)
        #expect(best.correlation > 0.9)
    }

    @Test func reorderedAndDuplicatedPacketsPlayAsInOrder() throws {
        let sender = try OpusSender(signal: Self.signal)
        var schedule: [Int: [[UInt8]]] = [:]
        var random = SeededGenerator(seed: 11)
        for index in sender.packets.indices {
            // Up to 30 ms late (inside the 60 ms delay), some twice; the first on time, since the
            // talk spurt's playout is anchored on its arrival.
            let tick = 2 * index + (index == 0 ? 0 : Int.random(in: 0...3, using: &random))
            schedule[tick, default: []].append(sender.datagram(index))
            if index % 7 == 0 { schedule[tick + 1, default: []].append(sender.datagram(index)) }
        }
        let ordered = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let shuffled = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let ticks = 2 * sender.packets.count + 12
        let reference = play(ordered, ticks: ticks, schedule: Self.inOrder(sender)).audio
        let audio = play(shuffled, ticks: ticks, schedule: schedule).audio
        #expect(audio.count == reference.count)
        #expect(zip(audio, reference).filter { $0 != $1 }.count == 0, "the audio is sample-identical")
        #expect(shuffled.statistics.lost == 0)
        #expect(shuffled.statistics.duplicates + shuffled.statistics.late == (sender.packets.count + 6) / 7)
    }

    @Test func sequenceAndTimestampWrapAround() throws {
        let sender = try OpusSender(signal: Self.signal, firstSequence: 65_520, firstTimestamp: UInt32.max - 5 * 960)
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let (_, outputs) = play(receiver, ticks: 2 * sender.packets.count + 10, schedule: Self.inOrder(sender))
        #expect(receiver.statistics.played == sender.packets.count)
        #expect(receiver.statistics.lost == 0 && receiver.statistics.jumps == 0 && receiver.statistics.restarts == 0)
        #expect(outputs[6..<(6 + 2 * sender.packets.count)].allSatisfy { $0 == .audio })
    }

    @Test func lostPacketsAreConcealed() throws {
        let sender = try OpusSender(signal: Self.signal)
        var schedule = Self.inOrder(sender)
        for lost in [10, 11, 30] { schedule[2 * lost] = nil }
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let (_, outputs) = play(receiver, ticks: 2 * sender.packets.count + 10, schedule: schedule)
        #expect(receiver.statistics.lost == 3)
        // Concealment keeps the audio going: no silent tick inside the stream.
        #expect(outputs[6..<(6 + 2 * sender.packets.count)].allSatisfy { $0 == .audio })
    }

    @Test func dtxPauseIsSilenceNotSpeech() throws {
        // Packets 0..<20, then the sender sends nothing for 1 s (DTX), then packets 20... with the
        // timestamp advanced by that second and the next sequence number.
        let sender = try OpusSender(signal: Self.signal)
        var schedule: [Int: [[UInt8]]] = [:]
        for index in sender.packets.indices {
            var packet = sender.packets[index]
            let paused = index >= 20
            if paused { packet.timestamp &+= 48000 }
            let datagram = RTPBuilder.packet(
                sequence: packet.sequence, timestamp: packet.timestamp, ssrc: 42, payload: packet.payload)
            schedule[2 * index + (paused ? 100 : 0), default: []].append(datagram)
        }
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let (_, outputs) = play(receiver, ticks: 2 * sender.packets.count + 120, schedule: schedule)
        // During the pause nothing plays once the 100 ms concealment of the buffer running empty is over:
        // the engine gets no hop (silence), and no loss is counted.
        #expect(outputs[(6 + 40 + 10)..<(40 + 100)].allSatisfy { $0 == .silence })
        #expect(receiver.statistics.lost == 0)
        #expect(receiver.statistics.spurts == 2)
        #expect(receiver.statistics.played == sender.packets.count)
    }

    @Test func timestampJumpWithinASpurtReanchors() throws {
        let sender = try OpusSender(signal: Self.signal)
        var schedule: [Int: [[UInt8]]] = [:]
        for index in sender.packets.indices {
            var packet = sender.packets[index]
            if index >= 25 { packet.timestamp &+= 480_000 }  // +10 s, packets keep coming every 20 ms
            schedule[2 * index] = [RTPBuilder.packet(sequence: packet.sequence, timestamp: packet.timestamp, ssrc: 42, payload: packet.payload)]
        }
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        let (_, outputs) = play(receiver, ticks: 2 * sender.packets.count + 10, schedule: schedule)
        #expect(receiver.statistics.jumps == 1)
        #expect(receiver.statistics.played == sender.packets.count)
        #expect(outputs[6..<(6 + 2 * sender.packets.count)].allSatisfy { $0 == .audio })
    }

    @Test func aNewSequenceIsARestartAfterTwoPackets() throws {
        let sender = try OpusSender(signal: Self.signal)
        var schedule: [Int: [[UInt8]]] = [:]
        for index in sender.packets.indices {
            var packet = sender.packets[index]
            if index >= 30 { packet.sequence &+= 20_000 }
            schedule[2 * index] = [RTPBuilder.packet(sequence: packet.sequence, timestamp: packet.timestamp, ssrc: 42, payload: packet.payload)]
        }
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        _ = play(receiver, ticks: 2 * sender.packets.count + 10, schedule: schedule)
        #expect(receiver.statistics.restarts == 1)
        // The first packet of the new sequence waits on probation and is dropped; the restart also
        // drops the old sequence's packets still waiting in the 60 ms buffer (two).
        #expect(receiver.statistics.played == sender.packets.count - 3)
        #expect(receiver.statistics.spurts == 2)
    }

    @Test func invalidOpusIsRejected() throws {
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 0)
        // TOC code 3 with a frame count of 0 is invalid.
        let datagram = RTPBuilder.packet(payload: [0x03, 0x00])
        let insertion = datagram.withUnsafeBytes { bytes -> RTPStreamReceiver.Insertion? in
            guard case .packet(let packet) = RTPPacket.parse(bytes) else { return nil }
            return receiver.insert(packet, datagram: bytes)
        }
        #expect(insertion == .invalidPayload)
        #expect(receiver.statistics.invalidPayloads == 1 && receiver.statistics.packets == 0)
    }

    @Test func levelModeReportsLevelsWithoutDecoding() throws {
        let sender = try OpusSender(signal: Self.signal)
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .levels, startTick: 0)
        let (_, outputs) = play(receiver, ticks: 2 * sender.packets.count + 10, schedule: Self.inOrder(sender))
        let levels = outputs.compactMap { output -> UInt8? in
            if case .level(let level) = output { return level.level }
            return nil
        }
        #expect(levels.count == 2 * sender.packets.count)
        #expect(levels == sender.packets.flatMap { [$0.level, $0.level] })
    }

    @Test func aStreamJoiningLateStartsAtItsTick() throws {
        let sender = try OpusSender(signal: Self.signal)
        let receiver = try RTPStreamReceiver(ssrc: 42, mode: .decode, startTick: 500)
        var hop = [Float](repeating: 0, count: 160)
        var outputs: [RTPStreamReceiver.Output] = []
        for tick in 500..<(500 + 2 * sender.packets.count + 10) {
            let index = (tick - 500) / 2
            if (tick - 500) % 2 == 0, index < sender.packets.count {
                sender.datagram(index).withUnsafeBytes { bytes in
                    if case .packet(let packet) = RTPPacket.parse(bytes) { receiver.insert(packet, datagram: bytes) }
                }
            }
            outputs.append(hop.withUnsafeMutableBufferPointer { receiver.pull(tick: tick, into: $0) })
        }
        // Then 40 ms of the concealment after the last packet, until the run ends.
        #expect(outputs.filter { $0 == .audio }.count == 2 * sender.packets.count + 4)
    }
}

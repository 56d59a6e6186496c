/// libFuzzer target for the RTP packet parser, the RFC 8285 header-extension walker (with the RFC 6464
/// audio level) and the jitter buffer's reorder and playout logic.
///
/// Built by `tools/network/fuzz_rtp.sh` together with `Sources/SpeakerIO/RTP/RTPPacket.swift`,
/// `RTPJitterBuffer.swift` and `PlayoutClock.swift` into one module, linked with SpeakerBase (its own module, as in the package), with
/// `swiftc -sanitize=fuzzer,address`.
///
/// Input: byte 0 picks the audio-level extension id (0 = none); then datagrams, each a length byte
/// followed by that many bytes (the last takes what is left). Every datagram is parsed; the packets are
/// put into one jitter buffer (arriving at a point of the tick its last payload byte picks, so arrival
/// jitter and timestamp jumps are fuzzed too), which plays one 10 ms tick after each; every fourth datagram
/// is also taken as a sender report of its timestamp at its arrival.

@_cdecl("LLVMFuzzerTestOneInput")
public func rtpFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let first = input.first else { return 0 }
    let levelID = first == 0 ? nil : Int(first)
    let clock = PlayoutClock(configuration: JitterBufferConfiguration())
    var buffer = RTPJitterBuffer(configuration: JitterBufferConfiguration(), start: 0, clock: clock)
    defer { buffer.deallocate() }
    var offset = 1
    var tick = 0
    while offset < size {
        let length = min(Int(input[offset]), size - offset - 1)
        let datagram = UnsafeRawBufferPointer(rebasing: input[(offset + 1)..<(offset + 1 + length)])
        offset += 1 + length
        switch RTPPacket.parse(datagram, audioLevelID: levelID) {
        case .malformed:
            continue
        case .packet(let packet):
            precondition(packet.payload.lowerBound >= 12 && packet.payload.upperBound <= datagram.count && !packet.payload.isEmpty)
            if let profile = packet.extensionProfile, (datagram[0] & 0x10) != 0 {
                let start = 12 + 4 * Int(datagram[0] & 0x0F) + 4
                let words = Int(datagram[start - 2]) << 8 | Int(datagram[start - 1])
                let block = UnsafeRawBufferPointer(rebasing: datagram[start..<(start + 4 * words)])
                let valid = HeaderExtensionElements.forEach(in: block, profile: profile) { element in
                    precondition(element.data.upperBound <= block.count && element.id > 0)
                }
                precondition(valid, "a parsed packet has a valid extension block")
            }
            let payload = UnsafeRawBufferPointer(rebasing: datagram[packet.payload])
            let arrival = tick * 160 + Int(payload[payload.count - 1] % 160)
            _ = buffer.insert(packet, payload: payload, duration: 320, arrival: arrival, fec: payload[0] & 1 == 1)
            if tick % 4 == 3 { buffer.noteSenderReport(timestamp: packet.timestamp, sample: arrival - 320) }
        }
        // Play one tick: what a receiver does every 10 ms.
        let now = tick * 160, end = now + 160
        clock.update(now: now)
        var steps = 0
        while buffer.decidedUntil < end {
            let position = buffer.decidedUntil
            switch buffer.next(end: end, lastDuration: 320) {
            case .play(let slot, let start, let skip):
                precondition(skip >= 0 && buffer.payload(slot).count <= RTPJitterBuffer.slotBytes)
                buffer.advance(to: start + 320)
            case .recover(let slot, let samples):
                precondition(buffer.slot(slot).occupied && samples > 0)
                buffer.advance(to: position + samples)
            case .conceal(let samples):
                buffer.advance(to: position + samples)
            case .silence:
                break
            }
            steps += 1
            precondition(steps < 10_000, "playout makes progress")
        }
        tick += 1
    }
    return 0
}

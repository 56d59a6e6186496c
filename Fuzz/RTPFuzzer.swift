/// libFuzzer target for the RTP packet parser, the RFC 8285 header-extension walker (with the RFC 6464
/// audio level) and the jitter buffer's reorder and playout logic.
///
/// Built by `tools/fuzz_rtp.sh` together with `Sources/SpeakerIO/RTP/RTPPacket.swift` and
/// `RTPJitterBuffer.swift` into one module, linked with SpeakerBase (its own module, as in the package), with
/// `swiftc -sanitize=fuzzer,address`.
///
/// Input: byte 0 picks the audio-level extension id (0 = none); then datagrams, each a length byte
/// followed by that many bytes (the last takes what is left). Every datagram is parsed; the packets are
/// put into one jitter buffer, which plays one 10 ms tick after each.

@_cdecl("LLVMFuzzerTestOneInput")
public func rtpFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let first = input.first else { return 0 }
    let levelID = first == 0 ? nil : Int(first)
    var buffer = RTPJitterBuffer(configuration: JitterBufferConfiguration(), start: 0)
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
            _ = buffer.insert(packet, payload: payload, duration: 320)
        }
        // Play one tick: what a receiver does every 10 ms.
        let now = tick * 160, end = now + 160
        var steps = 0
        while buffer.decidedUntil < end {
            let position = buffer.decidedUntil
            switch buffer.next(now: now, end: end, lastDuration: 320) {
            case .play(let slot, let start, let skip):
                precondition(skip >= 0 && buffer.payload(slot).count <= RTPJitterBuffer.slotBytes)
                buffer.advance(to: start + 320)
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

/// The duration of an Opus packet from its table-of-contents byte (RFC 6716 §3.1).
enum OpusPacketDuration {
    /// Samples at 48 kHz in the packet `payload`, or nil if it is empty or its frame count byte is missing.
    ///
    /// The TOC byte's top 5 bits are the configuration: 0…11 SILK (10, 20, 40, 60 ms by `config % 4`),
    /// 12…15 hybrid (10, 20 ms by `config % 2`), 16…31 CELT (2.5, 5, 10, 20 ms by `config % 4`). Its low 2 bits
    /// are the code: 0 one frame, 1 and 2 two frames, 3 a count in the next byte's low 6 bits.
    static func samples(_ payload: UnsafeRawBufferPointer) -> Int? {
        guard let toc = payload.first else { return nil }
        let config = Int(toc >> 3)
        let frame: Int
        switch config {
        case 0...11: frame = [480, 960, 1920, 2880][config % 4]
        case 12...15: frame = [480, 960][config % 2]
        default: frame = [120, 240, 480, 960][config % 4]
        }
        switch toc & 3 {
        case 0: return frame
        case 1, 2: return 2 * frame
        default:
            guard payload.count >= 2 else { return nil }
            return frame * Int(payload[1] & 0x3F)
        }
    }
}

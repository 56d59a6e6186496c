import SpeakerCore

/// Folds everything a scenario produces (events, features, decoded samples) into one number that is
/// printed, so the optimiser cannot drop the work and two runs of the same build can be compared.
struct Checksum {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    /// Mixes in 64 bits (a multiply-xorshift step: cheap, order-sensitive).
    @inline(__always)
    mutating func add(_ bits: UInt64) {
        value = (value ^ bits) &* 0x0000_0100_0000_01b3
        value ^= value >> 29
    }

    mutating func add(_ number: Int) { add(UInt64(bitPattern: Int64(number))) }
    mutating func add(_ number: Float) { add(UInt64(number.bitPattern)) }
    mutating func add(_ number: Double) { add(number.bitPattern) }

    mutating func add(_ event: EngineEvent) {
        switch event {
        case .speech(let stream, let active, let time, let since):
            add(stream.rawValue &* 2 &+ (active ? 1 : 0))
            add(time)
            add(since)
        case .dominant(let room, let stream, let time):
            add(room.rawValue)
            add(stream?.rawValue ?? -1)
            add(time)
        }
    }

    mutating func add(_ features: FrameFeatures) {
        add(features.energyDBFS)
        add(features.speechBandExcessDB)
        add(features.periodicity)
        add(Int(features.level))
    }

    /// Hexadecimal, 16 digits.
    var hex: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}

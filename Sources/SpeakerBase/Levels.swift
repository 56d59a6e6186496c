import Foundation

/// Signal levels of one frame.
public enum Levels {
    /// The lowest level reported, in dBFS, for an all-zero frame.
    public static let floorDBFS: Float = -127

    /// The energy of a frame in dB relative to a full-scale square wave (mean square 1.0).
    ///
    /// - Parameter meanSquare: mean of `x²` over the frame, `x` in ±1 full scale.
    /// - Returns: `10·log10(meanSquare)`, at least −127 (a full-scale sine is −3.01 dBFS).
    @inlinable
    public static func dBFS(meanSquare: Float) -> Float {
        guard meanSquare > 0 else { return floorDBFS }
        // 10·log10(x) = 10·log10(2)·log2(x); the fast log2 is within 0.00005 dB.
        return max(floorDBFS, 3.010_299_956_6 * FastMath.log2(meanSquare))
    }

    /// The RFC 6464 audio level of a frame, as libwebrtc computes it.
    ///
    /// The level is `−dBov` rounded to an integer: `round(−10·log10(meanSquare / fullScale²))`,
    /// where full scale is 1.0 here, clamped to 0…127; an all-zero frame is 127 (silence).
    /// - Parameter meanSquare: mean of `x²` over the frame, `x` in ±1 full scale.
    /// - Returns: 0 (loudest, 0 dBov) to 127 (−127 dBov or quieter).
    @inlinable
    public static func rfc6464Level(meanSquare: Float) -> UInt8 {
        guard meanSquare > 0 else { return 127 }
        let level = (-10 * log10f(meanSquare)).rounded()
        return UInt8(max(0, min(127, level)))
    }
}

/// The RFC 6464 client-to-mixer audio level of a packet.
public struct AudioLevel: Sendable, Hashable {
    /// The level as −dBov: 0 is the loudest (0 dBov), 127 the quietest (−127 dBov or less).
    public var level: UInt8
    /// The sender's voice-activity flag (V). Only meaningful if the sender sets it; GStreamer 1.22 never does.
    public var voice: Bool

    public init(level: UInt8, voice: Bool) {
        self.level = level
        self.voice = voice
    }

    /// The level in dBov, 0…−127.
    public var dBov: Float { -Float(level) }
}

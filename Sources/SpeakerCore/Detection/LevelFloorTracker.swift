/// The noise floor of a stream known only by its levels (RFC 6464), by minimum statistics in dB.
///
/// The floor is the lowest level of the last 1.6 s (four subwindows of 0.4 s), plus 3 dB because the
/// minimum of a fluctuating noise level sits below its mean, and never above −40 dBov, so that a long
/// stretch of continuous speech cannot become the floor. A sender that reports digital silence as a
/// fixed level (GStreamer 1.22 reports 59, −59 dBov) simply has that as its floor, so speech is judged
/// against it. Only ticks that carried a level update it. Real-time safe; O(1) per frame.
struct LevelFloorTracker {
    static let subwindowFrames = 40
    static let bias: Float = 3
    /// The highest floor, dBov.
    static let ceiling: Float = -40
    private var currentMinimum = Float.greatestFiniteMagnitude
    private var pastMinima = SIMD4<Float>(repeating: .greatestFiniteMagnitude)
    private var frames = 0
    private var next = 0

    /// The floor in dB (dBov) as of the last update; −127 before any.
    var floor: Float {
        // Lane by lane: the generic SIMD reduction is a slow loop on baseline x86-64.
        let lowest = min(min(pastMinima[0], pastMinima[1]), min(pastMinima[2], pastMinima[3]), currentMinimum)
        return lowest == .greatestFiniteMagnitude ? Levels.floorDBFS : min(lowest + Self.bias, Self.ceiling)
    }

    /// Adds a frame's level in dB (dBov); returns the floor in dB.
    mutating func update(_ decibels: Float) -> Float {
        currentMinimum = min(currentMinimum, decibels)
        frames += 1
        if frames == Self.subwindowFrames {
            pastMinima[next] = currentMinimum
            next = (next + 1) % 4
            currentMinimum = .greatestFiniteMagnitude
            frames = 0
        }
        return floor
    }
}

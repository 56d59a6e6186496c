internal import CPrefetch

/// One stream's recent frame evidence in its own time: what the analysis found in each of its last
/// `capacity` frames. The room reads it back later when the stream must wait for a later stream
/// (`frame(delay:)`), and measures the stream's delay on its energy envelope (`copyExcess`) and checks
/// it on its spectral shapes (`copyShapes`).
///
/// Rings over heap blocks allocated when the stream is made; `record` is three stores, an increment
/// and a compare (it runs for every stream-frame, on the analysing worker).
/// It lives inside a `Talker`, which one thread touches at a time.
struct EvidenceHistory: ~Copyable {
    /// One frame's evidence.
    struct Frame {
        var voiced = false
        var continues = false
        /// Speech-band energy above the noise floor, dBFS (levels only: the level in dBFS).
        var excess = Levels.floorDBFS
        /// RFC 6464 level.
        var level: UInt8 = 127
    }

    /// Frames held, a power of two.
    let capacity: Int
    private let mask: Int
    /// Speech-band excess per frame, dBFS.
    private let excess: UnsafeMutablePointer<Float>
    /// Per frame: bit 0 voiced, bit 1 continues; bits 8…15 the level.
    private let flags: UnsafeMutablePointer<UInt16>
    /// Per frame: the spectral shape (`SpectralShape`), 64 bytes.
    private let shapes: UnsafeMutablePointer<SpectralShape>
    /// Frames recorded since the stream was made.
    private(set) var count = 0
    /// `count` after the last frame whose excess stood above digital silence (0: none yet).
    private(set) var soundedCount = 0

    /// - Parameter frames: frames to keep, at least 1 (rounded up to a power of two).
    init(frames: Int) {
        var capacity = 1
        while capacity < frames { capacity <<= 1 }
        self.capacity = capacity
        mask = capacity - 1
        excess = .allocate(capacity: capacity)
        excess.initialize(repeating: Levels.floorDBFS, count: capacity)
        flags = .allocate(capacity: capacity)
        flags.initialize(repeating: 127 << 8, count: capacity)
        shapes = .allocate(capacity: capacity)
        shapes.initialize(repeating: SpectralShape(), count: capacity)
    }

    deinit {
        excess.deallocate()
        flags.deallocate()
        shapes.deallocate()
    }

    /// Appends the newest frame.
    @inline(__always)
    mutating func record(
        voiced: Bool, continues: Bool, excess value: Float, level: UInt8, shape: SpectralShape = SpectralShape()
    ) {
        let slot = count & mask
        excess[slot] = value
        flags[slot] = UInt16(level) << 8 | (continues ? 2 : 0) | (voiced ? 1 : 0)
        shapes[slot] = shape
        count &+= 1
        if value > Levels.floorDBFS + 1 { soundedCount = count }
    }

    /// Whether any of the newest `frames` frames stood above digital silence (a muted or silent stream's
    /// frames do not).
    @inline(__always)
    func sounded(withinLast frames: Int) -> Bool { soundedCount > 0 && count - soundedCount < frames }

    /// Asks for the memory the next `record` writes (its three slots are far from the talker's other
    /// state: at 1,024 streams they are rarely in cache). Call while the frame is being analysed.
    @inline(__always)
    func prefetchNextSlot() {
        let slot = count & mask
        activespeaker_prefetch(UnsafeRawPointer(excess + slot), 4)
        activespeaker_prefetch(UnsafeRawPointer(flags + slot), 2)
        activespeaker_prefetch(UnsafeRawPointer(shapes + slot), 64)
    }

    /// The frame `delay` frames before the newest (0: the newest); silence before the first frame.
    /// - Precondition: `0 ≤ delay < capacity`.
    func frame(delay: Int) -> Frame {
        let index = count - 1 - delay
        guard index >= 0 else { return Frame() }
        let slot = index & mask
        let bits = flags[slot]
        return Frame(voiced: bits & 1 != 0, continues: bits & 2 != 0, excess: excess[slot], level: UInt8(bits >> 8))
    }

    /// Copies the excess of `length` consecutive frames, the last of them `end` frames before the
    /// newest, oldest first, to `destination`.
    /// - Precondition: `end + length ≤ capacity` and `end + length ≤ count` (all recorded).
    func copyExcess(endingDelay end: Int, length: Int, to destination: UnsafeMutablePointer<Float>) {
        copy(from: excess, endingDelay: end, length: length, to: destination)
    }

    /// Copies the spectral shapes of `length` consecutive frames, the last of them `end` frames before
    /// the newest, oldest first, to `destination`.
    /// - Precondition: as `copyExcess`.
    func copyShapes(endingDelay end: Int, length: Int, to destination: UnsafeMutablePointer<SpectralShape>) {
        copy(from: shapes, endingDelay: end, length: length, to: destination)
    }

    @inline(__always)
    private func copy<Value>(
        from ring: UnsafeMutablePointer<Value>, endingDelay end: Int, length: Int, to destination: UnsafeMutablePointer<Value>
    ) {
        var index = count - end - length
        var k = 0
        while k < length {
            destination[k] = ring[index & mask]
            index += 1
            k += 1
        }
    }
}

/// A frame's spectral shape: its speech bands' energies (`SpectralBands.speechBands`, 14 of 16) less
/// their mean, dB; the other two bands 0.
///
/// A gain applied to the whole frame — a noise suppressor's or a gain control's, which reshape a leaked
/// voice's energy envelope frame by frame — leaves it unchanged, so that a voice heard by two
/// microphones keeps the same sequence of shapes in both streams where its envelopes no longer match.
/// Kept as floats (64 bytes a frame): packed into bytes it would cost ~700 more instructions per
/// stream-frame (Swift's vector conversions go lane by lane), more than its memory traffic saves.
struct SpectralShape: Equatable {
    var decibels = SIMD16<Float>()

    init() {}

    /// The shape of a frame's band energies (dB, `FrameFeatures.bandEnergyDB`).
    @inline(__always)
    init(bandEnergyDB bands: SIMD16<Float>) {
        let speech = SIMD16<Float>(0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0)
        let speechBands = bands * speech
        let mean = speechBands.sum() * (1 / 14)
        decibels = speechBands - mean * speech
    }
}

/// What one stream's room knows of its timing: how late it carries the voices of the room's other
/// streams, and how long its evidence waits (`RoomAlignment`).
struct StreamAlignment {
    /// One measured source: another stream of the room whose voice this stream's microphone carries.
    struct SourceLag {
        /// The stream whose own voice it is. Not retained (talkers would hold one another in a cycle):
        /// `RoomAlignment.forget` drops the entry when that stream leaves the room, before it can go.
        unowned(unsafe) var source: Talker?
        /// The last `SourceLag.kept` measurements (frames by which this stream carries that voice later
        /// than the source's own stream; negative: earlier), oldest overwritten first.
        var measurements = SIMD8<Float>(repeating: 0)
        /// Measurements held, up to `kept`.
        var measured = 0
        /// Where the next measurement goes.
        var next = 0
        /// The median of the measurements, once at least `RoomAlignment.agreeing` of them lie within
        /// `RoomAlignment.agreeFrames` of it; nil until then (one odd correlation must not move a
        /// stream by tenths of a second).
        var lag: Float?
        /// The frame of the last measurement (the least recent entry makes room for a new source).
        var lastFrame = 0

        static let kept = 7

        /// Adds a measurement and updates `lag`.
        mutating func add(_ value: Float) {
            measurements[next] = value
            next = next + 1 == Self.kept ? 0 : next + 1
            measured = min(measured + 1, Self.kept)
            // The median by insertion sort of the few values held.
            var sorted = SIMD8<Float>(repeating: 0)
            var count = 0
            while count < measured {
                let value = measurements[count]
                var position = count
                while position > 0 && sorted[position - 1] > value {
                    sorted[position] = sorted[position - 1]
                    position -= 1
                }
                sorted[position] = value
                count += 1
            }
            let median = measured % 2 == 1
                ? sorted[measured / 2] : (sorted[measured / 2 - 1] + sorted[measured / 2]) / 2
            var agreeing = 0
            var index = 0
            while index < measured {
                if abs(measurements[index] - median) <= RoomAlignment.agreeFrames { agreeing += 1 }
                index += 1
            }
            if agreeing >= RoomAlignment.agreeing { lag = median }
        }
    }

    /// Sources measured, at most `capacity` (a microphone hears few voices loud enough to measure).
    static let capacity = 8
    private(set) var sources: [SourceLag]
    /// Sources in use, the first `count` of `sources`.
    private(set) var count = 0
    /// Frames the stream's evidence is held back now: 0…`maxLag`.
    var delay = 0
    /// Scratch of `RoomAlignment.stepDelays`: the largest wait its measurements ask of the stream, frames.
    var need: Float = 0

    init() { sources = [SourceLag](repeating: SourceLag(), count: Self.capacity) }

    /// Takes a measurement: this stream carries `source`'s voice `lag` frames after the source's stream.
    mutating func measured(lag: Float, of source: Talker, frame: Int) {
        var index = 0
        while index < count && sources[index].source !== source { index += 1 }
        if index == count {
            if count < Self.capacity {
                count += 1
            } else {
                // Forget the source measured least recently.
                index = 0
                var other = 1
                while other < count {
                    if sources[other].lastFrame < sources[index].lastFrame { index = other }
                    other += 1
                }
            }
            sources[index] = SourceLag(source: source)
        }
        sources[index].lastFrame = frame
        sources[index].add(lag)
    }

    /// Forgets `source` (it left the room).
    mutating func forget(_ source: Talker) {
        var index = 0
        while index < count {
            if sources[index].source === source {
                count -= 1
                sources[index] = sources[count]
                sources[count] = SourceLag()
            } else {
                index += 1
            }
        }
    }

    /// The confirmed entry at `index` (< `count`).
    func entry(_ index: Int) -> SourceLag { sources[index] }
}

/// Lines up a room's streams in time, pair by pair: measures, one stream at a time, how much later each
/// carries the voice of the room's current talker than that talker's own stream does (`LagEstimator`),
/// and holds back the evidence of a stream that carries a voice *before* the voice's own stream, so
/// that the leakage filter never judges a leaked copy before seeing its source.
///
/// A stream `i` carrying source `j`'s voice `L` frames after `j`'s own stream needs to wait
/// `leakLag − L` frames (`leakLag`: how late a leaked copy follows its source in aligned streams), and
/// `j` needs `L − leakLag` (the voice of `j`'s microphone's owner reaches `i` early by as much); a need
/// within `tolerance` is left alone (the leakage filter's look-back covers it, and measurements scatter
/// by about as much). Delays are not chained through other streams' delays, so noisy measurements
/// around a cycle of streams cannot push one another up. Delays move one frame per frame at most: a step repeats or
/// skips one frame of a stream's evidence. A stream that hears no one waits for nothing.
///
/// Real-time safe: `update` allocates nothing; one estimate every `interval` frames while someone talks.
/// - Complexity: O(members · `StreamAlignment.capacity`) per frame, plus one estimate.
final class RoomAlignment {
    let configuration: AlignmentConfiguration
    @exclusivity(unchecked) private var estimator: LagEstimator
    @exclusivity(unchecked) private var countdown = 0
    @exclusivity(unchecked) private var cursor = 0
    /// `configuration.leakLag` in frames.
    private let leakLag: Float
    /// `configuration.tolerance` in frames.
    private let tolerance: Float
    /// A source's lag is the median of its last measurements (`SourceLag.kept`, 7) once `agreeing` of them
    /// lie within `agreeFrames` of it (4 of 7 against 3 of 5: fewer spurious waits on aligned streams).
    static let agreeFrames: Float = 1.5
    static let agreeing = 4
    /// After a measurement that found no clear lag, the next comes this many intervals later.
    static let backoff = 4
    /// dB by which the source's envelope must be louder than its leaked copy's.
    static let sourceMargin: Float = 6

    /// Frames of evidence history each stream keeps for an alignment with `configuration`: the
    /// estimator's span (which also covers the longest delay), or 1 when alignment is off.
    static func historyFrames(for configuration: AlignmentConfiguration) -> Int {
        configuration.isEnabled ? configuration.windowFrames + 2 * configuration.maxLagFrames : 1
    }

    init(configuration: AlignmentConfiguration) {
        self.configuration = configuration
        leakLag = Float(configuration.leakLag / AnalysisFormat.hopDuration)
        tolerance = Float(configuration.tolerance / AnalysisFormat.hopDuration)
        estimator = LagEstimator(maxLag: configuration.maxLagFrames, window: configuration.windowFrames)
    }

    /// Once per frame, after every member was heard and before the decision reads their evidence:
    /// steps each member's delay toward what its measured sources need, and every `interval` frames
    /// measures one member against the room's loudest talker.
    /// - Parameter talkers: the room's members.
    func update(_ talkers: [Talker], frame: Int) {
        guard configuration.isEnabled, talkers.count > 1 else { return }
        stepDelays(talkers)
        countdown -= 1
        guard countdown <= 0 else { return }
        countdown = configuration.interval
        // The reference: the member talking loudest relative to its own voice.
        var reference = -1
        var position = 0
        while position < talkers.count {
            let talker = talkers[position]
            if talker.vad.speaking && (reference < 0 || talker.recentRelative > talkers[reference].recentRelative) {
                reference = position
            }
            position += 1
        }
        guard reference >= 0 else { return }
        cursor = cursor + 1 >= talkers.count ? 0 : cursor + 1
        if cursor == reference { cursor = cursor + 1 >= talkers.count ? 0 : cursor + 1 }
        let source = talkers[reference], other = talkers[cursor]
        let needed = estimator.historyFrames
        guard source.history.capacity >= needed, other.history.capacity >= needed,
            source.history.count >= needed, other.history.count >= needed
        else { return }
        guard
            let estimate = estimator.estimate(
                reference: source.history, other: other.history,
                minimumCorrelation: configuration.correlation, distinctness: configuration.distinctness)
        else {
            // Nothing clear (streams that do not hear each other, or talk at once): try again later, so
            // that a room of remote participants pays a quarter of the measuring.
            countdown = Self.backoff * configuration.interval
            return
        }
        // The louder of the two carries the voice as spoken; the other a leaked copy. Similar levels say
        // neither (two people, or one voice heard alike by two microphones): no measurement.
        if estimate.referenceLouder >= Self.sourceMargin {
            other.alignment.measured(lag: estimate.lag, of: source, frame: frame)
        } else if estimate.referenceLouder <= -Self.sourceMargin {
            source.alignment.measured(lag: -estimate.lag, of: other, frame: frame)
        }
    }

    /// A member leaves: nobody keeps measuring against it.
    func forget(_ leaving: Talker, in talkers: [Talker]) {
        var position = 0
        while position < talkers.count {
            talkers[position].alignment.forget(leaving)
            position += 1
        }
    }

    /// Moves each member's delay one frame toward the largest need its measurements show. Stream `i`
    /// carrying source `j`'s voice `L` frames after `j`'s own stream needs to wait `leakLag − L` for `j`;
    /// and `j`, measured by the same `L`, needs `L − leakLag` for `i` (a voice leaks both ways, each copy
    /// `leakLag` late in aligned streams), so one measurement of a pair serves both directions.
    private func stepDelays(_ talkers: [Talker]) {
        var position = 0
        while position < talkers.count {
            talkers[position].alignment.need = 0
            position += 1
        }
        position = 0
        while position < talkers.count {
            let talker = talkers[position]
            position += 1
            var index = 0
            while index < talker.alignment.count {
                let entry = talker.alignment.entry(index)
                index += 1
                guard let lag = entry.lag, let source = entry.source else { continue }
                let need = leakLag - lag
                if need > tolerance { talker.alignment.need = max(talker.alignment.need, need) }
                if -need > tolerance { source.alignment.need = max(source.alignment.need, -need) }
            }
        }
        let maxLag = Float(configuration.maxLagFrames)
        position = 0
        while position < talkers.count {
            let talker = talkers[position]
            position += 1
            let target = min(talker.alignment.need, maxLag)
            let delay = Float(talker.alignment.delay)
            if target > delay + 0.75 {
                talker.alignment.delay += 1
            } else if target < delay - 0.75 {
                talker.alignment.delay -= 1
            }
        }
    }
}

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

        /// Adds a measurement and updates `lag`. Returns whether `lag` changed.
        @discardableResult
        mutating func add(_ value: Float) -> Bool {
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
            guard agreeing >= RoomAlignment.agreeing, lag != median else { return false }
            lag = median
            return true
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
    /// Scratch of `RoomAlignment.place`: how late the stream carries the room's sounds against the
    /// first stream of its group, frames, and the group (streams linked by measured lags; −1: none).
    var offset: Float = 0
    var group = -1

    init() { sources = [SourceLag](repeating: SourceLag(), count: Self.capacity) }

    /// Takes a measurement: this stream carries `source`'s voice `lag` frames after the source's stream.
    /// Returns whether a confirmed lag changed.
    @discardableResult
    mutating func measured(lag: Float, of source: Talker, frame: Int) -> Bool {
        var index = 0
        var evicted = false
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
                evicted = sources[index].lag != nil
            }
            sources[index] = SourceLag(source: source)
        }
        sources[index].lastFrame = frame
        return sources[index].add(lag) || evicted
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

/// Lines up a room's streams in time: measures, one stream at a time, how much later each carries the
/// voice of the room's current talker than that talker's own stream does (`LagEstimator`: the lag its
/// energy envelope proposes, confirmed and placed by its spectral shapes), and holds back the evidence of
/// the streams that carry the room's voices early, so that the leakage filter never judges a leaked copy
/// before seeing its source.
///
/// A stream `i` carrying source `j`'s voice `L` frames after `j`'s own stream is `L − leakLag` frames
/// later than `j` (`leakLag`: how late a leaked copy follows its source in aligned streams). Streams
/// linked by such lags are placed on one time line along a chain of them, and each waits for the latest
/// of its group (`configuration.chained`; otherwise each pair's lag sets a wait for that pair alone); a
/// need within `tolerance` is left alone (the leakage filter's look-back covers it, and measurements
/// scatter by about as much). A lag that closes a cycle is not used, so noisy measurements around a cycle
/// of streams cannot push one another up. Delays move one frame per frame at most: a step repeats or
/// skips one frame of a stream's evidence. A stream that hears no one waits for nothing.
///
/// Real-time safe: `update` allocates nothing; one estimate every `interval` frames while someone talks.
/// - Complexity: O(members · `StreamAlignment.capacity`) per frame, plus one estimate (and its shape
///   check when the envelope proposes a lag); O(members² · `StreamAlignment.capacity`) when a lag changes.
final class RoomAlignment {
    let configuration: AlignmentConfiguration
    @exclusivity(unchecked) private var estimator: LagEstimator
    @exclusivity(unchecked) private var countdown = 0
    @exclusivity(unchecked) private var cursor = 0
    /// Whether a confirmed lag changed since the members were last placed (`place`).
    @exclusivity(unchecked) private var placementStale = false
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
        // The next member after the last one measured that is not the reference and sounded within the
        // compared span: a muted or silent member (a listener) has no lag to find, and measuring it would
        // only slow the others' measurements down.
        let needed = estimator.historyFrames
        var step = 0
        repeat {
            cursor = cursor + 1 >= talkers.count ? 0 : cursor + 1
            step += 1
        } while step < talkers.count && (cursor == reference || !talkers[cursor].history.sounded(withinLast: needed))
        guard cursor != reference, talkers[cursor].history.sounded(withinLast: needed) else { return }
        let source = talkers[reference], other = talkers[cursor]
        guard source.history.capacity >= needed, other.history.capacity >= needed,
            source.history.count >= needed, other.history.count >= needed
        else { return }
        guard
            let estimate = estimator.estimate(
                reference: source.history, other: other.history,
                minimumCorrelation: configuration.correlation, distinctness: configuration.distinctness),
            let lag = confirmed(estimate, source: source, other: other)
        else {
            // Nothing clear (streams that do not hear each other, or talk at once): try again later, so
            // that a room of remote participants pays a quarter of the measuring.
            countdown = Self.backoff * configuration.interval
            return
        }
        // The louder of the two carries the voice as spoken; the other a leaked copy. Similar levels say
        // neither (two people, or one voice heard alike by two microphones): no measurement.
        if estimate.referenceLouder >= Self.sourceMargin {
            if other.alignment.measured(lag: lag, of: source, frame: frame) { placementStale = true }
        } else if estimate.referenceLouder <= -Self.sourceMargin {
            if source.alignment.measured(lag: -lag, of: other, frame: frame) { placementStale = true }
        }
    }

    /// The lag of a candidate, once the spectral shapes confirm it: the shape correlation peaks within
    /// `shapeSearch` frames of the envelope's lag at `shape` or more, and exceeds its best at least 50 ms
    /// away by `shapeDistinctness`. The lag is the envelope's where the shape peak lies on its frame;
    /// else the shape peak's (shapes change faster than envelopes and place it more precisely), between
    /// frames by a parabola. Without the shape check (`shape` above 1): the envelope's lag if
    /// its correlation reached `correlation`.
    /// - Complexity: up to 2·`shapeSearch` + 1 + `maxLag` shape correlations of `window` frames.
    private func confirmed(_ estimate: LagEstimator.Estimate, source: Talker, other: Talker) -> Float? {
        guard configuration.shape <= 1 else { return estimate.lag }
        let maxLag = configuration.maxLagFrames
        let proposed = Int(estimate.lag.rounded())
        estimator.prepareShapes(reference: source.history, other: other.history)
        var lag = proposed
        var peak: Float = -2
        // The shape correlations around the proposed lag (−2 where not measured), for the peak's parabola.
        var around = SIMD8<Float>(repeating: -2)
        var candidate = max(-maxLag, proposed - Self.shapeSearch)
        while candidate <= min(maxLag, proposed + Self.shapeSearch) {
            if let value = estimator.shapeCorrelation(lag: candidate, gate: Self.shapeGate) {
                around[candidate - proposed + Self.shapeSearch] = value
                if value > peak {
                    peak = value
                    lag = candidate
                }
            }
            candidate += 1
        }
        guard peak >= configuration.shape else { return nil }
        // The best elsewhere, every second lag (a shape correlation peak is a few frames wide).
        var elsewhere: Float = -1
        candidate = -maxLag
        while candidate <= maxLag {
            if abs(candidate - lag) >= LagEstimator.distinctSpan,
                let value = estimator.shapeCorrelation(lag: candidate, gate: Self.shapeGate)
            {
                elsewhere = max(elsewhere, value)
                if peak - elsewhere < configuration.shapeDistinctness { return nil }
            }
            candidate += 2
        }
        // The envelope's sub-frame lag where the shapes agree with its frame; else the shapes' frame,
        // placed between frames by a parabola through the peak and its neighbours (a whole frame's
        // error would move a wait across the tolerance).
        if lag == proposed { return estimate.lag }
        let index = lag - proposed + Self.shapeSearch
        guard index > 0, index < 2 * Self.shapeSearch, around[index - 1] > -2, around[index + 1] > -2 else { return Float(lag) }
        return Float(lag) + LagEstimator.parabolicOffset(left: around[index - 1], peak: peak, right: around[index + 1])
    }

    /// dB below a stream's loudest frame of the window that its frames must reach to count in a shape
    /// correlation.
    static let shapeGate: Float = 30
    /// Frames either side of the envelope's lag where the shape correlation looks for its peak.
    static let shapeSearch = 2

    /// A member leaves: nobody keeps measuring against it.
    func forget(_ leaving: Talker, in talkers: [Talker]) {
        var position = 0
        while position < talkers.count {
            talkers[position].alignment.forget(leaving)
            position += 1
        }
        placementStale = true
    }

    /// Moves each member's delay one frame toward its need: its wait for its group's latest member
    /// (`place`, chained, recomputed when a confirmed lag changed) or the largest its own pairs ask
    /// (`pairNeeds`).
    private func stepDelays(_ talkers: [Talker]) {
        if configuration.chained {
            if placementStale {
                place(talkers)
                placementStale = false
            }
        } else {
            pairNeeds(talkers)
        }
        let maxLag = Float(configuration.maxLagFrames)
        var position = 0
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

    /// Sets each member's `need` from its place in time: members linked by confirmed lags form a group,
    /// each placed by the lags along a chain from the group's first (`offset`: a stream carrying source
    /// `j`'s voice `L` frames after `j`'s own stream is `L − leakLag` later than `j`); each waits for its
    /// group's latest member. A chain, not every pair: a lag that closes a cycle is not used, so noisy
    /// measurements around a cycle cannot push one another up. A need within `tolerance` is none.
    /// - Complexity: O(members² · `StreamAlignment.capacity`) at worst, only after a confirmed lag changed.
    private func place(_ talkers: [Talker]) {
        var position = 0
        while position < talkers.count {
            talkers[position].alignment.group = -1
            talkers[position].alignment.offset = 0
            talkers[position].alignment.need = 0
            position += 1
        }
        var groups = 0
        var seed = 0
        while seed < talkers.count {
            let first = talkers[seed]
            seed += 1
            guard first.alignment.group < 0, Self.hasConfirmedLag(first) else { continue }
            first.alignment.group = groups
            // Relax the group's links until no member is added: each pass places every stream linked
            // to a placed one, in either direction.
            var added = true
            while added {
                added = false
                Self.forEachConfirmedLag(talkers) { talker, source, lag in
                    let later = lag - leakLag
                    if talker.alignment.group == groups && source.alignment.group < 0 {
                        source.alignment.group = groups
                        source.alignment.offset = talker.alignment.offset - later
                        added = true
                    } else if source.alignment.group == groups && talker.alignment.group < 0 {
                        talker.alignment.group = groups
                        talker.alignment.offset = source.alignment.offset + later
                        added = true
                    }
                }
            }
            var latest: Float = -.infinity
            position = 0
            while position < talkers.count {
                if talkers[position].alignment.group == groups { latest = max(latest, talkers[position].alignment.offset) }
                position += 1
            }
            position = 0
            while position < talkers.count {
                let talker = talkers[position]
                position += 1
                if talker.alignment.group == groups {
                    let need = latest - talker.alignment.offset
                    talker.alignment.need = need > tolerance ? need : 0
                }
            }
            groups += 1
        }
    }

    /// Calls `body` with each member, a source it carries and its confirmed lag of that source.
    @inline(__always)
    private static func forEachConfirmedLag(_ talkers: [Talker], _ body: (Talker, Talker, Float) -> Void) {
        var position = 0
        while position < talkers.count {
            let talker = talkers[position]
            position += 1
            var index = 0
            while index < talker.alignment.count {
                let entry = talker.alignment.entry(index)
                index += 1
                if let lag = entry.lag, let source = entry.source { body(talker, source, lag) }
            }
        }
    }

    /// Whether the talker's stream has a confirmed lag of some source.
    private static func hasConfirmedLag(_ talker: Talker) -> Bool {
        var index = 0
        while index < talker.alignment.count {
            if talker.alignment.entry(index).lag != nil { return true }
            index += 1
        }
        return false
    }

    /// Sets each member's `need` pair by pair (not chained): the largest wait any one of its measured
    /// lags asks. Stream `i` carrying source `j`'s voice `L` frames after `j`'s own stream needs to wait
    /// `leakLag − L` for `j`; and `j`, measured by the same `L`, needs `L − leakLag` for `i` (a voice leaks
    /// both ways, each copy `leakLag` late in aligned streams), so one measurement serves both directions.
    private func pairNeeds(_ talkers: [Talker]) {
        var position = 0
        while position < talkers.count {
            talkers[position].alignment.need = 0
            position += 1
        }
        Self.forEachConfirmedLag(talkers) { talker, source, lag in
            let need = leakLag - lag
            if need > tolerance { talker.alignment.need = max(talker.alignment.need, need) }
            if -need > tolerance { source.alignment.need = max(source.alignment.need, -need) }
        }
    }
}

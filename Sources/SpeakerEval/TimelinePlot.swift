import Foundation

/// One meeting drawn as a self-contained SVG timeline, so a person can see where a system went wrong.
///
/// From the top: a title with each system's headline figures, a legend, the time axis, then per
/// stream its reference speech lane and one lane per system's voice activity (systems with identical
/// activity share a lane), then the floor: the reference holder lane and one lane per system, each
/// with a thin strip beneath marking the scored frames where the system named the wrong holder.
/// In speech lanes, frames are coloured by outcome: correct speech in the stream's colour, false
/// alarms in red (dark red where another participant was speaking: a leaked voice), misses in pink.
/// Times outside the scored regions are shaded. Every bar has a tooltip with its times.
public struct TimelinePlot {
    /// One system to draw.
    public struct System {
        /// The lane label.
        public var name: String
        /// Its speech segments and, if any, its floor decisions.
        public var output: SystemOutput

        public init(name: String, output: SystemOutput) {
            self.name = name
            self.output = output
        }
    }

    /// The title.
    public var meeting: String
    /// Seconds drawn, from 0.
    public var duration: Double
    /// The streams, top to bottom.
    public var streams: [String]
    public var reference: MeetingReference
    /// The systems, one lane each (systems with identical speech share a speech lane).
    public var systems: [System]
    /// Scored regions, or nil when everything is scored.
    public var regions: ScoredRegions?
    /// One line per system under the title (e.g. its F1 and floor accuracy), or empty.
    public var captions: [String]

    public init(
        meeting: String, duration: Double, streams: [String], reference: MeetingReference, systems: [System],
        regions: ScoredRegions? = nil, captions: [String] = []
    ) {
        self.meeting = meeting
        self.duration = duration
        self.streams = streams
        self.reference = reference
        self.systems = systems
        self.regions = regions
        self.captions = captions
    }

    // Layout, in SVG user units (pixels).
    private let labelWidth = 190.0
    private let laneHeight = 14.0
    private let laneGap = 3.0
    private let groupGap = 12.0
    private let margin = 16.0
    private let errorStrip = 4.0
    private static let palette = [
        "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
    ]
    private static let falseAlarmColour = "#e41a1c"
    private static let leakColour = "#8b0000"
    private static let missColour = "#f7b6c2"

    /// Pixels per second: wide enough to see 10 ms decisions on short meetings, bounded for long ones.
    private var scale: Double { min(max(1200 / max(duration, 1), 12), 60) }
    private var plotWidth: Double { duration * scale }
    private var frameCount: Int { Int((duration / FrameScoring.frameDuration).rounded()) }

    /// The SVG document.
    /// - Complexity: O(streams · systems · frames).
    public func svg() -> String {
        var body = ""
        var y = margin
        // Title and captions.
        body += text(margin, y + 14, "\(meeting) — \(formatSeconds(duration)) s, \(streams.count) "
            + (streams.count == 1 ? "stream" : "streams"), size: 16, weight: "bold")
        y += 22
        for caption in captions {
            body += text(margin, y + 12, caption, size: 12, family: "monospace")
            y += 16
        }
        y += 4
        body += legend(atY: y)
        y += 22
        let plotTop = y
        body += axis(atY: y)
        y += 22

        // Speech lanes.
        let activity = vadLanes()
        for (streamIndex, stream) in streams.enumerated() {
            let colour = Self.palette[streamIndex % Self.palette.count]
            body += text(margin, y + 11, stream, size: 12, weight: "bold")
            y += 15
            let ownReference = reference.speech.filter { $0.speaker == stream }
            body += laneLabel("reference", y)
            body += runs(FrameScoring.activity(ownReference, frameCount: frameCount).map { $0 ? colour : nil }, y,
                laneHeight, what: "\(stream) speaks")
            y += laneHeight + laneGap
            for lane in activity {
                body += laneLabel(lane.label, y)
                body += runs(outcomes(stream: stream, system: lane.speech, colour: colour), y, laneHeight,
                    what: "\(stream), \(lane.label)")
                y += laneHeight + laneGap
            }
            y += groupGap - laneGap
        }

        // Floor lanes.
        if let floorReference = reference.floor {
            body += text(margin, y + 11, "floor (dominant speaker)", size: 12, weight: "bold")
            y += 15
            let truth = holders(FloorScoring.decisions(from: floorReference))
            body += laneLabel("reference", y)
            body += runs(truth.map(colour(of:)), y, laneHeight, what: "floor", holders: truth)
            y += laneHeight + laneGap
            let unscored = floorCollar(truth)
            for system in systems {
                guard let decisions = system.output.floor else { continue }
                let named = holders(decisions)
                body += laneLabel(system.name, y)
                body += runs(named.map(colour(of:)), y, laneHeight, what: "floor, \(system.name)", holders: named)
                y += laneHeight
                let errors = (0..<frameCount).map { i -> String? in
                    unscored[i] ? "#d9d9d9" : (named[i] != truth[i] ? Self.falseAlarmColour : nil)
                }
                body += runs(errors, y + 1, errorStrip, what: "wrong holder")
                y += errorStrip + 2 + laneGap
            }
        }
        let plotBottom = y
        body += shading(top: plotTop, bottom: plotBottom)
        body += axis(atY: y + 2)
        y += 24 + margin

        let width = labelWidth + plotWidth + 2 * margin
        var svg = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(number(width))\" height=\"\(number(y))\" "
        svg += "viewBox=\"0 0 \(number(width)) \(number(y))\" font-family=\"sans-serif\">\n"
        svg += "<title>\(escape(meeting)): speech and floor timeline</title>\n"
        svg += "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
        svg += body
        svg += "</svg>\n"
        return svg
    }

    // MARK: Lanes

    /// The distinct voice-activity outputs: systems with identical speech share one lane.
    private func vadLanes() -> [(label: String, speech: [Segment])] {
        var lanes: [(names: [String], speech: [Segment])] = []
        for system in systems {
            let speech = system.output.speech.sorted { ($0.start, $0.speaker) < ($1.start, $1.speaker) }
            if let index = lanes.firstIndex(where: { $0.speech == speech }) {
                lanes[index].names.append(system.name)
            } else {
                lanes.append(([system.name], speech))
            }
        }
        return lanes.map { (label: $0.names.count > 2 ? "\($0.names[0]) (+\($0.names.count - 1))" : $0.names.joined(separator: " = "), $0.speech) }
    }

    /// Per frame of a stream's system lane: its colour by outcome, or nil for a correct silence.
    private func outcomes(stream: String, system: [Segment], colour: String) -> [String?] {
        let own = FrameScoring.activity(reference.speech.filter { $0.speaker == stream }, frameCount: frameCount)
        let others = FrameScoring.activity(reference.speech.filter { $0.speaker != stream }, frameCount: frameCount)
        let decided = FrameScoring.activity(system.filter { $0.speaker == stream }, frameCount: frameCount)
        return (0..<frameCount).map { i in
            switch (own[i], decided[i]) {
            case (true, true): colour
            case (false, true): others[i] ? Self.leakColour : Self.falseAlarmColour
            case (true, false): Self.missColour
            case (false, false): nil
            }
        }
    }

    /// The holder at each frame's centre after the given changes.
    private func holders(_ decisions: [(time: Double, holder: String?)]) -> [String?] {
        var result = [String?](repeating: nil, count: frameCount)
        var next = 0
        var holder: String? = nil
        for i in 0..<frameCount {
            let centre = (Double(i) + 0.5) * FrameScoring.frameDuration
            while next < decisions.count && decisions[next].time <= centre {
                holder = decisions[next].holder
                next += 1
            }
            result[i] = holder
        }
        return result
    }

    /// Frames within the floor scoring collar of a reference change (not scored).
    private func floorCollar(_ truth: [String?]) -> [Bool] {
        var excluded = [Bool](repeating: false, count: frameCount)
        let collar = Int((FloorScoring.collar / FrameScoring.frameDuration).rounded())
        for i in 0..<frameCount where i > 0 ? truth[i] != truth[i - 1] : truth[0] != nil {
            for j in max(0, i - collar)..<min(frameCount, i + collar) { excluded[j] = true }
        }
        return excluded
    }

    private func colour(of holder: String?) -> String? {
        guard let holder, let index = streams.firstIndex(of: holder) else { return nil }
        return Self.palette[index % Self.palette.count]
    }

    // MARK: Drawing

    /// Rectangles for runs of equal non-nil colours, with tooltips.
    private func runs(
        _ colours: [String?], _ y: Double, _ height: Double, what: String, holders: [String?]? = nil
    ) -> String {
        var svg = ""
        var start = 0
        while start < colours.count {
            var end = start + 1
            while end < colours.count && colours[end] == colours[start] && holders?[end] == holders?[start] { end += 1 }
            if let colour = colours[start] {
                let from = Double(start) * FrameScoring.frameDuration
                let to = Double(end) * FrameScoring.frameDuration
                let label = holders?[start].map { "\(what): \($0)" } ?? what
                svg += "<rect x=\"\(number(x(from)))\" y=\"\(number(y))\" width=\"\(number(max(0.5, (to - from) * scale)))\" "
                svg += "height=\"\(number(height))\" fill=\"\(colour)\"><title>\(escape(label)) "
                svg += "\(formatSeconds(from))–\(formatSeconds(to)) s</title></rect>\n"
            }
            start = end
        }
        return svg
    }

    private func laneLabel(_ label: String, _ y: Double) -> String {
        var svg = "<rect x=\"\(number(x(0)))\" y=\"\(number(y))\" width=\"\(number(plotWidth))\" height=\"\(number(laneHeight))\" fill=\"#f3f3f3\"/>\n"
        svg += text(labelWidth + margin - 6, y + 11, label, size: 11, anchor: "end")
        return svg
    }

    private func legend(atY y: Double) -> String {
        let items: [(String, String)] = [
            ("#1f77b4", "speech (reference, or correct)"), (Self.falseAlarmColour, "false alarm"),
            (Self.leakColour, "false alarm on a leaked voice"), (Self.missColour, "missed speech"),
            ("#d9d9d9", "floor: not scored (±0.5 s)"), (Self.falseAlarmColour, "floor: wrong holder (strip)"),
        ]
        var svg = ""
        var x = margin
        for (colour, label) in items {
            svg += "<rect x=\"\(number(x))\" y=\"\(number(y + 3))\" width=\"12\" height=\"12\" fill=\"\(colour)\"/>\n"
            svg += text(x + 16, y + 13, label, size: 11)
            x += 28 + Double(label.count) * 6
        }
        return svg
    }

    private func axis(atY y: Double) -> String {
        // A labelled tick every `major` seconds, at least 60 px apart; minor ticks every second.
        let major = [1.0, 2, 5, 10, 15, 30, 60, 120, 300, 600].first { $0 * scale >= 60 } ?? 600
        var svg = "<line x1=\"\(number(x(0)))\" y1=\"\(number(y + 16))\" x2=\"\(number(x(duration)))\" y2=\"\(number(y + 16))\" stroke=\"#555\"/>\n"
        var second = 0.0
        while second <= duration + 1e-9 {
            let isMajor = (second / major).rounded() * major == second
            let length = isMajor ? 6.0 : 3.0
            svg += "<line x1=\"\(number(x(second)))\" y1=\"\(number(y + 16 - length))\" x2=\"\(number(x(second)))\" y2=\"\(number(y + 16))\" stroke=\"#555\"/>\n"
            if isMajor { svg += text(x(second), y + 8, "\(formatSeconds(second)) s", size: 10, anchor: "middle") }
            second += 1
        }
        return svg
    }

    /// Shades the time outside the scored regions.
    private func shading(top: Double, bottom: Double) -> String {
        guard let regions else { return "" }
        let scored = regions.mask(frameCount: frameCount)
        return runs(scored.map { $0 ? nil : "#00000022" }, top, bottom - top, what: "not scored")
    }

    private func x(_ seconds: Double) -> Double { margin + labelWidth + seconds * scale }

    private func text(
        _ x: Double, _ y: Double, _ content: String, size: Int, weight: String = "normal", anchor: String = "start",
        family: String? = nil
    ) -> String {
        var svg = "<text x=\"\(number(x))\" y=\"\(number(y))\" font-size=\"\(size)\" font-weight=\"\(weight)\" "
        svg += "text-anchor=\"\(anchor)\""
        if let family { svg += " font-family=\"\(family)\" xml:space=\"preserve\"" }
        return svg + ">\(escape(content))</text>\n"
    }

    private func number(_ value: Double) -> String { String(format: "%.1f", value) }
    private func formatSeconds(_ value: Double) -> String { String(format: "%.2f", value) }

    private func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            default: escaped.append(character)
            }
        }
        return escaped
    }
}

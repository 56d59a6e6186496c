import Foundation
import SpeakerEval
import Testing

/// The standard output of `activespeaker detect`, parsed and checked line by line against the schema.
struct DetectOutput {
    enum Event: Equatable {
        case speech(t: Double, stream: String, active: Bool, since: Double)
        case dominant(t: Double, stream: String?)
        case levels(t: Double, levels: [String: Double])

        var t: Double {
            switch self {
            case .speech(let t, _, _, _), .dominant(let t, _), .levels(let t, _): t
            }
        }
    }

    struct StreamSummary: Equatable {
        var speech: Double
        var utterances: Int
        var dominant: Double
        var turns: Int
    }

    struct Summary: Equatable {
        var duration: Double
        /// In output order.
        var streams: [(id: String, statistics: StreamSummary)]
        var dominantChanges: Int

        static func == (a: Summary, b: Summary) -> Bool {
            a.duration == b.duration && a.dominantChanges == b.dominantChanges
                && a.streams.map(\.id) == b.streams.map(\.id) && a.streams.map(\.statistics) == b.streams.map(\.statistics)
        }
    }

    /// Events in output order (levels included).
    var events: [Event] = []
    /// The summary line, if there was one (it must be the last line).
    var summary: Summary?

    var speechEvents: [Event] { events.filter { if case .speech = $0 { true } else { false } } }
    var dominantEvents: [Event] { events.filter { if case .dominant = $0 { true } else { false } } }
    var levelEvents: [Event] { events.filter { if case .levels = $0 { true } else { false } } }

    // The exact text of each line type: key order, 3-decimal times, 1-decimal levels.
    private static let string = #""(?:[^"\\\u0000-\u001F]|\\["\\/bfnrt]|\\u[0-9a-f]{4})*""#
    private static let time = #"-?\d+\.\d{3}"#
    private static let patterns: [String: NSRegularExpression] = [
        "speech": #"^\{"t":TIME,"type":"speech","stream":STRING,"active":(true|false),"since":TIME\}$"#,
        "dominant": #"^\{"t":TIME,"type":"dominant","stream":(STRING|null)\}$"#,
        "levels": #"^\{"t":TIME,"type":"levels","levels":\{(STRING:-?\d+\.\d(,STRING:-?\d+\.\d)*)?\}\}$"#,
        "summary": #"^\{"type":"summary","duration":TIME,"streams":\{(STRING:\{"speech":TIME,"utterances":\d+,"dominant":TIME,"turns":\d+\}(,STRING:\{"speech":TIME,"utterances":\d+,"dominant":TIME,"turns":\d+\})*)?\},"dominantChanges":\d+\}$"#,
    ].mapValues { pattern in
        try! NSRegularExpression(
            pattern: pattern.replacingOccurrences(of: "TIME", with: time).replacingOccurrences(of: "STRING", with: string))
    }

    /// Parses every line; throws (failing the test) at the first line that breaks the schema.
    init(lines: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (number, line) in lines.enumerated() {
            let object = try #require(
                try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                "line \(number + 1) is not a JSON object: \(line)", sourceLocation: sourceLocation)
            let type = try #require(object["type"] as? String, "line \(number + 1) has no type", sourceLocation: sourceLocation)
            let pattern = try #require(Self.patterns[type], "unknown type \(type)", sourceLocation: sourceLocation)
            let range = NSRange(line.startIndex..., in: line)
            try #require(
                pattern.firstMatch(in: line, range: range) != nil,
                "line \(number + 1) does not follow the \(type) schema: \(line)", sourceLocation: sourceLocation)
            try #require(summary == nil, "a line after the summary: \(line)", sourceLocation: sourceLocation)
            let t = object["t"] as? Double ?? 0
            switch type {
            case "speech":
                events.append(
                    .speech(
                        t: t, stream: object["stream"] as! String, active: object["active"] as! Bool,
                        since: object["since"] as! Double))
            case "dominant":
                events.append(.dominant(t: t, stream: object["stream"] as? String))
            case "levels":
                events.append(.levels(t: t, levels: (object["levels"] as! [String: Any]).mapValues { $0 as! Double }))
            default:
                let streams = object["streams"] as! [String: [String: Any]]
                // JSON objects are unordered once parsed; take the order from the text.
                let order = Self.memberOrder(of: line, keys: Set(streams.keys))
                summary = Summary(
                    duration: object["duration"] as! Double,
                    streams: order.map { id in
                        let entry = streams[id]!
                        return (
                            id,
                            StreamSummary(
                                speech: entry["speech"] as! Double, utterances: entry["utterances"] as! Int,
                                dominant: entry["dominant"] as! Double, turns: entry["turns"] as! Int)
                        )
                    },
                    dominantChanges: object["dominantChanges"] as! Int)
            }
        }
    }

    /// The keys as they appear in the text, for keys without escapes.
    private static func memberOrder(of line: String, keys: Set<String>) -> [String] {
        keys.sorted { a, b in
            (line.range(of: "\"\(a)\":{")?.lowerBound ?? line.endIndex) < (line.range(of: "\"\(b)\":{")?.lowerBound ?? line.endIndex)
        }
    }

    /// The dominant speaker after the events up to `time`: nil for nobody.
    func dominant(at time: Double) -> String? {
        var holder: String?
        for case .dominant(let t, let stream) in events where t <= time { holder = stream }
        return holder
    }

    /// Speech segments per the events: from the `since` of each start to the `since` of its end.
    var speechSegments: [Segment] {
        var open: [String: Double] = [:]
        var segments: [Segment] = []
        for case .speech(_, let stream, let active, let since) in events {
            if active {
                open[stream] = since
            } else if let start = open.removeValue(forKey: stream) {
                segments.append(Segment(speaker: stream, start: start, duration: since - start))
            }
        }
        return segments
    }

    /// Checks what must hold for any run over streams `ids`:
    /// `t` never decreases; speech starts and ends alternate per stream, starting with a start and ending
    /// with an end; `since` ≤ `t`; every stream named is one of `ids` (a dominant may be null).
    func checkInvariants(ids: Set<String>, sourceLocation: SourceLocation = #_sourceLocation) {
        var lastT = -Double.infinity
        var speaking: [String: Double] = [:]
        for event in events {
            #expect(event.t >= lastT, "t went back: \(event)", sourceLocation: sourceLocation)
            lastT = event.t
            switch event {
            case .speech(let t, let stream, let active, let since):
                #expect(ids.contains(stream), "unknown stream \(stream)", sourceLocation: sourceLocation)
                #expect(since <= t + 1e-9, "since after t: \(event)", sourceLocation: sourceLocation)
                if active {
                    #expect(speaking[stream] == nil, "\(stream) started twice", sourceLocation: sourceLocation)
                    speaking[stream] = since
                } else {
                    let start = speaking.removeValue(forKey: stream)
                    #expect(start != nil, "\(stream) ended without a start", sourceLocation: sourceLocation)
                    #expect((start ?? 0) < since, "\(stream) ended before it started", sourceLocation: sourceLocation)
                }
            case .dominant(_, let stream):
                if let stream { #expect(ids.contains(stream), "unknown dominant \(stream)", sourceLocation: sourceLocation) }
            case .levels(_, let levels):
                #expect(Set(levels.keys).isSubset(of: ids), "unknown stream in \(event)", sourceLocation: sourceLocation)
                for level in levels.values {
                    #expect((-127...0).contains(level), "level out of range in \(event)", sourceLocation: sourceLocation)
                }
            }
        }
        #expect(speaking.isEmpty, "utterances without an end: \(speaking.keys.sorted())", sourceLocation: sourceLocation)
    }
}

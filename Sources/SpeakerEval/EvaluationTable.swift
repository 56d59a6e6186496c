import Foundation

/// The results of an evaluation as plain-text tables for a terminal: voice activity per meeting and
/// pooled, then the floor. Systems whose voice activity is identical on every stream of every
/// meeting (the engine under different floor policies) share one row.
public struct EvaluationTable {
    /// The systems, in the order their rows appear.
    public var systems: [String]
    /// Per meeting, one score per system.
    public var scores: [[MeetingScore]]
    /// Adds a row per stream under each meeting's rows.
    public var perStream: Bool

    /// Tables of `scores`: per meeting, one score per system of `systems`.
    public init(systems: [String], scores: [[MeetingScore]], perStream: Bool = false) {
        self.systems = systems
        self.scores = scores
        self.perStream = perStream
    }

    /// Both tables and their notes.
    public var text: String {
        var text = vadTable()
        if let floor = floorTable() { text += "\n" + floor }
        return text
    }

    // MARK: Voice activity

    /// Groups of systems with identical voice activity, in the order of `systems`.
    private var vadGroups: [[String]] {
        var groups: [[String]] = []
        for system in systems {
            let mine = scores.map { $0.first { $0.system == system }.map(Self.vadKey) }
            if let index = groups.firstIndex(where: { group in
                scores.map { $0.first { $0.system == group[0] }.map(Self.vadKey) } == mine
            }) {
                groups[index].append(system)
            } else {
                groups.append([system])
            }
        }
        return groups
    }

    private static func vadKey(_ score: MeetingScore) -> [VADScore] { score.streams.flatMap(\.vad) }

    private static func label(_ group: [String]) -> String {
        group.count == 1 ? group[0] : "\(group[0]) (+\(group.count - 1))"
    }

    private func vadTable() -> String {
        var rows: [[String]] = [
            ["meeting", "system", "P", "R", "F1", "miss", "FA", "BA", "DCF", "F1", "BA", "DCF", "leak FA"]
        ]
        func cells(_ name: String, _ system: String, _ vad: [VADScore]) -> [String] {
            let zero = vad[0].counts
            let collar = vad[1].counts
            return [
                name, system, Self.fraction(zero.precision), Self.fraction(zero.recall), Self.fraction(zero.f1),
                Self.fraction(zero.missRate), Self.fraction(zero.falseAlarmRate), Self.fraction(zero.balancedAccuracy),
                Self.fraction(zero.detectionCost), Self.fraction(collar.f1), Self.fraction(collar.balancedAccuracy),
                Self.fraction(collar.detectionCost), vad[0].leaked.falseAlarmRate.map(Self.percent) ?? "-",
            ]
        }
        let groups = vadGroups
        var separators: [Int] = []
        for perSystem in scores {
            for group in groups {
                guard let score = perSystem.first(where: { $0.system == group[0] }) else { continue }
                rows.append(cells(score.meeting, Self.label(group), score.vad))
                if perStream {
                    for stream in score.streams { rows.append(cells("  " + stream.stream, "", stream.vad)) }
                }
            }
        }
        separators.append(rows.count)
        for group in groups {
            let pooled = PooledScore(system: group[0], scores: scores.flatMap { $0.filter { $0.system == group[0] } })
            rows.append(cells("pooled", Self.label(group), pooled.vad))
        }
        var text = "Voice activity per stream, against each participant's own speech (10 ms frames)\n"
        let widths = Self.widths(rows)
        let zeroStart = widths[0] + widths[1] + 4
        let zeroWidth = widths[2...8].reduce(0, +) + 2 * 6
        let collarWidth = widths[9...11].reduce(0, +) + 2 * 2
        text += String(repeating: " ", count: zeroStart)
            + Self.centred("collar 0", zeroWidth) + "  " + Self.centred("collar ±0.25 s", collarWidth) + "\n"
        text += Self.render(rows, widths: widths, separatorsBefore: separators)
        for group in groups where group.count > 1 {
            text += "\(Self.label(group)): \(group.joined(separator: ", ")) have identical voice activity.\n"
        }
        return text
    }

    // MARK: Floor

    private func floorTable() -> String? {
        let floorSystems = systems.filter { system in scores.contains { $0.contains { $0.system == system && $0.floor != nil } } }
        guard !floorSystems.isEmpty else { return nil }
        var rows: [[String]] = [["meeting", "system", "accuracy", "nobody", "median", "p90", "missed", "false/min", "switches/min"]]
        func cells(_ name: String, _ system: String, _ floor: FloorScore) -> [String] {
            [
                name, system, Self.percent(floor.accuracy),
                floor.nobodySeconds > 0 ? Self.percent(floor.nobodyAccuracy) : "-",
                Self.seconds(floor.medianLatency), Self.seconds(floor.p90Latency),
                "\(floor.missedChanges)/\(floor.latencies.count)",
                String(format: "%.2f", floor.falseSwitchesPerMinute), String(format: "%.1f", floor.switchesPerMinute),
            ]
        }
        var unscored: [String] = []
        for perSystem in scores {
            var any = false
            for system in floorSystems {
                guard let score = perSystem.first(where: { $0.system == system }), let floor = score.floor else { continue }
                rows.append(cells(score.meeting, system, floor))
                any = true
            }
            if !any, let meeting = perSystem.first?.meeting { unscored.append(meeting) }
        }
        let separator = rows.count
        for system in floorSystems {
            let pooled = PooledScore(system: system, scores: scores.flatMap { $0.filter { $0.system == system } })
            if let floor = pooled.floor { rows.append(cells("pooled", system, floor)) }
        }
        var text = "Dominant speaker (floor; latency of followed changes, missed = not followed within 5 s)\n"
        text += Self.render(rows, widths: Self.widths(rows), separatorsBefore: [separator])
        if !unscored.isEmpty {
            text += "Floor not scored (no floor.rttm): \(unscored.joined(separator: ", ")).\n"
        }
        return text
    }

    // MARK: Formatting

    /// A fraction with 3 decimals, e.g. `0.934`.
    public static func fraction(_ value: Double) -> String { String(format: "%.3f", value) }
    /// A percentage with one decimal, e.g. `96.2%`.
    public static func percent(_ value: Double) -> String { String(format: "%.1f%%", 100 * value) }
    /// Seconds with 2 decimals and a unit, or `-`.
    public static func seconds(_ value: Double?) -> String { value.map { String(format: "%.2f s", $0) } ?? "-" }

    private static func widths(_ rows: [[String]]) -> [Int] {
        rows[0].indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
    }

    /// Rows in columns two spaces apart: the first two left-aligned, numbers right-aligned; a rule under
    /// the header and before each index in `separatorsBefore`.
    private static func render(_ rows: [[String]], widths: [Int], separatorsBefore: [Int]) -> String {
        let total = widths.reduce(0, +) + 2 * (widths.count - 1)
        var text = ""
        for (index, row) in rows.enumerated() {
            if index == 1 || (separatorsBefore.contains(index) && index < rows.count) {
                text += String(repeating: "-", count: total) + "\n"
            }
            let cells = row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                return column < 2 ? row[column] + padding : padding + row[column]
            }
            text += cells.joined(separator: "  ").replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
                + "\n"
        }
        return text
    }

    private static func centred(_ text: String, _ width: Int) -> String {
        guard text.count < width else { return text }
        let left = (width - text.count) / 2
        return String(repeating: " ", count: left) + text + String(repeating: " ", count: width - text.count - left)
    }
}

import Foundation

/// The live view of `live` and `listen` on a terminal, redrawn in place ten times a second:
///
/// ```
/// activespeaker  12.3 s   dominant: alice
/// ▶ alice  ███████████████░░░░░░░░░  -23 dB  ● speaking   8.2 s
///   bob    ████░░░░░░░░░░░░░░░░░░░░  -51 dB               3.1 s
/// device hw:1,0 added
/// ```
/// One row per stream: level meter (−60…0 dBov), speech marker and talk time; the dominant speaker's
/// row is marked and shown in reverse video. The last line shows the latest device or stream note.
final class LiveView {
    /// What one row shows.
    struct Row {
        var name: String
        var level: Float
        var speaking: Bool
        var talkTime: Double
        var dominant: Bool
    }

    private var drawnLines = 0
    private var lastNote = ""

    init() {
        // Hide the cursor while drawing.
        try? BufferedOutput.write("\u{1B}[?25l", to: STDOUT_FILENO)
    }

    /// Keeps a note (a device or stream event) for the status line.
    func note(_ text: String) { lastNote = text }

    /// Redraws the view.
    func draw(time: Double, rows: [Row]) {
        let width = max(6, rows.map(\.name.count).max() ?? 0)
        let dominant = rows.first(where: \.dominant)?.name ?? "nobody"
        var text = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
        var lines = ["activespeaker  \(JSONLine.fixed(time, decimals: 1)) s   dominant: \(dominant)"]
        for row in rows {
            let cells = 24
            let filled = Int(((min(max(row.level, -60), 0) + 60) / 60 * Float(cells)).rounded())
            let meter = String(repeating: "█", count: filled) + String(repeating: "░", count: cells - filled)
            let level = String(format: "%4.0f dB", max(row.level, -99))
            let marker = row.speaking ? "● speaking" : "          "
            let name = row.name.padding(toLength: width, withPad: " ", startingAt: 0)
            var line = "\(row.dominant ? "▶" : " ") \(name)  \(meter)  \(level)  \(marker)  \(String(format: "%6.1f", row.talkTime)) s"
            if row.dominant { line = "\u{1B}[7m" + line + "\u{1B}[0m" }
            lines.append(line)
        }
        lines.append(lastNote)
        for line in lines { text += "\u{1B}[2K" + line + "\n" }
        // Fewer rows than last time (a stream was removed): clear the lines of the last drawing below.
        if lines.count < drawnLines { text += "\u{1B}[J" }
        drawnLines = lines.count
        try? BufferedOutput.write(text, to: STDOUT_FILENO)
    }

    /// Shows the cursor again below the last drawing.
    func finish() {
        try? BufferedOutput.write("\u{1B}[?25h", to: STDOUT_FILENO)
    }
}

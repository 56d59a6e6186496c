import SpeakerCore

/// Talk-time statistics of a `detect` run, as one JSON line or a table for people.
struct DetectSummary {
    /// Seconds of audio: the longest stream in whole hops.
    let duration: Double
    /// Each stream's statistics, in input order.
    let streams: [(id: String, statistics: TalkStatistics)]
    /// Number of dominant-speaker changes (each `dominant` event, including changes to nobody).
    let dominantChanges: Int

    /// `{"type":"summary","duration":…,"streams":{"alice":{"speech":…,"utterances":…,"dominant":…,"turns":…}},"dominantChanges":…}`
    var json: JSONLine {
        var perStream = JSONLine()
        for (id, statistics) in streams {
            var entry = JSONLine()
            entry.add("speech", statistics.speechTime, decimals: 3)
            entry.add("utterances", statistics.utterances)
            entry.add("dominant", statistics.dominantTime, decimals: 3)
            entry.add("turns", statistics.turns)
            perStream.add(id, entry)
        }
        var line = JSONLine()
        line.add("type", "summary")
        line.add("duration", duration, decimals: 3)
        line.add("streams", perStream)
        line.add("dominantChanges", dominantChanges)
        return line
    }

    /// An aligned table, e.g.
    /// ```
    /// 62.34 s of audio, 2 streams, 12 dominant-speaker changes
    ///
    /// stream  speech s  speech %  utterances  dominant s  dominant %  turns
    /// alice      12.34     19.8%           7       10.20       16.4%      3
    /// ```
    var table: String {
        let header = ["stream", "speech s", "speech %", "utterances", "dominant s", "dominant %", "turns"]
        var rows = [header]
        for (id, statistics) in streams {
            rows.append([
                id,
                JSONLine.fixed(statistics.speechTime, decimals: 2),
                percent(statistics.speechTime),
                String(statistics.utterances),
                JSONLine.fixed(statistics.dominantTime, decimals: 2),
                percent(statistics.dominantTime),
                String(statistics.turns),
            ])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max()! }
        var text = "\(JSONLine.fixed(duration, decimals: 2)) s of audio, \(streams.count) "
        text += streams.count == 1 ? "stream" : "streams"
        text += ", \(dominantChanges) dominant-speaker " + (dominantChanges == 1 ? "change" : "changes") + "\n\n"
        for row in rows {
            let cells = row.indices.map { column in
                let padding = String(repeating: " ", count: widths[column] - row[column].count)
                // The stream column reads left to right; numbers line up on the right.
                return column == 0 ? row[column] + padding : padding + row[column]
            }
            text += cells.joined(separator: "  ") + "\n"
        }
        return text
    }

    private func percent(_ seconds: Double) -> String {
        duration > 0 ? JSONLine.fixed(100 * seconds / duration, decimals: 1) + "%" : "-"
    }
}

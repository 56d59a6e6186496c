import Foundation
import SpeakerCore

/// NIST Rich Transcription Time Marked (RTTM) files, `SPEAKER` lines only:
/// `SPEAKER <file> <channel> <start> <duration> <NA> <NA> <speaker> <NA> <NA>`.
///
/// Text in, text out (no I/O): evaluation reads references and system output with it, and call recordings
/// (CallServer) write theirs with it, so that `eval` reads a recorded call as it reads any meeting.
public enum RTTM {
    /// An RTTM line that could not be read.
    public struct ParseError: Error, CustomStringConvertible {
        public let line: Int
        public let text: String
        public let reason: String
        public var description: String { "line \(line): \(reason): \(text)" }
    }

    /// Formats segments as RTTM `SPEAKER` lines (times with 3 decimals), in the order given.
    /// - Parameters:
    ///   - segments: the segments to write.
    ///   - recording: the RTTM file id field.
    public static func format(_ segments: [Segment], recording: String) -> String {
        var text = ""
        for segment in segments {
            text += "SPEAKER \(recording) 1 \(fixed3(segment.start)) \(fixed3(segment.duration)) <NA> <NA> "
            text += "\(segment.speaker) <NA> <NA>\n"
        }
        return text
    }

    /// Reads the `SPEAKER` lines of RTTM text; other line types and blank or `;;` comment lines are skipped.
    /// - Throws: `ParseError` for a `SPEAKER` line with fewer than 8 fields or a non-numeric time.
    public static func parse(_ text: String) throws -> [Segment] {
        var segments: [Segment] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard let first = fields.first, first == "SPEAKER" else { continue }
            guard fields.count >= 8 else {
                throw ParseError(line: index + 1, text: String(line), reason: "fewer than 8 fields")
            }
            guard let start = Double(fields[3]), let duration = Double(fields[4]), start >= 0, duration >= 0 else {
                throw ParseError(line: index + 1, text: String(line), reason: "start or duration is not a number ≥ 0")
            }
            segments.append(Segment(speaker: String(fields[7]), start: start, duration: duration))
        }
        return segments
    }

    private static func fixed3(_ value: Double) -> String { String(format: "%.3f", value) }
}

import Foundation

/// The parts of a recording that are scored: a list of time intervals in seconds.
public struct ScoredRegions: Sendable, Equatable {
    /// The intervals, `start < end`, in the order given (they may overlap).
    public var intervals: [(start: Double, end: Double)]

    /// Regions from intervals in seconds.
    public init(_ intervals: [(start: Double, end: Double)]) { self.intervals = intervals }

    public static func == (a: ScoredRegions, b: ScoredRegions) -> Bool {
        a.intervals.count == b.intervals.count
            && zip(a.intervals, b.intervals).allSatisfy { $0.start == $1.start && $0.end == $1.end }
    }

    /// Which of `frameCount` frames are scored: frame i, covering [i·d, (i+1)·d), is scored when its
    /// centre lies inside an interval (start inclusive, end exclusive), the rule `FrameScoring` uses
    /// for segments.
    /// - Complexity: O(frames + scored frames).
    public func mask(frameCount: Int, frameDuration: Double = FrameScoring.frameDuration) -> [Bool] {
        FrameScoring.activity(
            intervals.map { Segment(speaker: "", start: $0.start, duration: $0.end - $0.start) },
            frameCount: frameCount, frameDuration: frameDuration)
    }
}

/// NIST Unpartitioned Evaluation Map (UEM) files: one scored region per line,
/// `<file> <channel> <start> <end>` (seconds); blank lines and `;;` comments are skipped.
public enum UEM {
    /// Reads UEM text into the scored regions of each file id.
    /// - Throws: `EvaluationError.malformed` naming `path` and the line.
    public static func parse(_ text: String, path: String) throws(EvaluationError) -> [String: ScoredRegions] {
        var regions: [String: ScoredRegions] = [:]
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix(";;") { continue }
            let fields = trimmed.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 4, let start = Double(fields[2]), let end = Double(fields[3]),
                start >= 0, end > start
            else {
                throw EvaluationError(
                    path, .malformed, detail: "line \(index + 1): expected '<file> <channel> <start> <end>' with 0 <= start < end: \(trimmed)")
            }
            regions[String(fields[0]), default: ScoredRegions([])].intervals.append((start, end))
        }
        return regions
    }

    /// Reads a UEM file.
    /// - Throws: `EvaluationError` naming the file.
    public static func read(_ path: String) throws(EvaluationError) -> [String: ScoredRegions] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw EvaluationError(path, FileManager.default.fileExists(atPath: path) ? .unreadable : .noSuchPath)
        }
        return try parse(String(decoding: data, as: UTF8.self), path: path)
    }
}

import Foundation
import SpeakerEval
import Testing
import TestSupport

/// `activespeaker detect` on the labelled meetings of `Fixtures/meetings/` (one folder per meeting with
/// `<stream>.flac` per microphone and `speech.rttm`). Skipped, not passed, while there are none.
@Suite struct MeetingFixtureTests {
    /// Meeting folders holding at least one FLAC file and a `speech.rttm`.
    static let meetings: [URL] = {
        let root = URL(fileURLWithPath: FixturePaths.file("meetings"))
        let folders = (try? FileManager.default.contentsOfDirectory(at: root, includingPropertiesForKeys: nil)) ?? []
        return folders.filter { folder in
            FileManager.default.fileExists(atPath: folder.appendingPathComponent("speech.rttm").path)
                && !flacFiles(in: folder).isEmpty
        }.sorted { $0.path < $1.path }
    }()

    static func flacFiles(in folder: URL) -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".flac") }.sorted().map { folder.appendingPathComponent($0).path }
    }

    @Test(.enabled(if: !meetings.isEmpty, "Fixtures/meetings has no meetings yet"))
    func detectOnEveryMeeting() throws {
        for meeting in Self.meetings {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let files = Self.flacFiles(in: meeting)
            let ids = Set(files.map { URL(fileURLWithPath: $0).deletingPathExtension().lastPathComponent })
            let rttm = directory.path("speech.rttm")
            let result = try CLI.run(["detect", "--summary", "--rttm", rttm, "--name", meeting.lastPathComponent] + files)
            #expect(result.status == 0, "\(meeting.lastPathComponent): \(result.stderr)")
            #expect(result.stderr.isEmpty)
            let output = try DetectOutput(lines: result.lines)
            output.checkInvariants(ids: ids)
            let summary = try #require(output.summary)
            #expect(Set(summary.streams.map(\.id)) == ids)

            let written = try RTTM.parse(String(contentsOfFile: rttm, encoding: .utf8))
            #expect(written.count == output.speechSegments.count)

            // The reference marks each participant's own speech. Counted per 10 ms hop, most of it must be
            // found on the right stream, and most of what is found must be reference speech.
            let reference = try RTTM.parse(String(contentsOf: meeting.appendingPathComponent("speech.rttm"), encoding: .utf8))
            let truth = Self.hops(reference)
            let found = Self.hops(written)
            let hits = truth.intersection(found).count
            let recall = Double(hits) / Double(max(truth.count, 1))
            let precision = Double(hits) / Double(max(found.count, 1))
            #expect(recall >= 0.7, "\(meeting.lastPathComponent): recall \(recall)")
            #expect(precision >= 0.7, "\(meeting.lastPathComponent): precision \(precision)")
        }
    }

    /// The (speaker, hop) pairs covered by segments.
    private static func hops(_ segments: [Segment]) -> Set<String> {
        var hops = Set<String>()
        for segment in segments {
            let first = Int((segment.start * 100).rounded()), last = Int((segment.end * 100).rounded())
            for hop in first..<max(first, last) { hops.insert("\(segment.speaker)#\(hop)") }
        }
        return hops
    }
}

import SpeakerCore
import SpeakerEval
import Testing

@Suite struct RTTMTests {
    @Test func formatsThenParsesTheSameSegments() throws {
        let segments = [
            Segment(speaker: "alice", start: 1.23, duration: 2.5),
            Segment(speaker: "bob", start: 4.0, duration: 0.01),
        ]
        let text = RTTM.format(segments, recording: "m1")
        #expect(text.hasPrefix("SPEAKER m1 1 1.230 2.500 <NA> <NA> alice <NA> <NA>\n"))
        #expect(try RTTM.parse(text) == segments)
    }

    @Test func skipsCommentsAndOtherLineTypes() throws {
        let text = ";; comment\nSPKR-INFO m1 1 <NA> <NA> <NA> unknown alice <NA> <NA>\n\nSPEAKER m1 1 0.5 1 <NA> <NA> bob <NA> <NA>\n"
        #expect(try RTTM.parse(text) == [Segment(speaker: "bob", start: 0.5, duration: 1)])
    }

    @Test(arguments: ["SPEAKER m1 1 0.5", "SPEAKER m1 1 x 1 <NA> <NA> bob", "SPEAKER m1 1 1 -2 <NA> <NA> bob"])
    func rejectsMalformedLines(_ line: String) {
        #expect(throws: RTTM.ParseError.self) { try RTTM.parse(line) }
    }
}

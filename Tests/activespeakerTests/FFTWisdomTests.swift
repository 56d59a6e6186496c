import Foundation
import Testing
import TestSupport

/// FFTW plans from a wisdom file (SpeakerCore FFTWisdom): the first process measures and saves, the
/// next import, and both decide alike.
@Suite struct FFTWisdomTests {
    @Test func theFirstProcessSavesItsPlansAndTheNextUsesThem() throws {
        let directory = try TemporaryDirectory()
        let wisdom = directory.path("cache/activespeaker/fftw-wisdom")
        let file = FixturePaths.file("meetings/m1-clean/bob.flac")
        let first = try CLI.run(["detect", file], environment: ["ACTIVESPEAKER_FFTW_WISDOM": wisdom])
        #expect(first.status == 0, "\(first.stderr)")
        let saved = try String(contentsOfFile: wisdom, encoding: .utf8)
        #expect(saved.hasPrefix("(fftw-3"), "\(saved.prefix(80))")
        #expect(saved.contains("fftwf_"), "single-precision plans: \(saved.prefix(200))")
        let written = try FileManager.default.attributesOfItem(atPath: wisdom)[.modificationDate] as? Date
        let second = try CLI.run(["detect", file], environment: ["ACTIVESPEAKER_FFTW_WISDOM": wisdom])
        #expect(second.stdout == first.stdout && !first.stdout.isEmpty)
        // Everything came from the file: nothing new was measured, so nothing was written again.
        #expect(try FileManager.default.attributesOfItem(atPath: wisdom)[.modificationDate] as? Date == written)
        #expect(!FileManager.default.fileExists(atPath: wisdom + ".tmp"))
    }

    @Test func anUnwritableOrEmptyWisdomPathOnlyCostsTheMeasurement() throws {
        let file = FixturePaths.file("formats/speech.flac")
        let off = try CLI.run(["detect", file], environment: ["ACTIVESPEAKER_FFTW_WISDOM": ""])
        let unwritable = try CLI.run(["detect", file], environment: ["ACTIVESPEAKER_FFTW_WISDOM": "/proc/no/such/wisdom"])
        #expect(off.status == 0 && unwritable.status == 0, "\(off.stderr)\(unwritable.stderr)")
        #expect(off.stdout == unwritable.stdout)
    }
}

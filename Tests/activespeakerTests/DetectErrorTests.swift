import Foundation
import Testing
import TestSupport

/// `activespeaker detect` refusing bad input (exit 1) and bad command lines (exit 64).
@Suite struct DetectErrorTests {
    @Test(arguments: TestAudio.BadInput.available)
    func badInputFailsCleanly(_ input: TestAudio.BadInput) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let good = try TestAudio.writeNoise("alice", seconds: 2, in: directory)
        let bad = try input.make(in: directory)
        let before = try directory.contents()
        let rttm = directory.path("out.rttm")

        let result = try CLI.run(["detect", "--rttm", rttm, "--summary", good, bad])

        #expect(result.status == 1)
        #expect(result.stdout.isEmpty, "nothing on standard output")
        #expect(result.errorLines.count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.hasPrefix("activespeaker: \(bad): "), "names the file: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: rttm), "no RTTM file")
        #expect(try directory.contents() == before, "no temporary file left")
    }

    /// A FLAC file cut short opens fine (its header is whole); the damage is found only when its audio is reached,
    /// after events may have been written. The run still fails with one line naming the file and no RTTM file.
    @Test func aFileCutShortPartwayFailsWhenItsAudioIsReached() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let whole = try Data(contentsOf: URL(fileURLWithPath: FixturePaths.file("meetings/m1-clean/bob.flac")))
        let cut = directory.path("bob.flac")
        try whole.prefix(whole.count / 2).write(to: URL(fileURLWithPath: cut))
        let alice = FixturePaths.file("meetings/m1-clean/alice.flac")
        let rttm = directory.path("out.rttm")

        let result = try CLI.run(["detect", "--rttm", rttm, "--summary", alice, cut])

        #expect(result.status == 1)
        #expect(result.errorLines.count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.hasPrefix("activespeaker: \(cut): truncated: "), "names the file: \(result.stderr)")
        #expect(!result.stdout.contains("\"summary\""), "no summary: the run did not end")
        #expect(!FileManager.default.fileExists(atPath: rttm), "no RTTM file")
    }

    @Test func unwritableRTTMDestinationFailsBeforeAnyOutput() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let good = try TestAudio.writeNoise("alice", seconds: 2, in: directory)
        let rttm = directory.path("missing-folder/out.rttm")
        let result = try CLI.run(["detect", "--rttm", rttm, good])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains(rttm))
    }

    @Test func existingRTTMIsKeptWhenTheRunFails() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let good = try TestAudio.writeNoise("alice", seconds: 2, in: directory)
        let rttm = directory.path("out.rttm")
        try Data("previous\n".utf8).write(to: URL(fileURLWithPath: rttm))
        let result = try CLI.run(["detect", "--rttm", rttm, good, directory.path("missing.wav")])
        #expect(result.status == 1)
        #expect(try String(contentsOfFile: rttm, encoding: .utf8) == "previous\n")
    }

    @Test func interruptedRunLeavesNoFile() throws {
        // Ten minutes of audio, with a levels line every 10 ms into a pipe nobody reads: `detect` blocks on
        // its output with its temporary RTTM file open, however fast the machine, until it is killed.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let second = Synthesis.noise(seconds: 1, levelDBFS: -40, seed: 13)
        let path = directory.path("long.wav")
        try TestAudio.writeWAV([Array((0..<600).map { _ in second }.joined())], to: path)
        let executable = try #require(CLI.executable)
        let process = Process()
        process.executableURL = executable
        process.arguments = ["detect", "--levels", "10", "--rttm", directory.path("out.rttm"), path]
        let unread = Pipe()
        defer { try? unread.fileHandleForReading.close() }
        process.standardOutput = unread
        process.standardError = FileHandle.nullDevice
        try process.run()
        var sawTemporary = false
        for _ in 0..<2000 where process.isRunning {
            if try directory.contents().contains(where: { $0.hasPrefix(".out.rttm.") }) {
                sawTemporary = true
                break
            }
            usleep(5_000)
        }
        process.terminate()
        process.waitUntilExit()
        try #require(sawTemporary, "the run ended before it could be interrupted")
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGTERM)
        #expect(try directory.contents() == ["long.wav"], "neither the RTTM file nor its temporary file")
    }

    /// Command lines that are wrong whatever the files hold. `FILE` stands for a good file.
    @Test(arguments: [
        ["detect"],
        ["detect", "--quiet"],
        ["detect", "--bogus", "FILE"],
        ["detect", "-x", "FILE"],
        ["detect", "FILE", "--rttm"],
        ["detect", "--levels", "15", "FILE"],
        ["detect", "--levels", "0", "FILE"],
        ["detect", "--levels", "ten", "FILE"],
        ["detect", "--name", "two words", "FILE"],
        ["detect", "--quiet=yes", "FILE"],
        ["detect", "--rttm", "a.rttm", "--rttm", "b.rttm", "FILE"],
        ["detect", "--config", "nosuch.key=1", "FILE"],
        ["detect", "--config", "vad.nosuch=1", "FILE"],
        ["detect", "--config", "vad.hangover=99", "FILE"],
        ["detect", "--config", "vad.hangover=soon", "FILE"],
        ["detect", "--config", "vad=1", "FILE"],
        ["detect", "--config", "vad.hangover", "FILE"],
        ["detect", "--config", "missing.json", "FILE"],
        ["detect", "--config", "nosuch.key=1", "--print-config"],
        ["detect", "--id", "a", "FILE", "FILE"],
        ["detect", "--id", "a", "--id", "a", "FILE", "FILE"],
        ["detect", "--id", "", "FILE"],
        ["detect", "-", "-"],
        ["detect", "--jobs", "0", "FILE"],
        ["detect", "--jobs", "many", "FILE"],
    ])
    func usageErrorsExitWith64(_ arguments: [String]) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let good = try TestAudio.writeNoise("bob", seconds: 2, in: directory)
        let result = try CLI.run(arguments.map { $0 == "FILE" ? good : $0 }, in: directory.url)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1, "one line: \(result.stderr)")
        #expect(result.stderr.hasPrefix("activespeaker: "))
        #expect(result.stderr.contains("see 'activespeaker detect --"), "says where to look")
        #expect(try directory.contents() == ["bob.wav"], "no output file")
    }

    @Test(arguments: [
        #"{"vad":{"nosuch":1}}"#,
        #"{"vad":{"hangover":"soon"}}"#,
        #"{"vad":{"hangover":99}}"#,
        #"{"vad":"#,
        #"[1,2]"#,
    ])
    func invalidConfigurationFileExitsWith64(_ document: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let good = try TestAudio.writeNoise("bob", seconds: 2, in: directory)
        try Data(document.utf8).write(to: directory.url.appendingPathComponent("bad.json"))
        let result = try CLI.run(["detect", "--config", "bad.json", good], in: directory.url)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains("bad.json"))
    }
}

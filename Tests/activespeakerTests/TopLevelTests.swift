import Foundation
import Testing

/// `activespeaker` without a subcommand: help, version, and command-line mistakes.
@Suite struct TopLevelTests {
    @Test func helpListsTheCommands() throws {
        for flag in ["--help", "-h", "help"] {
            let result = try CLI.run([flag])
            #expect(result.status == 0)
            #expect(result.stdout.contains("USAGE: activespeaker <command>"))
            #expect(result.lines.contains { $0.hasPrefix("  detect ") }, "detect is listed")
            #expect(result.stderr.isEmpty)
        }
    }

    @Test func versionIsPrinted() throws {
        let result = try CLI.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "0.1.0\n")
        #expect(result.stderr.isEmpty)
    }

    @Test func noArgumentsIsAUsageError() throws {
        let result = try CLI.run([])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.hasPrefix("activespeaker: "))
        #expect(result.stderr.contains("--help"), "points to the help")
    }

    @Test(arguments: [["frobnicate"], ["--frobnicate"], ["help", "frobnicate"]])
    func unknownCommandIsAUsageError(_ arguments: [String]) throws {
        let result = try CLI.run(arguments)
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains("frobnicate"))
    }

    @Test func subcommandHelpShowsOptionsAndSchema() throws {
        for arguments in [["detect", "--help"], ["detect", "-h"], ["help", "detect"], ["detect", "x.wav", "--help"]] {
            let result = try CLI.run(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.stdout.hasPrefix("USAGE: activespeaker detect [options] FILE..."), "\(arguments)")
            for option in ["--rttm PATH", "--summary", "--levels MS", "--config", "--print-config", "--downmix", "--quiet", "--name NAME"] {
                #expect(result.stdout.contains(option), "\(arguments) documents \(option)")
            }
            #expect(result.stdout.contains(#"{"t":1.230,"type":"speech","stream":"alice","active":true,"since":1.180}"#))
        }
    }

    @Test func helpFitsEightyColumns() throws {
        for arguments in [["--help"], ["detect", "--help"]] {
            let long = try CLI.run(arguments).lines.filter { $0.count > 80 }
            #expect(long.isEmpty, "\(arguments): \(long)")
        }
    }
}

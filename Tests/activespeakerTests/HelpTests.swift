import Foundation
import Testing

/// Every help text of `activespeaker`, the top level's and each command's, follows one layout.
@Suite struct HelpTests {
    /// The commands the top-level help lists (the lines under `COMMANDS:`).
    static func listedCommands() throws -> [String] {
        let lines = try CLI.run(["--help"]).lines
        let start = try #require(lines.firstIndex(of: "COMMANDS:"))
        return lines[(start + 1)...].prefix { !$0.isEmpty }.compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// The paragraph of `text` that starts with `heading` (up to the next empty line), as one line.
    static func paragraph(_ heading: String, in lines: [String]) -> String? {
        guard let start = lines.firstIndex(where: { $0.hasPrefix(heading) }) else { return nil }
        return lines[start...].prefix { !$0.isEmpty }.map { $0.trimmingCharacters(in: .whitespaces) }
            .joined(separator: " ")
    }

    /// README's table of `detect` options lists every option `detect --help` has (it missed --policy).
    @Test func theReadmeDocumentsEveryDetectOption() throws {
        let readme = try String(
            contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("README.md"),
            encoding: .utf8)
        let start = try #require(readme.range(of: "## `activespeaker detect`"))
        let end = readme.range(of: "\n## ", range: start.upperBound..<readme.endIndex)?.lowerBound ?? readme.endIndex
        let section = readme[start.upperBound..<end]
        let help = try CLI.run(["detect", "--help"]).lines
        let options = help.compactMap { line -> String? in
            guard let match = line.firstMatch(of: #/^  (?:-\w, )?(--[a-z-]+)/#) else { return nil }
            return String(match.1)
        }
        #expect(options.count > 10, "\(options)")
        for option in options {
            #expect(section.contains("`\(option)"), "README's detect section documents \(option)")
        }
    }

    @Test func theTopLevelListsEveryCommand() throws {
        let listed = try Self.listedCommands()
        #expect(Set(listed).isSuperset(of: ["detect", "eval", "live", "listen", "features", "serve", "token", "join"]), "\(listed)")
    }

    /// Each help: at most 80 columns; USAGE, OPTIONS and EXIT STATUS sections; the exit statuses
    /// in one wording (`EXIT STATUS: 0 …; 1 …; 64 command-line error…`); and each option the
    /// synopsis names spelt as OPTIONS spells it, value name included.
    @Test func everyHelpHasTheCommonLayout() throws {
        var helps: [(String, [String])] = [("activespeaker", try CLI.run(["--help"]).lines)]
        for command in try Self.listedCommands() {
            let result = try CLI.run([command, "--help"])
            #expect(result.status == 0 && result.stderr.isEmpty, "\(command)")
            helps.append((command, result.lines))
        }
        for (name, lines) in helps {
            let long = lines.filter { $0.count > 80 }
            #expect(long.isEmpty, "\(name): lines over 80 columns: \(long)")
            #expect(lines.first?.hasPrefix("USAGE: activespeaker") == true || lines.contains { $0.hasPrefix("USAGE: activespeaker") },
                    "\(name): USAGE")
            #expect(lines.contains("OPTIONS:"), "\(name): OPTIONS")
            let exit = try #require(Self.paragraph("EXIT STATUS: ", in: lines), "\(name): EXIT STATUS")
            #expect(exit.hasPrefix("EXIT STATUS: 0 "), "\(name): \(exit)")
            #expect(exit.contains("; 64 command-line error"), "\(name): \(exit)")
            let statuses = exit.matches(of: #/(?:: |; )(\d+) /#).map { Int($0.1)! }
            #expect(statuses == statuses.sorted() && statuses.first == 0 && statuses.last == 64, "\(name): \(exit)")
            if name == "activespeaker" { continue }

            // `--name VALUE` in USAGE as in OPTIONS.
            let usage = try #require(Self.paragraph("USAGE: ", in: lines))
            let options = lines[try #require(lines.firstIndex(of: "OPTIONS:"))...].prefix { !$0.isEmpty }
            let words = usage.split(separator: " ").map(String.init)
            for (index, word) in words.enumerated() {
                let option = word.trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
                guard option.hasPrefix("--"), option.count > 2 else { continue }
                var value: String?
                if !word.hasSuffix("]"), index + 1 < words.count {
                    let next = words[index + 1]
                    if !next.hasPrefix("-") && !next.hasPrefix("[") && next != "|" {
                        var trimmed = Substring(next)
                        while let last = trimmed.last, "].".contains(last) { trimmed = trimmed.dropLast() }
                        value = String(trimmed)
                    }
                }
                let spelled = value.map { "\(option) \($0)" } ?? option
                #expect(
                    options.contains { $0.hasPrefix("  \(spelled)") || $0.contains(", \(spelled)") },
                    "\(name): USAGE says \(spelled); OPTIONS has \(options.filter { $0.contains(option) })")
            }
        }
    }
}

import ConfigurationOverrides
import Foundation
import SpeakerCore

/// One option a command accepts: a flag (`--quiet`) or an option with a value (`--rttm PATH`).
struct OptionSpec: Sendable {
    /// The long name without dashes, e.g. `rttm` for `--rttm`.
    let name: String
    /// A one-letter alias without the dash, e.g. `q` for `-q`.
    let short: Character?
    /// The value's placeholder in help text (`PATH`), or nil for a flag.
    let valueName: String?
    /// True if the option may be given more than once (its values accumulate, in order).
    let repeatable: Bool
    /// One or more lines of help.
    let help: String

    /// A flag: present or absent.
    static func flag(_ name: String, short: Character? = nil, help: String) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: nil, repeatable: false, help: help)
    }

    /// An option that takes a value, as `--name VALUE` or `--name=VALUE`.
    static func value(
        _ name: String, short: Character? = nil, _ valueName: String, repeatable: Bool = false, help: String
    ) -> OptionSpec {
        OptionSpec(name: name, short: short, valueName: valueName, repeatable: repeatable, help: help)
    }

    /// The option as it appears in help: `-q, --quiet` or `--rttm PATH`.
    var synopsis: String {
        let long = "--\(name)" + (valueName.map { " \($0)" } ?? "")
        return short.map { "-\($0), \(long)" } ?? long
    }
}

/// The command line of one command after parsing: flags, option values and positional arguments.
struct ParsedOptions: Sendable {
    /// Names of the flags given.
    private(set) var flags: Set<String> = []
    /// Values per option name, in the order given.
    private(set) var values: [String: [String]] = [:]
    /// Arguments that are not options, in order (everything after `--` included).
    private(set) var positionals: [String] = []

    /// True if the flag was given.
    func has(_ flag: String) -> Bool { flags.contains(flag) }

    /// The value of a non-repeatable option, or nil if it was not given.
    func value(_ name: String) -> String? { values[name]?.last }

    /// All values of a repeatable option, in the order given.
    func all(_ name: String) -> [String] { values[name] ?? [] }

    /// The engine's settings: `base` (by default the engine's defaults) with each `--config` value applied in
    /// order (`EngineConfiguration.applying(arguments:)`).
    /// - Throws: `CommandError.usage` naming the bad value, with a hint.
    func engineConfiguration(base: EngineConfiguration = EngineConfiguration()) throws(CommandError) -> EngineConfiguration {
        do {
            return try base.applying(arguments: all("config"))
        } catch {
            throw .usage(error.description, hint: "see 'activespeaker detect --print-config' for the keys and defaults")
        }
    }

    /// `--jobs N`: threads to use, 1–256; every core when not given.
    /// - Throws: `CommandError.usage` for anything but a whole number in range.
    func jobs() throws(CommandError) -> Int {
        guard let text = value("jobs") else { return ProcessInfo.processInfo.activeProcessorCount }
        guard let count = Int(text), (1...256).contains(count) else { throw .usage("--jobs \(text): expected 1-256") }
        return count
    }

    /// Parses `arguments` (the words after the command name) against `specs`.
    ///
    /// Accepts `--name VALUE`, `--name=VALUE`, `-x VALUE`, flags, and `--` to end options (so a file may be
    /// called `-a.wav`). A single `-` is a positional argument. `-h`/`--help` are always accepted.
    /// - Throws: `CommandError.usage` for an unknown option, a missing value, a value given to a flag,
    ///   or a non-repeatable option given twice.
    static func parse(_ arguments: [String], specs: [OptionSpec]) throws(CommandError) -> ParsedOptions {
        let specs = specs + [.flag("help", short: "h", help: "")]
        var parsed = ParsedOptions()
        var index = arguments.startIndex
        var optionsEnded = false
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                parsed.positionals.append(argument)
                continue
            }
            if argument == "--" {
                optionsEnded = true
                continue
            }
            let (spec, inlineValue) = try find(argument, in: specs)
            guard let valueName = spec.valueName else {
                if inlineValue != nil { throw .usage("option --\(spec.name) takes no value") }
                parsed.flags.insert(spec.name)
                continue
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.endIndex else { throw .usage("option --\(spec.name) needs a \(valueName)") }
                value = arguments[index]
                index += 1
            }
            if !spec.repeatable && parsed.values[spec.name] != nil {
                throw .usage("option --\(spec.name) given more than once")
            }
            parsed.values[spec.name, default: []].append(value)
        }
        return parsed
    }

    /// The spec an option word names, and its `=value` part if it has one.
    private static func find(
        _ argument: String, in specs: [OptionSpec]
    ) throws(CommandError) -> (OptionSpec, String?) {
        if argument.hasPrefix("--") {
            let body = argument.dropFirst(2)
            let name = body.firstIndex(of: "=").map { String(body[..<$0]) } ?? String(body)
            let inlineValue = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
            guard let spec = specs.first(where: { $0.name == name }) else {
                throw .usage("unknown option --\(name)")
            }
            return (spec, inlineValue)
        }
        // A short option: exactly one letter.
        let letters = argument.dropFirst()
        guard letters.count == 1, let spec = specs.first(where: { $0.short == letters.first }) else {
            throw .usage("unknown option \(argument)")
        }
        return (spec, nil)
    }
}

/// Help text for a list of options: synopses in one column, help in the next, every line at most
/// `helpWidth` columns (a help line too long for its column is wrapped at spaces).
func optionHelp(_ specs: [OptionSpec]) -> String {
    let all = specs + [.flag("help", short: "h", help: "Show this help and exit.")]
    let width = min(all.map(\.synopsis.count).max() ?? 0, 28)
    let indent = width + 4
    var text = ""
    for spec in all {
        // Help written for a narrower column keeps its line breaks; help too wide is reflowed.
        var lines = spec.help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.contains(where: { $0.count > helpWidth - indent }) {
            lines = wrapped(lines.joined(separator: " "), width: helpWidth - indent)
        }
        let synopsis = "  " + spec.synopsis
        if spec.synopsis.count > width {
            text += synopsis + "\n"
            for line in lines { text += String(repeating: " ", count: indent) + line + "\n" }
        } else {
            for (number, line) in lines.enumerated() {
                let left = number == 0 ? synopsis : ""
                text += left.padding(toLength: indent, withPad: " ", startingAt: 0) + line + "\n"
            }
        }
    }
    return text
}

/// The widest line of any help text: a standard terminal.
let helpWidth = 80

/// `text` broken at spaces into lines of at most `width` characters (`laterWidth` for the lines
/// after the first, if given); a word longer than that stays whole on its own line. With
/// `keepingBrackets`, a space inside `[…]` does not break (a synopsis keeps `[--name TEXT]` on one
/// line).
func wrapped(_ text: String, width: Int, laterWidth: Int? = nil, keepingBrackets: Bool = false) -> [String] {
    guard text.count > width else { return [text] }
    var words: [String] = []
    var depth = 0
    for word in text.split(separator: " ") {
        if keepingBrackets && depth > 0, let last = words.popLast() {
            words.append(last + " " + word)
        } else {
            words.append(String(word))
        }
        if keepingBrackets { depth += word.filter { $0 == "[" }.count - word.filter { $0 == "]" }.count }
    }
    var lines: [String] = []
    var line = ""
    for word in words {
        if line.isEmpty {
            line = String(word)
        } else if line.count + 1 + word.count <= (lines.isEmpty ? width : laterWidth ?? width) {
            line += " " + word
        } else {
            lines.append(line)
            line = String(word)
        }
    }
    if !line.isEmpty { lines.append(line) }
    return lines
}

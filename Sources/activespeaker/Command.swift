/// A subcommand of `activespeaker`, e.g. `detect`.
///
/// To add one: write a type conforming to `Command` in its own file and list it in
/// `ActiveSpeakerCLI.commands`. The top-level help, `activespeaker help <name>`, `<name> --help`,
/// option parsing and error reporting come for free.
protocol Command: Sendable {
    /// The word that selects the command: `activespeaker <name> …`.
    static var name: String { get }
    /// One line for the list of commands.
    static var summary: String { get }
    /// The synopsis after `activespeaker`, e.g. `detect [options] FILE...`.
    static var synopsis: String { get }
    /// Paragraphs shown in `--help` between the synopsis and the options.
    static var overview: String { get }
    /// The options the command accepts (`--help` is added automatically).
    static var options: [OptionSpec] { get }
    /// Text shown in `--help` after the options: output format, exit status, examples.
    static var epilogue: String { get }

    /// Checks the parsed command line and keeps what `run` needs.
    /// - Throws: `CommandError.usage` for a bad option value or missing arguments.
    init(_ options: ParsedOptions) throws(CommandError)

    /// Does the work, writing results to standard output.
    /// - Throws: `CommandError` for bad input or a failed write.
    func run() throws(CommandError)
}

extension Command {
    static var epilogue: String { "" }

    /// The USAGE lines: each form of the synopsis, wrapped at spaces to `helpWidth` columns with
    /// continuation lines indented under the command's first argument.
    static var usage: String {
        let prefix = "USAGE: activespeaker "
        var text = ""
        for (number, form) in synopsis.split(separator: "\n").enumerated() {
            // Later forms are written `       activespeaker live …`; keep their own indentation.
            let line = number == 0 ? prefix + form : String(form)
            let indent = String(repeating: " ", count: prefix.count + name.count + 1)
            let lead = String(line.prefix { $0 == " " })
            let pieces = wrapped(
                String(line.dropFirst(lead.count)), width: helpWidth - lead.count,
                laterWidth: helpWidth - indent.count, keepingBrackets: true)
            text += lead + pieces.joined(separator: "\n" + indent) + "\n"
        }
        return text
    }

    /// The full `--help` text.
    static var help: String {
        var text = usage + "\n"
        if !overview.isEmpty { text += overview + "\n\n" }
        text += "OPTIONS:\n" + optionHelp(options)
        if !epilogue.isEmpty { text += "\n" + epilogue + "\n" }
        return text
    }
}

/// Why a command stopped early. Each case maps to one exit status and one line on standard error.
enum CommandError: Error, Equatable {
    /// The command line is wrong (unknown option, bad value, missing argument): exit status 64 (`EX_USAGE`).
    /// The message is followed, on the same line, by `hint`, or by default by where to find the command's help.
    case usage(String, hint: String? = nil)
    /// An input cannot be used (missing file, not audio, …) or an output cannot be written: exit status 1.
    case failure(String)

    /// The process exit status for this error.
    var exitStatus: Int32 {
        switch self {
        case .usage: ExitStatus.usage
        case .failure: ExitStatus.failure
        }
    }
}

/// Exit statuses of `activespeaker`.
enum ExitStatus {
    static let success: Int32 = 0
    /// Bad input files or an output that cannot be written.
    static let failure: Int32 = 1
    /// A command-line mistake (`EX_USAGE` from sysexits.h).
    static let usage: Int32 = 64
}

import Foundation

/// The `activespeaker` command: finds the subcommand and reports errors with the right exit status.
@main
enum ActiveSpeakerCLI {
    /// The version printed by `activespeaker --version`.
    static let version = "0.1.0"

    /// Every subcommand, in the order the help lists them. Add new commands here.
    static let commands: [any Command.Type] = [
        DetectCommand.self, EvalCommand.self, LiveCommand.self, ListenCommand.self, ServeCommand.self, TokenCommand.self,
        JoinCommand.self, FeaturesCommand.self,
    ]

    static func main() {
        let status = run(Array(CommandLine.arguments.dropFirst()))
        exit(status)
    }

    /// Runs the command line (without the program name) and returns the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            Console.error("missing command; see 'activespeaker --help'")
            return ExitStatus.usage
        }
        switch first {
        case "-h", "--help":
            Console.out(help)
            return ExitStatus.success
        case "--version":
            Console.out(version + "\n")
            return ExitStatus.success
        case "help":
            guard arguments.count > 1 else {
                Console.out(help)
                return ExitStatus.success
            }
            guard let command = command(named: arguments[1]) else {
                Console.error("unknown command '\(arguments[1])'; see 'activespeaker --help'")
                return ExitStatus.usage
            }
            Console.out(command.help)
            return ExitStatus.success
        default:
            guard let command = command(named: first) else {
                let what = first.hasPrefix("-") ? "unknown option \(first)" : "unknown command '\(first)'"
                Console.error("\(what); see 'activespeaker --help'")
                return ExitStatus.usage
            }
            return run(command, Array(arguments.dropFirst()))
        }
    }

    private static func run(_ command: any Command.Type, _ arguments: [String]) -> Int32 {
        do throws(CommandError) {
            let options = try ParsedOptions.parse(arguments, specs: command.options)
            if options.has("help") {
                Console.out(command.help)
                return ExitStatus.success
            }
            try command.init(options).run()
            return ExitStatus.success
        } catch {
            switch error {
            case .usage(let message, let hint):
                Console.error("\(message); \(hint ?? "see 'activespeaker \(command.name) --help'")")
            case .failure(let message):
                Console.error(message)
            }
            return error.exitStatus
        }
    }

    private static func command(named name: String) -> (any Command.Type)? {
        commands.first { $0.name == name }
    }

    /// The top-level help: what the tool does and its commands.
    static var help: String {
        let width = commands.map { $0.name.count }.max() ?? 0
        var text = """
            activespeaker \(version): tells who is speaking in multi-participant audio.

            USAGE: activespeaker <command> [options] [arguments]
                   activespeaker help <command>

            COMMANDS:

            """
        for command in commands {
            text += "  " + command.name.padding(toLength: width + 2, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += """

            OPTIONS:
              -h, --help   Show this help and exit.
              --version    Show the version and exit.

            Run 'activespeaker <command> --help' for the options of a command.

            EXIT STATUS: 0 success; 1 a failure that one line on standard error explains
            (unusable input, output, device or address; each command's help says which);
            64 command-line error (then nothing else is done).

            """
        return text
    }
}

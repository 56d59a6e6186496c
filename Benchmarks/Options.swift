import ConfigurationOverrides
import Foundation
import SpeakerCore

/// Command-line options of the benchmark.
struct Options {
    var quick = false
    var runs = 5
    var runsGiven = false
    var scenarios: [Int] = Array(1...6)
    var jsonPath: String?
    var markdownPath: String?
    var fixtures: String?
    var activespeaker: String?
    /// Stream counts of scenario 1.
    var analysisStreams = [1, 64, 1024, 10_000]
    /// Room sizes of scenario 2.
    var levelRoomSizes = LevelScenario.roomSizes
    var allowDebug = false
    var cacheDirectory = NSTemporaryDirectory() + "/activespeaker-bench"
    /// `--config KEY=VALUE` settings, in order, and the engine configuration they make.
    var settings: [String] = []
    var configuration = EngineConfiguration()
    /// Internal: run the memory probe of scenario 5 in this process and print its JSON.
    var memoryProbe: (from: Int, to: Int)?
    /// Worker counts of scenario 6 (1, the baseline, is always measured).
    var workerCounts = [1, 2]
    /// Streams each worker analyses in scenario 6 (the load grows with the workers).
    var streamsPerWorker = 1_024

    static let usage = """
        USAGE: swift run -c release Benchmarks [options]

        Measures the throughput of the ActiveSpeaker engine on the fixture meetings and prints
        a table per scenario; writes every figure to a JSON file.

        SCENARIOS
          1  full analysis (features + VAD + selection), 16 kHz PCM in memory, rooms of 5:
             1, 64, 1,024, 10,000 streams
          2  level-only selection, rooms of 2, 10, 100, 1,000 participants
          3  Opus: decode (libopus, 16 kHz) + analysis, and decoding alone
          4  files end to end: `activespeaker detect` over 64 one-minute WAV files
          5  memory: resident growth per stream from 1,000 to 10,000 streams
          6  scaling: 1 worker thread versus N (--workers), 1,024 streams per worker

        OPTIONS
          --quick              Fewer and shorter runs (about a minute in all).
          --runs N             Measured runs per configuration (default 5; 3 with --quick).
          --scenario LIST      Only these scenarios, e.g. 1 or 1,3,6 (repeatable).
          --streams LIST       Stream counts of scenario 1 (default 1,64,1024,10000).
          --room-sizes LIST    Room sizes of scenario 2 (default 2,10,100,1000).
          --workers LIST       Worker counts of scenario 6 (default 1,2; 1 is always run).
          --streams-per-worker N  Streams per worker in scenario 6 (default 1024).
          --json PATH          Where to write the JSON results (default .build/benchmarks.json
                               under the package, else the temporary directory).
          --markdown PATH      Also write the tables as Markdown (for docs/benchmarks.md).
          --fixtures DIR       The meeting fixtures (default: Fixtures/meetings, found from the
                               working directory).
          --activespeaker PATH The CLI for scenario 4 (default: next to this executable;
                               build it with `swift build -c release --product activespeaker`).
          --cache DIR          Where scenario 4 keeps its generated WAV files
                               (default $TMPDIR/activespeaker-bench).
          --config KEY=VALUE   An engine setting, as for `activespeaker detect --config`
                               (repeatable), e.g. vad.restingInterval=1.
          --allow-debug        Run a debug build anyway (its figures mean nothing).
          -h, --help           This help.
        """

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var scenarioList: [Int] = []
        var index = 0
        func value(_ name: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchmarkError("\(name) needs a value") }
            return arguments[index]
        }
        func integers(_ name: String, _ text: String) throws -> [Int] {
            let values = text.split(separator: ",").map { Int($0.replacingOccurrences(of: "_", with: "")) }
            guard !values.isEmpty, values.allSatisfy({ ($0 ?? 0) > 0 }) else {
                throw BenchmarkError("\(name) \(text): expected positive integers separated by commas")
            }
            return values.map { $0! }
        }
        while index < arguments.count {
            let argument = arguments[index]
            switch argument {
            case "--quick": options.quick = true
            case "--runs":
                let runs = try integers(argument, try value(argument))
                guard runs.count == 1 else { throw BenchmarkError("--runs takes one number") }
                options.runs = runs[0]
                options.runsGiven = true
            case "--scenario", "--scenarios":
                let list = try integers(argument, try value(argument))
                guard list.allSatisfy({ (1...6).contains($0) }) else { throw BenchmarkError("scenarios are 1…6") }
                scenarioList += list
            case "--streams": options.analysisStreams = try integers(argument, try value(argument))
            case "--workers":
                options.workerCounts = Array(Set([1] + (try integers(argument, try value(argument))))).sorted()
            case "--streams-per-worker":
                let counts = try integers(argument, try value(argument))
                guard counts.count == 1 else { throw BenchmarkError("--streams-per-worker N: one number") }
                options.streamsPerWorker = counts[0]
            case "--room-sizes":
                let sizes = try integers(argument, try value(argument))
                guard sizes.allSatisfy({ (2...LevelScenario.participants).contains($0) }) else {
                    throw BenchmarkError("room sizes are 2…\(LevelScenario.participants)")
                }
                options.levelRoomSizes = sizes
            case "--json": options.jsonPath = try value(argument)
            case "--markdown": options.markdownPath = try value(argument)
            case "--fixtures": options.fixtures = try value(argument)
            case "--activespeaker": options.activespeaker = try value(argument)
            case "--cache": options.cacheDirectory = try value(argument)
            case "--allow-debug": options.allowDebug = true
            case "--config":
                let setting = try value(argument)
                guard let equals = setting.firstIndex(of: "=") else { throw BenchmarkError("--config KEY=VALUE, got \(setting)") }
                do {
                    options.configuration = try options.configuration.setting(
                        String(setting[..<equals]), to: String(setting[setting.index(after: equals)...]))
                } catch {
                    throw BenchmarkError("--config \(setting): \(error)")
                }
                options.settings.append(setting)
            case "--memory-probe":
                let counts = try integers(argument, try value(argument))
                guard counts.count == 2, counts[0] < counts[1] else { throw BenchmarkError("--memory-probe FROM,TO") }
                options.memoryProbe = (counts[0], counts[1])
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                throw BenchmarkError("unknown option \(argument); see --help")
            }
            index += 1
        }
        if !scenarioList.isEmpty { options.scenarios = Array(Set(scenarioList)).sorted() }
        if options.quick && !options.runsGiven { options.runs = 3 }
        return options
    }

    /// Stream-frames per measured run of the engine scenarios.
    var budget: TickBudget {
        quick
            ? TickBudget(streamFrames: 200_000, minimum: 50, maximum: 5_000)
            : TickBudget(streamFrames: 1_000_000, minimum: 100, maximum: 20_000)
    }

    /// For the JSON file.
    var summary: [String: String] {
        [
            "quick": String(quick), "runs": String(runs),
            "scenarios": scenarios.map(String.init).joined(separator: ","),
            "streams": analysisStreams.map(String.init).joined(separator: ","),
            "roomSizes": levelRoomSizes.map(String.init).joined(separator: ","),
        ]
    }
}

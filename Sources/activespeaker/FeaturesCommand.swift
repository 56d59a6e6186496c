import Foundation
import SpeakerCore
import SpeakerEval

/// `activespeaker features`: the sound classifier's input, frame by frame, for training it.
struct FeaturesCommand: Command {
    static let name = "features"
    static let summary = "Write the sound classifier's inputs of audio files, for training."
    static let synopsis = "features --out DIR [options] FILE..."

    static let overview = """
        Runs each stream of each FILE alone through the engine, 10 ms at a time, and
        writes the sound classifier's input after every frame: what
        tools/corpus/train_classifier.py trains on, computed by the same code that
        runs in a call. Streams are named as detect names them (alice.wav -> alice;
        channels of a multichannel file -> <name>-ch1, ...).
        """

    static let options: [OptionSpec] = [
        .value("out", "DIR", help: "Folder for the output files (created if missing)."),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: """
            Override engine settings, as in detect.
            """),
        .flag("downmix", help: "Average the channels of a multichannel file."),
        .value("layout", "context|frame", help: """
            What each row holds: the sound classifier's input (context, the default),
            or the frame's own features (frame: the columns below).
            """),
    ]

    static let epilogue = """
        OUTPUT: DIR/<stream>.f32 per stream: little-endian float32, one row of
        \(SoundContext.inputCount) values per 10 ms frame (row t describes audio up to
        (t+1) x 10 ms); the columns are documented on SoundContext
        (Sources/SpeakerCore/Classifier/SoundContext.swift). Each file is written whole.
        With --layout frame, rows of \(FrameFeatures.columnCount) values: the frame's
        features as FrameFeatures.columns lists them (band energies in dBFS 0-15,
        band SNRs in dB 16-31, then energy, window energy, zero-crossing rate,
        segmental SNR, flatness, centroid in kHz, flux, periodicity, pitch in kHz,
        speech-band excess in dBFS). tools/corpus/train_speech_model.py reads them.

        EXIT STATUS: 0 success; 1 unusable input file or unwritable output (one line
        on standard error); 64 command-line error.
        """

    let files: [String]
    let outputDirectory: String
    let configuration: EngineConfiguration
    let downmix: Bool
    let frameLayout: Bool

    init(_ options: ParsedOptions) throws(CommandError) {
        files = options.positionals
        guard let out = options.value("out") else { throw .usage("--out DIR is required") }
        outputDirectory = out
        configuration = try options.engineConfiguration()
        downmix = options.has("downmix")
        switch options.value("layout") ?? "context" {
        case "context": frameLayout = false
        case "frame": frameLayout = true
        case let other: throw .usage("--layout: \(other) is not context or frame")
        }
        if files.isEmpty { throw .usage("no audio files given") }
    }

    func run() throws(CommandError) {
        let decoded = try DetectCommand.decode(files, downmix: downmix)
        let ids = decoded.map(\.id)
        if let duplicate = ids.first(where: { id in ids.filter { $0 == id }.count > 1 }) {
            throw .failure("two streams are named \(duplicate): their outputs would overwrite each other")
        }
        do {
            try FileManager.default.createDirectory(atPath: outputDirectory, withIntermediateDirectories: true)
        } catch {
            throw .failure("\(outputDirectory): cannot create the folder: \(error.localizedDescription)")
        }
        let total = decoded.reduce(0.0) { $0 + $1.duration }
        let progress = ProgressLine(label: "features", enabled: total > 60)
        defer { progress.clear() }
        var done = 0.0
        for stream in decoded {
            let replay: RoomReplay
            do {
                replay = try RoomReplay(
                    streams: [ReplayStream(id: stream.id, samples: stream.samples)], configuration: configuration,
                    policies: .withBaselines)
            } catch {
                throw .usage(error.description)
            }
            var rows = [Float]()
            let width = frameLayout ? FrameFeatures.columnCount : SoundContext.inputCount
            rows.reserveCapacity(replay.tickCount * width)
            let handle = replay.handle(of: 0)!
            while !replay.isAtEnd {
                replay.tick()
                if frameLayout {
                    replay.engine.features(of: handle).appendColumns(to: &rows)
                } else {
                    let input = replay.engine.soundContext(of: handle)
                    for index in 0..<SoundContext.inputCount { rows.append(input[index]) }
                }
                progress.update((done + replay.time) / max(total, 1e-9))
            }
            done += stream.duration
            let data = rows.withUnsafeBufferPointer { Data(buffer: $0) }
            let path = URL(fileURLWithPath: outputDirectory).appendingPathComponent(stream.id + ".f32")
            do {
                try data.write(to: path, options: .atomic)
            } catch {
                throw .failure("\(path.path): cannot write: \(error.localizedDescription)")
            }
        }
    }
}

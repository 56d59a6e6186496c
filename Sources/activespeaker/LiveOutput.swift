import Foundation
import SpeakerCore
import SpeakerMedia
import Synchronization

/// What `live` and `listen` write while they run: events as JSON Lines (the `detect` schema plus
/// `device`, `stream` and `stats` lines), or the terminal view; talk time per stream for the view.
///
/// Lines are flushed at the end of every tick that wrote one, so a reader of the pipe sees each
/// decision within the tick it was made.
final class LiveOutput {
    private let writer: EventWriter
    private let view: LiveView?
    private let levelTicks: Int?
    private var wroteThisTick = false
    /// Every stream ever added, by index; a removed stream keeps its name.
    private(set) var names: [String] = []
    /// The indices of the streams not removed, in the order they were added: those the `levels` lines and
    /// the view show.
    private var present: [Int] = []
    private var speaking: [Bool] = []
    private var talkTime: [Double] = []
    private var lastSpeechChange: [Double] = []
    private(set) var dominant: Int?
    private var ticks = 0
    /// For the view's last drawing: the time and levels (by stream index) of the last tick.
    private var lastTime = 0.0
    private var lastLevels: [Float] = []

    /// - Parameters:
    ///   - view: The terminal view, or nil for JSON Lines.
    ///   - levelTicks: Ticks between `levels` lines, or nil for none.
    init(view: LiveView?, levelTicks: Int?) {
        writer = EventWriter(output: BufferedOutput())
        self.view = view
        self.levelTicks = levelTicks
    }

    /// Adds a stream and returns its index (the order of `names`).
    func addStream(_ name: String) -> Int {
        names.append(name)
        speaking.append(false)
        talkTime.append(0)
        lastSpeechChange.append(0)
        present.append(names.count - 1)
        return names.count - 1
    }

    func speech(stream: Int, active: Bool, time: Double, since: Double) throws(CommandError) {
        if speaking[stream] && !active { talkTime[stream] += max(0, since - lastSpeechChange[stream]) }
        speaking[stream] = active
        lastSpeechChange[stream] = since
        if view == nil { try writer.speech(time: time, stream: names[stream], active: active, since: since) }
        wroteThisTick = true
    }

    func dominant(stream: Int?, time: Double) throws(CommandError) {
        dominant = stream
        if view == nil { try writer.dominant(time: time, stream: stream.map { names[$0] }) }
        wroteThisTick = true
    }

    /// Writes every event `runner` made since the last call, its streams being this output's (added in the
    /// runner's order).
    func writeEvents(of runner: RoomRunner) throws(CommandError) {
        try CommandError.rethrowing { try runner.consumeEvents { event in
            switch event {
            case .speech(let stream, let active, let time, let since):
                try speech(stream: stream, active: active, time: time, since: since)
            case .dominant(let stream, let time):
                try dominant(stream: stream, time: time)
            }
        } }
    }

    /// Writes every event of the room runner made since the last call, its streams named by this output's
    /// indexes.
    func writeEvents<Room>(of runner: RTPRoomRunner<Room, Int>) throws(CommandError) {
        try CommandError.rethrowing { try runner.consumeEvents { event in
            switch event {
            case .speech(_, let stream, let active, let time, let since):
                try speech(stream: stream, active: active, time: time, since: since)
            case .dominant(_, let stream, let time):
                try dominant(stream: stream, time: time)
            }
        } }
    }

    /// A `device` line: `{"t":…,"type":"device","event":EVENT,"device":NAME, …details}`.
    func device(time: Double, event: String, device: String, details: [(String, DetailValue)] = []) throws(CommandError) {
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        line.add("type", "device")
        line.add("event", event)
        line.add("device", device)
        for (key, value) in details { value.add(to: &line, key: key) }
        try writeLine(line, note: Self.note("device \(device) \(event)", details))
    }

    /// A `stream` line: a stream joined (`listen`: a new SSRC).
    func streamAdded(time: Double, stream: Int, details: [(String, DetailValue)]) throws(CommandError) {
        try streamLine(time: time, event: "added", stream: stream, details: details)
    }

    /// Removes stream `stream` from the `levels` lines and the view, and writes its `stream` line
    /// (`listen`: an SSRC that stopped sending). Its events written later (its utterance ending) still
    /// name it.
    /// - Precondition: `stream` is present.
    func streamRemoved(time: Double, stream: Int, details: [(String, DetailValue)]) throws(CommandError) {
        guard let position = present.firstIndex(of: stream) else { preconditionFailure("stream \(stream) is not present") }
        present.remove(at: position)
        try streamLine(time: time, event: "removed", stream: stream, details: details)
    }

    /// `{"t":…,"type":"stream","event":EVENT,"stream":NAME, …details}`.
    private func streamLine(time: Double, event: String, stream: Int, details: [(String, DetailValue)]) throws(CommandError) {
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        line.add("type", "stream")
        line.add("event", event)
        line.add("stream", names[stream])
        for (key, value) in details { value.add(to: &line, key: key) }
        try writeLine(line, note: Self.note("stream \(names[stream]) \(event)", details))
    }

    /// The view's words for a line: `device hw:1,0 opened: rate 48000, channels 2, …`.
    private static func note(_ what: String, _ details: [(String, DetailValue)]) -> String {
        details.isEmpty ? what : what + ": " + details.map { "\($0.0) \($0.1.text)" }.joined(separator: ", ")
    }

    /// A value of a `device`, `stream` or `stats` line.
    enum DetailValue {
        case text(String), integer(Int), number(Double, decimals: Int), object(JSONLine)
        func add(to line: inout JSONLine, key: String) {
            switch self {
            case .text(let value): line.add(key, value)
            case .integer(let value): line.add(key, value)
            case .number(let value, let decimals): line.add(key, value, decimals: decimals)
            case .object(let value): line.add(key, value)
            }
        }

        /// The value as the view shows it.
        var text: String {
            switch self {
            case .text(let value): value
            case .integer(let value): String(value)
            case .number(let value, let decimals): JSONLine.fixed(value, decimals: decimals)
            case .object(let value): value.rendered
            }
        }
    }

    /// Writes a line built by the caller (device events, stats); the view shows `note` on its status
    /// line instead (words, never the JSON).
    func writeLine(_ line: JSONLine, note: String) throws(CommandError) {
        if let view {
            view.note(note)
        } else {
            try writer.write(line)
        }
        wroteThisTick = true
    }

    /// Ends a tick at `time`: level lines, the view, and a flush if anything was written.
    /// - Parameter level: The level of a present stream, by index; never asked for a removed one.
    func endTick(time: Double, level: (Int) -> Float) throws(CommandError) {
        ticks += 1
        if let levelTicks, ticks % levelTicks == 0, view == nil {
            try writer.levels(time: time, present.map { (names[$0], level($0)) })
            wroteThisTick = true
        }
        if let view {
            lastTime = time
            if lastLevels.count < names.count {
                lastLevels += repeatElement(Levels.floorDBFS, count: names.count - lastLevels.count)
            }
            for index in present { lastLevels[index] = level(index) }
            if ticks % 10 == 0 { view.draw(time: time, rows: rows(at: time)) }
        }
        if wroteThisTick && view == nil { try writer.flush() }
        wroteThisTick = false
    }

    /// The view's rows at `time`, one per present stream, with the levels of the last tick.
    private func rows(at time: Double) -> [LiveView.Row] {
        present.map { index in
            LiveView.Row(
                name: names[index], level: index < lastLevels.count ? lastLevels[index] : Levels.floorDBFS,
                speaking: speaking[index],
                talkTime: talkTime[index] + (speaking[index] ? max(0, time - lastSpeechChange[index]) : 0),
                dominant: dominant == index)
        }
    }

    /// Writes out everything and leaves the terminal tidy. The view is drawn once more, so that it
    /// ends as the events end (the last utterances over, the floor released, the last note shown).
    func finish() throws(CommandError) {
        if let view {
            view.draw(time: lastTime, rows: rows(at: lastTime))
            view.finish()
        }
        try writer.flush()
    }
}

/// Ctrl-C (SIGINT) and SIGTERM ask a live run to stop; it then finishes its ticks and flushes.
enum StopRequest {
    /// Set by the signal handler.
    static let flag = Atomic<Bool>(false)

    /// True once a stop was asked for.
    static var isRequested: Bool { flag.load(ordering: .relaxed) }

    /// Installs the handlers. The first signal only stores to an atomic; a second one (the run did not
    /// stop) restores the default action and delivers itself, ending the process. Both are
    /// async-signal-safe.
    static func install() {
        for number in [SIGINT, SIGTERM] {
            SignalHandler.install(number) { received in
                if StopRequest.flag.exchange(true, ordering: .relaxed) {
                    signal(received, SIG_DFL)
                    raise(received)
                }
            }
        }
    }
}

/// Parsing shared by `live` and `listen`.
enum LiveOptions {
    /// `--duration SECONDS` as ticks.
    static func durationTicks(_ text: String?) throws(CommandError) -> Int? {
        guard let text else { return nil }
        guard let seconds = Double(text), seconds > 0, seconds <= 1e7 else {
            throw .usage("--duration \(text): expected a positive number of seconds")
        }
        return Int((seconds * 100).rounded())
    }

    /// `--levels MS` as ticks.
    static func levelTicks(_ text: String?) throws(CommandError) -> Int? {
        guard let text else { return nil }
        guard let milliseconds = Int(text), milliseconds > 0, milliseconds % 10 == 0 else {
            throw .usage("--levels \(text): expected a positive multiple of 10 milliseconds")
        }
        return milliseconds / 10
    }

    /// The terminal view, unless `--json` or standard output is not a terminal.
    static func view(json: Bool) -> LiveView? {
        json || !Console.outputIsTerminal ? nil : LiveView()
    }
}

extension CommandError {
    /// Runs `body`, which throws only `CommandError`s through a `rethrows` function (such as
    /// `Engine.consumeEvents`), and throws them typed.
    static func rethrowing(_ body: () throws -> Void) throws(CommandError) {
        do {
            try body()
        } catch let error as CommandError {
            throw error
        } catch {
            throw .failure("\(error)")
        }
    }
}

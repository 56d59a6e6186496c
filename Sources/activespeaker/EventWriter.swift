import SpeakerCore
/// Writes the decisions of a run as JSON Lines: one object per line, keys in a fixed order,
/// times in seconds with exactly 3 decimals.
///
/// ```
/// {"t":1.230,"type":"speech","stream":"alice","active":true,"since":1.180}
/// {"t":1.500,"type":"dominant","stream":"alice"}
/// {"t":2.000,"type":"levels","levels":{"alice":-23.4,"bob":-61.0}}
/// ```
/// Lines go out in the order they are written; the caller keeps `t` non-decreasing.
final class EventWriter {
    private let output: BufferedOutput

    init(output: BufferedOutput) {
        self.output = output
    }

    /// A stream's voice activity changed at decision time `time`; the change began at `since`.
    func speech(time: Double, stream: String, active: Bool, since: Double) throws(CommandError) {
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        line.add("type", "speech")
        line.add("stream", stream)
        line.add("active", active)
        line.add("since", since, decimals: 3)
        try write(line)
    }

    /// The room's dominant speaker became `stream` (nil: nobody) at `time`.
    func dominant(time: Double, stream: String?) throws(CommandError) {
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        line.add("type", "dominant")
        line.add("stream", stream)
        try write(line)
    }

    /// The smoothed level of each present stream at `time`, dBov rounded to 0.1 dB, in the order given.
    func levels(time: Double, _ levels: [(stream: String, level: Float)]) throws(CommandError) {
        var values = JSONLine()
        for (stream, level) in levels { values.add(stream, Double(level), decimals: 1) }
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        line.add("type", "levels")
        line.add("levels", values)
        try write(line)
    }

    /// The sound classifier's last answer for each present stream at `time`: probabilities of none,
    /// speech, music and sound, 2 decimals, in the order given.
    func classes(time: Double, _ classes: [(stream: String, classes: SoundClasses)]) throws(CommandError) {
        var values = JSONLine()
        for (stream, answer) in classes {
            var probabilities = JSONLine()
            for (index, name) in SoundClasses.names.enumerated() {
                probabilities.add(name, Double(answer.probabilities[index]), decimals: 2)
            }
            values.add(stream, probabilities)
        }
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        line.add("type", "classes")
        line.add("classes", values)
        try write(line)
    }

    /// Writes a line built elsewhere (e.g. a summary).
    func write(_ line: JSONLine) throws(CommandError) {
        try output.write(line.rendered + "\n")
    }

    /// Writes out what is buffered.
    func flush() throws(CommandError) {
        try output.flush()
    }
}

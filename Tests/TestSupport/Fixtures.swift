import Foundation

/// Locations of the files in the repository's `Fixtures/` folder.
public enum FixturePaths {
    /// The repository root, found from this source file's location.
    public static let repositoryRoot: URL = {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // TestSupport
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()
    }()

    /// `Fixtures/` at the repository root.
    public static let fixtures = repositoryRoot.appendingPathComponent("Fixtures")

    /// A file below `Fixtures/`, e.g. `file("formats/speech.flac")`.
    public static func file(_ relativePath: String) -> String {
        fixtures.appendingPathComponent(relativePath).path
    }
}

/// Fixtures' m1-clean as the live tests of a co-located meeting play it: three microphones that hear each
/// other at −25 dB, without carol's "mm-hmm" at the end of bob's turn.
///
/// On the files as they are, carol says "mm-hmm" from 7.93 s to 8.52 s while bob's turn ends at 8.28 s,
/// and the engine keeps bob's floor against it by 20 ms (carol's last speech frame against the turn end):
/// a loss burst on bob's last words, a packet late on a loaded machine, or carol 20 ms later than bob
/// decided it, so a live test of that meeting measured that margin more than the network path it tested.
/// Here carol's microphone plays its own quiet from 9.70–10.50 s over 7.85–8.65 s (the leak of her
/// "mm-hmm" in the other microphones, 25 dB down, stays).
public enum CoLocatedMeeting {
    /// The participants, in the order of `paths`.
    public static let names = ["alice", "bob", "carol"]

    /// m1-clean's files, in the order of `names`.
    public static var paths: [String] { names.map { FixturePaths.file("meetings/m1-clean/\($0).flac") } }

    /// Takes carol's backchannel out of the meeting's streams (in the order of `names`, at `sampleRate`).
    public static func removeBackchannel(from streams: inout [[Float]], sampleRate: Int) {
        precondition(streams.count == names.count, "one stream per participant")
        func sample(_ seconds: Double) -> Int { Int((seconds * Double(sampleRate)).rounded()) }
        let quiet = Array(streams[2][sample(9.7)..<sample(10.5)])
        streams[2].replaceSubrange(sample(7.85)..<sample(7.85) + quiet.count, with: quiet)
    }

    /// Takes the leaked copies of carol's backchannel out of the other microphones too (after
    /// `removeBackchannel`): alice's plays her own quiet from 9.70 s over 7.85–8.65 s, bob's his over
    /// 8.30–8.65 s (his turn ends at 8.28 s). Without it a leak with no source is left in them, which
    /// streams arriving apart through browsers' noise suppression sometimes name as alice's speech and
    /// `detect` on the aligned files does not.
    public static func removeBackchannelLeaks(from streams: inout [[Float]], sampleRate: Int) {
        precondition(streams.count == names.count, "one stream per participant")
        func sample(_ seconds: Double) -> Int { Int((seconds * Double(sampleRate)).rounded()) }
        for (stream, from) in [(0, 7.85), (1, 8.30)] {
            let quiet = Array(streams[stream][sample(9.7)..<sample(9.7) + sample(8.65) - sample(from)])
            streams[stream].replaceSubrange(sample(from)..<sample(from) + quiet.count, with: quiet)
        }
    }
}

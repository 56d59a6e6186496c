import Foundation
import SpeakerEval
import SpeakerFiles
import Testing
import TestSupport

/// A replay source over an array, optionally failing when it reaches a sample, and read on the engine's threads
/// when `readsIndependently`.
final class ArraySource: ReplaySource {
    struct Failure: Error {}
    let id: String
    let samples: [Float]
    let failAt: Int?
    let readsIndependently: Bool
    private var position = 0

    init(id: String, samples: [Float], failAt: Int? = nil, readsIndependently: Bool = false) {
        self.id = id
        self.samples = samples
        self.failAt = failAt
        self.readsIndependently = readsIndependently
    }

    var sampleCount: Int { samples.count }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        let count = min(buffer.count, samples.count - position)
        if let failAt, position + count > failAt { throw Failure() }
        for index in 0..<count { buffer[index] = samples[position + index] }
        position += count
        return count
    }
}

/// One stream of a `FileStreamReader`, as `detect` plays it.
final class ReaderSource: ReplaySource {
    let id: String
    let reader: FileStreamReader
    let stream: Int

    init(id: String, reader: FileStreamReader, stream: Int) {
        self.id = id
        self.reader = reader
        self.stream = stream
    }

    var sampleCount: Int { reader.sampleCount }

    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> Int {
        try reader.read(stream: stream, into: buffer)
    }
}

/// A replay of whole arrays and one of sources read as they play give the same decisions.
@Suite struct StreamedReplayTests {
    /// Everything a replay observably does, tick by tick: events, present streams, levels, then statistics.
    struct Run: Equatable {
        var events: [RoomReplay.Event] = []
        var present: [[Int]] = []
        var levels: [[Float]] = []
        var speechTimes: [Double] = []
        var ticks = 0
    }

    static func run(_ replay: RoomReplay) -> Run {
        var run = Run()
        while !replay.isAtEnd {
            replay.tick()
            replay.consumeEvents { run.events.append($0) }
            run.present.append(replay.presentStreams)
            run.levels.append(replay.presentStreams.map { replay.level(of: $0)! })
        }
        replay.finish()
        replay.consumeEvents { run.events.append($0) }
        run.speechTimes = replay.streamIDs.indices.map { replay.statistics(of: $0).speechTime }
        run.ticks = replay.ticks
        return run
    }

    @Test func sourcesPlayLikeArraysWithStreamsOfDifferentLengths() throws {
        let talker = try TestAudio.speech("hello there, how are you", voice: "en-us")
        let noise = Synthesis.noise(seconds: 1.5, levelDBFS: -35, seed: 7)
        let streams = [
            ReplayStream(id: "talker", samples: talker),
            ReplayStream(id: "short", samples: Array(noise.prefix(8_165))),  // a partial last hop
            ReplayStream(id: "noise", samples: noise),
        ]
        let arrays = Self.run(try RoomReplay(streams: streams))
        let replay = try RoomReplay(sources: streams.map { ArraySource(id: $0.id, samples: $0.samples) })
        #expect(replay.streamIDs == ["talker", "short", "noise"])
        #expect(replay.tickCount == streams.map(\.hopCount).max())
        let sources = Self.run(replay)
        #expect(replay.sourceFailure == nil)
        #expect(!arrays.events.isEmpty)
        #expect(sources == arrays)
    }

    @Test func aFailingSourceIsReportedWithItsStreamAndPlaysZeros() throws {
        let noise = Synthesis.noise(seconds: 0.1, levelDBFS: -35, seed: 8)
        let replay = try RoomReplay(sources: [
            ArraySource(id: "good", samples: noise), ArraySource(id: "bad", samples: noise, failAt: 500),
        ])
        replay.tick()
        replay.tick()
        replay.tick()
        #expect(replay.sourceFailure == nil)
        replay.tick()  // samples 480..<640 reach 500
        let failure = try #require(replay.sourceFailure)
        #expect(failure.stream == 1)
        #expect(failure.error is ArraySource.Failure)
        while !replay.isAtEnd { replay.tick() }  // the rest plays (zeros) without trapping
        #expect(replay.sourceFailure?.stream == 1)
    }

    /// Sources read on the engine's two threads (one room of 40 streams, its analysis split between them) play
    /// like arrays on one; a source that fails there is reported as it is on one thread.
    @Test func sourcesReadOnTheEngineThreadsPlayLikeArrays() throws {
        let talker = try TestAudio.speech("hello there, how are you", voice: "en-us")
        let streams = (0..<40).map { index in
            ReplayStream(
                id: "s\(index)",
                samples: index % 10 == 3 ? talker : Synthesis.noise(seconds: 1 + Double(index) / 20, levelDBFS: -45, seed: UInt64(index)))
        }
        let arrays = Self.run(try RoomReplay(streams: streams))
        let replay = try RoomReplay(
            sources: streams.map { ArraySource(id: $0.id, samples: $0.samples, readsIndependently: true) }, workers: 2)
        let sources = Self.run(replay)
        #expect(replay.sourceFailure == nil)
        #expect(arrays.events.contains { if case .speech(_, true, _, _) = $0 { true } else { false } })
        #expect(sources == arrays)

        let failing = try RoomReplay(
            sources: streams.indices.map { index in
                ArraySource(id: "s\(index)", samples: streams[index].samples, failAt: index == 33 ? 500 : nil, readsIndependently: true)
            }, workers: 2)
        for _ in 0..<3 { failing.tick() }
        #expect(failing.sourceFailure == nil)
        failing.tick()  // samples 480..<640 reach 500
        let failure = try #require(failing.sourceFailure)
        #expect(failure.stream == 33)
        #expect(failure.error is ArraySource.Failure)
        while !failing.isAtEnd { failing.tick() }
        #expect(failing.sourceFailure?.stream == 33)
    }

    @Test(arguments: ["m1-clean", "m3-music"])
    func aMeetingDecodedAsItPlaysGivesTheSameDecisions(meeting: String) throws {
        let folder = FixturePaths.file("meetings/\(meeting)")
        let paths = try FileManager.default.contentsOfDirectory(atPath: folder)
            .filter { $0.hasSuffix(".flac") || $0.hasSuffix(".wav") }.sorted().map { "\(folder)/\($0)" }
        try #require(!paths.isEmpty)
        let whole = try loadStreams(paths: paths)
        let arrays = Self.run(try RoomReplay(streams: whole.map { ReplayStream(id: $0.id, samples: $0.samples) }))
        let sources = try paths.flatMap { path -> [ReaderSource] in
            let reader = try FileStreamReader(path: path)
            let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            return (0..<reader.streamCount).map { ReaderSource(id: "\(name)-\($0)", reader: reader, stream: $0) }
        }
        let replay = try RoomReplay(sources: sources)
        let streamed = Self.run(replay)
        #expect(replay.sourceFailure == nil)
        #expect(streamed.events.count > 10)
        #expect(streamed == arrays)
    }
}

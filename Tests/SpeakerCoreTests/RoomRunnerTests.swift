import CAllocationCounter
import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// A test source: hop `n` is samples `[160n, 160n + 160)` of room time (silence past them), `.ended` from
/// `endTick` on; it notes the first and last tick it was pulled for.
final class SignalHops: HopSource {
    let samples: [Float]
    var endTick: Int?
    private(set) var firstTick: Int?
    private(set) var lastTick: Int?

    init(_ samples: [Float], endTick: Int? = nil) {
        self.samples = samples
        self.endTick = endTick
    }

    func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        if firstTick == nil { firstTick = tick }
        lastTick = tick
        if let endTick, tick >= endTick { return .ended }
        let start = tick * AnalysisFormat.hopSize
        guard start + AnalysisFormat.hopSize <= samples.count else { return .silence }
        samples.withUnsafeBufferPointer { samples in
            _ = hop.update(fromContentsOf: UnsafeBufferPointer(rebasing: samples[start..<start + AnalysisFormat.hopSize]))
        }
        return .audio
    }
}

/// A test source the engine reads on its threads (`ConcurrentHopSource`): the hops of `SignalHops` (silence past
/// the samples), none from `endTick` on. It notes the threads that read it and whether it was ever pulled.
final class ConcurrentSignalHops: ConcurrentHopSource {
    let samples: [Float]
    let endTick: Int
    let readsConcurrently: Bool
    /// The thread of each read, by tick (each tick is read once, by one thread).
    private(set) var readers: [pthread_t?]
    private(set) var pulls = 0

    init(_ samples: [Float], endTick: Int, readsConcurrently: Bool = true) {
        self.samples = samples
        self.endTick = endTick
        self.readsConcurrently = readsConcurrently
        readers = Array(repeating: nil, count: endTick)
    }

    func hasHop(tick: Int) -> Bool { tick < endTick }

    /// True when the tick is inside the samples (silence past them).
    func read(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> Bool {
        readers[tick] = pthread_self()
        let start = tick * AnalysisFormat.hopSize
        guard start + AnalysisFormat.hopSize <= samples.count else {
            hop.update(repeating: 0)
            return false
        }
        samples.withUnsafeBufferPointer { samples in
            _ = hop.update(fromContentsOf: UnsafeBufferPointer(rebasing: samples[start..<start + AnalysisFormat.hopSize]))
        }
        return true
    }

    func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        pulls += 1
        guard hasHop(tick: tick) else { return .ended }
        return read(tick: tick, into: hop) ? .audio : .silence
    }
}

/// A level-only test source: one RFC 6464 level per tick, without the V flag.
final class LevelHops: HopSource {
    let levels: [UInt8]

    init(_ levels: [UInt8]) { self.levels = levels }

    func pull(tick: Int, into hop: UnsafeMutableBufferPointer<Float>) -> HopPull {
        tick < levels.count ? .level(AudioLevel(level: levels[tick], voice: false)) : .silence
    }
}

/// `RoomRunner`: one room's sources pulled each tick, events by source index.
@Suite struct RoomRunnerTests {
    static let quiet = Synthesis.noise(seconds: 4, levelDBFS: -65, seed: 9)
    /// Background noise, then from 0.5 s a voice (as `EngineTests` has its talkers).
    static func talker(f0: Double, seed: UInt64) -> [Float] {
        var signal = Synthesis.noise(seconds: 4, levelDBFS: -65, seed: seed + 100)
        Synthesis.add(Synthesis.voice(seconds: 3.5, f0: f0, levelDBFS: -22, seed: seed), into: &signal, at: 0.5)
        return signal
    }
    static let voice = talker(f0: 130, seed: 2)
    static let otherVoice = talker(f0: 210, seed: 4)

    static func events(_ runner: RoomRunner) -> [RoomRunner.Event] {
        var events: [RoomRunner.Event] = []
        runner.consumeEvents { events.append($0) }
        return events
    }

    @Test func eventsNameTheSourceThatMadeThem() throws {
        let signals = [Self.quiet, Self.voice, Self.quiet, Self.otherVoice]
        // The engine driven directly, as the reference.
        let engine = try Engine()
        let room = engine.addRoom(name: "room")
        let ids = signals.indices.map { engine.addStream(name: "s\($0)", room: room) }
        var expected: [RoomRunner.Event] = []
        let runner = try RoomRunner(roomName: "room")
        for (index, signal) in signals.enumerated() {
            #expect(runner.add(SignalHops(signal), name: "s\(index)") == index)
        }
        var got: [RoomRunner.Event] = []
        for tick in 0..<350 {
            for (index, signal) in signals.enumerated() {
                signal.withUnsafeBufferPointer { engine.submit(UnsafeBufferPointer(rebasing: $0[tick * 160..<(tick + 1) * 160]), to: ids[index]) }
            }
            engine.tick()
            engine.consumeEvents { event in
                switch event {
                case .speech(let stream, let active, let time, let since):
                    expected.append(.speech(stream: ids.firstIndex(of: stream)!, active: active, time: time, since: since))
                case .dominant(_, let stream, let time):
                    expected.append(.dominant(stream: stream.map { ids.firstIndex(of: $0)! }, time: time))
                }
            }
            runner.tick()
            got += Self.events(runner)
        }
        #expect(runner.ticks == 350)
        #expect(got == expected)
        #expect(got.contains { if case .speech(1, true, _, _) = $0 { true } else { false } })
        #expect(got.contains { if case .speech(3, true, _, _) = $0 { true } else { false } })
        #expect(!got.contains { if case .speech(0, _, _, _) = $0 { true } else { false } }, "the quiet streams never speak")
        #expect(runner.names == ["s0", "s1", "s2", "s3"])
    }

    /// Ticks `runner` until source `index` speaks and holds the floor (at most 350 ticks), keeping the events.
    static func tickUntilSpeakingWithTheFloor(_ runner: RoomRunner, _ index: Int, events: inout [RoomRunner.Event]) throws {
        var floor: Int?
        for _ in 0..<350 {
            runner.tick()
            for event in Self.events(runner) {
                events.append(event)
                if case .dominant(let stream, _) = event { floor = stream }
            }
            if runner.ticks > 100, floor == index, runner.engine.isSpeaking(runner.handle(of: index)!) { return }
        }
        Issue.record("source \(index) never spoke holding the floor: \(events)")
        throw CancellationError()
    }

    @Test func sourcesComeAndGoBetweenTicks() throws {
        let runner = try RoomRunner(roomName: "room")
        let alice = SignalHops(Self.voice)
        #expect(runner.add(SignalHops(Self.quiet), name: "quiet") == 0)
        #expect(runner.add(alice, name: "alice") == 1)
        var events: [RoomRunner.Event] = []
        try Self.tickUntilSpeakingWithTheFloor(runner, 1, events: &events)
        // Bob joins now: his first pull is for the next tick.
        let joined = runner.ticks
        let bob = SignalHops(Self.otherVoice)
        #expect(runner.add(bob, name: "bob") == 2)
        runner.tick()
        #expect(bob.firstTick == joined)
        _ = Self.events(runner)
        // Alice leaves between ticks; if she is speaking, her utterance ends at the end of the last tick.
        let speaking = runner.engine.isSpeaking(runner.handle(of: 1)!)
        let left = runner.ticks
        runner.remove(1)
        let removal = Self.events(runner)
        if speaking {
            #expect(removal.contains { if case .speech(1, false, let time, _) = $0 { abs(time - Double(left) / 100) < 1e-9 } else { false } }, "\(removal)")
        }
        #expect(!runner.isPresent(1))
        #expect(runner.handle(of: 1) == nil)
        #expect(runner.level(of: 1) == nil)
        #expect(runner.presentSources == [0, 2])
        #expect(runner.statistics(of: 1).speechTime > 0)
        runner.remove(1)  // again: nothing
        for _ in 0..<20 { runner.tick() }
        #expect(alice.lastTick == left - 1, "not pulled after its removal")
        #expect(bob.lastTick == left + 19)
        let later = Self.events(runner)
        #expect(!later.contains { if case .speech(1, _, _, _) = $0 { true } else { false } })
        runner.finish()
        #expect(runner.presentSources.isEmpty)
    }

    @Test func aSourceThatEndsIsRemovedAndItsUtteranceEnds() throws {
        let runner = try RoomRunner(roomName: "room")
        let ending = SignalHops(Self.voice)
        runner.add(SignalHops(Self.quiet), name: "quiet")
        runner.add(ending, name: "ending")
        var events: [RoomRunner.Event] = []
        try Self.tickUntilSpeakingWithTheFloor(runner, 1, events: &events)
        // The next tick, the source pulls .ended; it is removed before the engine runs the tick, and its
        // utterance and the floor end at the end of its last hop.
        let endTick = runner.ticks
        ending.endTick = endTick
        runner.tick()
        let end = Self.events(runner)
        let first = try #require(end.first)
        guard case .speech(1, false, let time, let since) = first else {
            Issue.record("expected the end of the source's utterance first, got \(end)")
            return
        }
        #expect(abs(time - Double(endTick) / 100) < 1e-9)
        #expect(since <= time)
        #expect(end.contains { if case .dominant(nil, let time) = $0 { abs(time - Double(endTick) / 100) < 1e-9 } else { false } })
        #expect(!runner.isPresent(1))
        #expect(runner.presentSources == [0])
        for _ in 0..<10 { runner.tick() }
        #expect(ending.lastTick == endTick)
        runner.finish()
        #expect(runner.presentSources.isEmpty)
    }

    @Test func levelSourcesGiveLevelsWithoutAVoiceFlagTheSenderNeverSets() throws {
        let talker = LevelStreamTests.talker(seconds: 6, quiet: 70, talks: [(1, 3.5)], seed: 1)
        let engine = try Engine()
        let room = engine.addRoom(name: "levels")
        let id = engine.addLevelStream(name: "talker", room: room)
        var expected: [EngineEvent] = []
        for level in talker {
            engine.submitLevel(level, voiceActivity: nil, to: id)
            engine.tick()
            engine.consumeEvents { expected.append($0) }
        }
        let runner = try RoomRunner(roomName: "levels")
        runner.add(LevelHops(talker), name: "talker", levels: true)
        var got: [RoomRunner.Event] = []
        for _ in talker.indices {
            runner.tick()
            got += Self.events(runner)
        }
        #expect(!got.isEmpty)
        #expect(got.count == expected.count)
        for (event, reference) in zip(got, expected) {
            #expect(event.time == reference.time)
        }
    }

    /// Sources the engine reads on its worker threads decide exactly as the same audio submitted by the runner,
    /// ending where their hops end; the two workers each read their share of one large room.
    @Test func sourcesReadOnTheWorkersDecideAsPulledOnes() throws {
        // 40 streams in one room: more than a worker's even share, so the two workers split its analysis.
        let signals = (0..<40).map { index in
            index % 8 == 1 ? Self.talker(f0: 100 + 10 * Double(index), seed: UInt64(index)) : Self.quiet
        }
        let ends = signals.indices.map { 250 + 3 * $0 }
        let pulled = try RoomRunner(roomName: "room")
        let read = try RoomRunner(roomName: "room", workers: 2)
        var sources: [ConcurrentSignalHops] = []
        for (index, signal) in signals.enumerated() {
            pulled.add(SignalHops(signal, endTick: ends[index]), name: "s\(index)")
            let source = ConcurrentSignalHops(signal, endTick: ends[index])
            sources.append(source)
            read.add(source, name: "s\(index)")
        }
        var expected: [RoomRunner.Event] = [], got: [RoomRunner.Event] = []
        for _ in 0..<400 {
            pulled.tick()
            expected += Self.events(pulled)
            read.tick()
            got += Self.events(read)
        }
        #expect(got == expected)
        #expect(expected.contains { if case .speech(_, true, _, _) = $0 { true } else { false } })
        #expect(read.presentSources.isEmpty, "every source ended")
        #expect(sources.allSatisfy { $0.pulls == 0 && $0.readers.allSatisfy { $0 != nil } })
        let threads = Set(sources.flatMap { $0.readers.map { UInt($0!) } })
        #expect(threads.count == 2, "both workers read: \(threads.count) threads")
    }

    /// Sources added and removed in any order, and ending during ticks: the runner walks exactly the present
    /// ones, in the order they were added, and `finish()` removes the rest.
    @Test func presentSourcesFollowChurn() throws {
        let runner = try RoomRunner(roomName: "room")
        var sources: [Int: SignalHops] = [:]
        var expected: [Int] = []
        for round in 0..<20 {
            for offset in 0..<5 {
                let ending = offset == 2 ? runner.ticks + 1 : nil  // ends in the next tick but one
                let source = SignalHops(Self.quiet, endTick: ending)
                let index = runner.add(source, name: "r\(round)-\(offset)")
                sources[index] = source
                if ending == nil { expected.append(index) }
            }
            for index in expected where index % 3 == round % 3 {
                runner.remove(index)
            }
            expected.removeAll { !runner.isPresent($0) }
            runner.tick()
            runner.tick()
            #expect(runner.presentSources == expected)
        }
        for (index, source) in sources where source.endTick == nil {
            #expect((source.lastTick == runner.ticks - 1) == expected.contains(index), "source \(index)")
        }
        runner.finish()
        #expect(runner.presentSources.isEmpty)
        #expect(sources.keys.allSatisfy { !runner.isPresent($0) && runner.statistics(of: $0).speechTime == 0 })
    }

    /// A source that cannot be read alongside others (`readsConcurrently` false) is pulled as any other.
    @Test func aSourceThatCannotBeReadConcurrentlyIsPulled() throws {
        let runner = try RoomRunner(roomName: "room", workers: 2)
        let source = ConcurrentSignalHops(Self.voice, endTick: 100, readsConcurrently: false)
        runner.add(source, name: "shared")
        for _ in 0..<101 { runner.tick() }
        #expect(source.pulls == 101)
        #expect(!runner.isPresent(0))
    }

    @Test func aTickAllocatesNothingAfterWarmUp() throws {
        let runner = try RoomRunner(roomName: "room")
        let voices = (0..<4).map { Synthesis.voice(seconds: 3, f0: 100 + 40 * Double($0), levelDBFS: -25, seed: UInt64($0)) }
        for (index, voice) in voices.enumerated() { runner.add(SignalHops(voice), name: "s\(index)") }
        runner.add(ConcurrentSignalHops(voices[0], endTick: 400), name: "read")
        runner.add(LevelHops((0..<300).map { UInt8(30 + $0 % 20) }), name: "levels", levels: true)
        var eventCount = 0
        var allocations = 0
        func run(_ ticks: Int) {
            for _ in 0..<ticks {
                let before = allocation_counter_current_thread()
                runner.tick()
                runner.consumeEvents { _ in eventCount += 1 }
                allocations += allocation_counter_current_thread() - before
            }
        }
        run(20)
        allocations = 0
        eventCount = 0
        run(270)
        #expect(allocations == 0)
        #expect(eventCount > 0)  // the measured ticks made decisions
    }
}

extension RoomRunner.Event {
    var time: Double {
        switch self {
        case .speech(_, _, let time, _), .dominant(_, let time): time
        }
    }
}

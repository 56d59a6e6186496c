import Testing
import TestSupport
@testable import SpeakerCore

/// The engine's bookkeeping: rooms, streams, rankings and statistics.
@Suite struct EngineTests {
    static func feed(_ engine: Engine, _ signals: [(StreamID, [Float])], frames: Range<Int>) -> [EngineEvent] {
        var events: [EngineEvent] = []
        for frame in frames {
            for (id, signal) in signals where (frame + 1) * 160 <= signal.count {
                signal.withUnsafeBufferPointer { engine.submit(UnsafeBufferPointer(rebasing: $0[frame * 160..<(frame + 1) * 160]), to: id) }
            }
            engine.tick()
            engine.consumeEvents { events.append($0) }
        }
        return events
    }

    @Test func roomsAreIndependent() throws {
        let engine = try Engine()
        let first = engine.addRoom(name: "first"), second = engine.addRoom(name: "second")
        let a = engine.addStream(name: "a", room: first)
        let b = engine.addStream(name: "b", room: second)
        var voiceA = Synthesis.noise(seconds: 4, levelDBFS: -60, seed: 1)
        Synthesis.add(Synthesis.voice(seconds: 3, f0: 120, levelDBFS: -25, seed: 2), into: &voiceA, at: 0.5)
        var voiceB = Synthesis.noise(seconds: 4, levelDBFS: -60, seed: 3)
        Synthesis.add(Synthesis.voice(seconds: 3, f0: 200, levelDBFS: -25, seed: 4), into: &voiceB, at: 0.5)
        let events = Self.feed(engine, [(a, voiceA), (b, voiceB)], frames: 0..<300)
        // Both speak at once, each is the dominant speaker of its own room.
        #expect(engine.dominantSpeaker(in: first) == a)
        #expect(engine.dominantSpeaker(in: second) == b)
        #expect(events.contains(.dominant(room: second, stream: b, time: events.first { if case .dominant(let r, _, _) = $0 { return r == second } else { return false } }!.time)))
        #expect(engine.streams(in: first) == [a] && engine.name(of: second) == "second")
    }

    @Test func activeSpeakersAreRankedByLevel() throws {
        let engine = try Engine()
        let room = engine.addRoom(name: "r")
        let ids = ["quiet", "loud", "silent"].map { engine.addStream(name: $0, room: room) }
        var quiet = Synthesis.noise(seconds: 2, levelDBFS: -60, seed: 5)
        Synthesis.add(Synthesis.voice(seconds: 1.8, f0: 120, levelDBFS: -35, seed: 6), into: &quiet, at: 0.1)
        var loud = Synthesis.noise(seconds: 2, levelDBFS: -60, seed: 7)
        Synthesis.add(Synthesis.voice(seconds: 1.8, f0: 220, levelDBFS: -20, seed: 8), into: &loud, at: 0.1)
        let silent = Synthesis.noise(seconds: 2, levelDBFS: -60, seed: 9)
        _ = Self.feed(engine, [(ids[0], quiet), (ids[1], loud), (ids[2], silent)], frames: 0..<150)
        let ranked = engine.activeSpeakers(in: room)
        #expect(ranked.map(\.stream) == [ids[1], ids[0]])
        #expect(ranked[0].level > ranked[1].level + 10)
        #expect(abs(engine.level(of: ids[2]) - (-60)) < 2)
    }

    @Test func statisticsCountSpeechAndFloor() throws {
        let engine = try Engine()
        let room = engine.addRoom(name: "r")
        let a = engine.addStream(name: "a", room: room)
        var signal = Synthesis.noise(seconds: 6, levelDBFS: -60, seed: 10)
        Synthesis.add(Synthesis.voice(seconds: 1.5, f0: 130, levelDBFS: -25, seed: 11), into: &signal, at: 0.5)
        Synthesis.add(Synthesis.voice(seconds: 1.5, f0: 130, levelDBFS: -25, seed: 12), into: &signal, at: 3.5)
        _ = Self.feed(engine, [(a, signal)], frames: 0..<600)
        let statistics = engine.removeStream(a)
        #expect(statistics.utterances == 2)
        #expect(abs(statistics.speechTime - 3.6) < 0.4)  // 2 × 1.5 s plus hangovers
        #expect(statistics.turns == 2)  // nobody in between (silence > 1 s)
        // Held from ≈ 0.7 s until 1 s after each utterance: ≈ 0.7–3.0 s and ≈ 3.7–6.0 s.
        #expect(statistics.dominantTime > 4.2 && statistics.dominantTime < 4.9)
    }

    @Test func removingASpeakingHolderEndsItsSpeechAndReleasesTheFloor() throws {
        let engine = try Engine()
        let room = engine.addRoom(name: "r")
        let a = engine.addStream(name: "a", room: room)
        var signal = Synthesis.noise(seconds: 2, levelDBFS: -60, seed: 13)
        Synthesis.add(Synthesis.voice(seconds: 1.9, f0: 130, levelDBFS: -25, seed: 14), into: &signal, at: 0.1)
        _ = Self.feed(engine, [(a, signal)], frames: 0..<150)
        #expect(engine.isSpeaking(a) && engine.dominantSpeaker(in: room) == a)
        engine.removeStream(a)
        var events: [EngineEvent] = []
        engine.consumeEvents { events.append($0) }
        #expect(events.count == 2)
        if case .speech(let stream, let active, let time, let since) = events[0] {
            #expect(stream == a && !active && time == 1.5 && since <= time)
        } else {
            Issue.record("expected a speech end, got \(events)")
        }
        #expect(events[1] == .dominant(room: room, stream: nil, time: 1.5))
        #expect(engine.dominantSpeaker(in: room) == nil)
    }
}

/// Several worker threads give the same decisions as one.
@Suite struct WorkerTests {
    /// Six rooms of three synthetic talkers each, run for 4 s; events sorted by time then room/stream.
    static func run(workers: Int) throws -> [EngineEvent] {
        let engine = try Engine(workers: workers)
        var signals: [(StreamID, [Float])] = []
        for room in 0..<6 {
            let id = engine.addRoom(name: "room\(room)")
            for talker in 0..<3 {
                let seed = UInt64(room * 10 + talker)
                var signal = Synthesis.noise(seconds: 4, levelDBFS: -58, seed: seed)
                Synthesis.add(
                    Synthesis.voice(seconds: 1.2, f0: 100 + 50 * Double(talker), levelDBFS: -26, seed: seed + 100),
                    into: &signal, at: 0.3 + 1.2 * Double(talker))
                signals.append((engine.addStream(name: "r\(room)t\(talker)", room: id), signal))
            }
        }
        return EngineTests.feed(engine, signals, frames: 0..<400)
    }

    static func key(_ event: EngineEvent) -> String {
        switch event {
        case .speech(let stream, let active, let time, let since): "\(time) s \(stream.rawValue) \(active) \(since)"
        case .dominant(let room, let stream, let time): "\(time) d \(room.rawValue) \(stream?.rawValue ?? -1)"
        }
    }

    @Test func twoWorkersDecideLikeOne() throws {
        let one = try Self.run(workers: 1), two = try Self.run(workers: 2)
        #expect(one.count > 30)
        #expect(one.map(Self.key).sorted() == two.map(Self.key).sorted())
        // Events come out in time order across the workers' shards.
        #expect(zip(two, two.dropFirst()).allSatisfy { $0.time <= $1.time })
    }

    /// One room of 40 talkers beside two small rooms: the workers share its analysis (two phases a
    /// tick) and decide exactly as one worker does. When the large room goes, one phase again.
    @Test(arguments: [2, 3])
    func aRoomTooLargeForOneWorkerIsSharedAndDecidesLikeOne(workers: Int) throws {
        func run(_ workers: Int) throws -> (events: [EngineEvent], twoPhases: Bool, after: Bool) {
            let engine = try Engine(workers: workers)
            var signals: [(StreamID, [Float])] = []
            let large = engine.addRoom(name: "large")
            for talker in 0..<40 {
                let seed = UInt64(500 + talker)
                var signal = Synthesis.noise(seconds: 3, levelDBFS: -58, seed: seed)
                Synthesis.add(
                    Synthesis.voice(seconds: 0.6, f0: 90 + 5 * Double(talker), levelDBFS: -26, seed: seed + 100),
                    into: &signal, at: 0.05 * Double(talker))
                signals.append((engine.addStream(name: "l\(talker)", room: large), signal))
            }
            for room in 0..<2 {
                let id = engine.addRoom(name: "small\(room)")
                for talker in 0..<2 {
                    let seed = UInt64(600 + 10 * room + talker)
                    var signal = Synthesis.noise(seconds: 3, levelDBFS: -58, seed: seed)
                    Synthesis.add(Synthesis.voice(seconds: 1, f0: 120 + 60 * Double(talker), levelDBFS: -26, seed: seed + 100), into: &signal, at: 0.3 + 1.3 * Double(talker))
                    signals.append((engine.addStream(name: "s\(room)\(talker)", room: id), signal))
                }
            }
            let events = EngineTests.feed(engine, signals, frames: 0..<280)
            let twoPhases = engine.isSharingAnalysis
            engine.removeRoom(large)
            engine.tick()
            return (events, twoPhases, engine.isSharingAnalysis)
        }
        let one = try run(1), several = try run(workers)
        #expect(one.events.count > 40)
        #expect(one.events.map(Self.key).sorted() == several.events.map(Self.key).sorted())
        #expect(!one.twoPhases && several.twoPhases && !several.after)
    }

    @Test func invalidWorkerCountIsRefused() {
        #expect(throws: ConfigurationError.self) { try Engine(workers: 0) }
    }
}

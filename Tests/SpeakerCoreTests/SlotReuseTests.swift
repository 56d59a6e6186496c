import Testing
import TestSupport
@testable import SpeakerCore

/// The engine reuses the slots of removed streams and rooms (a server's joins over weeks), and an id
/// of a removed stream or room never names a later one.
@Suite struct SlotReuseTests {
    @Test func theAllocatorHandsOutFreedSlotsWithANewGeneration() {
        var slots = SlotAllocator()
        let a = slots.take(), b = slots.take()
        #expect(a == (0, 0) && b == (1, 0))
        slots.free(0)
        #expect(slots.inUse == 1 && slots.capacity == 2)
        let c = slots.take()
        #expect(c == (0, 1))
        #expect(slots.take() == (2, 0))
        #expect(slots.capacity == 3 && slots.inUse == 3)
    }

    @Test func joinsAndLeavesKeepTheEngineAsLargeAsItsBusiestMoment() throws {
        let engine = try Engine()
        let rooms = (0..<4).map { engine.addRoom(name: "room\($0)") }
        var present: [StreamID] = []
        var seen = Set<StreamID>()
        let hop = [Float](repeating: 0.001, count: AnalysisFormat.hopSize)
        // 10,000 joins, never more than 12 streams at once, with ticks in between.
        for join in 0..<10_000 {
            if present.count == 12 { engine.removeStream(present.removeFirst()) }
            let id = engine.addStream(name: "s\(join)", room: rooms[join % 4])
            #expect(!seen.contains(id), "\(id) given twice")
            seen.insert(id)
            present.append(id)
            if join % 10 == 0 {
                for stream in present { hop.withUnsafeBufferPointer { engine.submit($0, to: stream) } }
                engine.tick()
                engine.consumeEvents { _ in }
            }
        }
        #expect(engine.streamCount == 12)
        #expect(engine.streamCapacity == 12)
        #expect(Set(rooms.flatMap { engine.streams(in: $0) }) == Set(present))
        // Rooms too.
        for room in rooms { engine.removeRoom(room) }
        let again = engine.addRoom(name: "again")
        #expect(again.rawValue < 4 && again.generation == 1)
        #expect(engine.roomCount == 1 && engine.streamCount == 0)
        #expect(!rooms.contains(again))
    }

    /// A stream added in a removed holder's slot starts afresh: it inherits neither the floor nor speech.
    @Test func aReusedSlotStartsAfresh() throws {
        let engine = try Engine()
        let room = engine.addRoom(name: "r")
        let a = engine.addStream(name: "a", room: room)
        let quiet = engine.addStream(name: "quiet", room: room)
        var signal = Synthesis.noise(seconds: 2, levelDBFS: -60, seed: 13)
        Synthesis.add(Synthesis.voice(seconds: 1.9, f0: 130, levelDBFS: -25, seed: 14), into: &signal, at: 0.1)
        let noise = Synthesis.noise(seconds: 3, levelDBFS: -60, seed: 15)
        _ = EngineTests.feed(engine, [(a, signal), (quiet, noise)], frames: 0..<150)
        #expect(engine.dominantSpeaker(in: room) == a)
        engine.removeStream(a)
        let b = engine.addStream(name: "b", room: room)
        #expect(b.rawValue == a.rawValue && b != a)
        #expect(!engine.isSpeaking(b) && engine.statistics(of: b).utterances == 0)
        let events = EngineTests.feed(engine, [(b, noise), (quiet, noise)], frames: 0..<100)
        #expect(engine.dominantSpeaker(in: room) == nil)
        #expect(!events.contains { if case .speech(let stream, true, _, _) = $0 { stream == b } else { false } })
        #expect(engine.name(of: b) == "b")
    }

    /// Using a removed stream's id is a programming error the engine stops on, even when its slot has
    /// been given to another stream.
    @Test func aRemovedStreamsIdIsRefusedEvenWhenItsSlotIsReused() async {
        await #expect(processExitsWith: .failure) {
            let engine = try! Engine()
            let room = engine.addRoom(name: "r")
            let a = engine.addStream(name: "a", room: room)
            engine.removeStream(a)
            _ = engine.addStream(name: "b", room: room)
            _ = engine.name(of: a)
        }
    }
}

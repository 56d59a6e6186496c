import CAllocationCounter
import Testing
import TestSupport
@testable import SpeakerCore

/// The per-frame path allocates nothing once warm.
@Suite struct RealTimeSafetyTests {
    @Test(arguments: [1, 2])
    func tickAllocatesNothingAfterWarmUp(workers: Int) throws {
        // With two workers this counts the calling thread, which works one of the two shards.
        let engine = try Engine(workers: workers)
        let room = engine.addRoom(name: "r")
        _ = engine.addRoom(name: "second room, for the other worker")
        let voices = (0..<4).map { Synthesis.voice(seconds: 3, f0: 100 + 40 * Double($0), levelDBFS: -25, seed: UInt64($0)) }
        let ids = (0..<4).map { engine.addStream(name: "s\($0)", room: room) }
        let levels = engine.addLevelStream(name: "levels", room: room)
        let submitLevel = { (frame: Int) in engine.submitLevel(UInt8(30 + frame % 20), to: levels) }
        var eventCount = 0
        var engineAllocations = 0
        /// Counts only what the engine's calls allocate, not the test's own loop.
        func counted(_ body: () -> Void) {
            let before = allocation_counter_current_thread()
            body()
            engineAllocations += allocation_counter_current_thread() - before
        }
        func run(_ frames: Range<Int>) {
            for frame in frames {
                for index in 0..<voices.count where index != frame % 5 {
                    voices[index].withUnsafeBufferPointer { samples in
                        let hop = UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160])
                        counted { engine.submit(hop, to: ids[index]) }
                    }
                }
                counted { submitLevel(frame) }
                counted { engine.tick() }
                counted { engine.consumeEvents { _ in eventCount += 1 } }
            }
        }
        run(0..<20)
        engineAllocations = 0
        eventCount = 0
        run(20..<290)
        #expect(engineAllocations == 0)
        #expect(eventCount > 0)  // the measured ticks did real work and made decisions
        #expect(engine.soundClasses(of: ids[0]) != SoundClasses())  // and asked the sound classifier
    }

    @Test func theCounterSeesAllocations() {
        // Shows the test above can fail: an array allocation is counted.
        let before = allocation_counter_current_thread()
        let array = [Int](repeating: 1, count: 1000 + Int(before % 2))
        let after = allocation_counter_current_thread()
        #expect(array.count >= 1000)
        #expect(after - before >= 1)
    }
}

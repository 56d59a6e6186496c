import CAllocationCounter
import Testing
import TestSupport
import SpeakerCore
@testable import SpeakerEval

/// The baseline floor policies allocate nothing per tick once every stream has been seen, in the
/// engine and on their own.
@Suite struct BaselineRealTimeSafetyTests {
    @Test(arguments: BaselinePolicy.allCases)
    func engineTickAllocatesNothingAfterWarmUp(kind: BaselinePolicy) throws {
        var configuration = EngineConfiguration()
        configuration.selection.policy = kind.rawValue
        let engine = try Engine(configuration: configuration, policies: .withBaselines)
        let room = engine.addRoom(name: "r")
        // Talkers take turns of about a second so that every policy changes its holder while measured.
        let voices = (0..<4).map { index in
            Synthesis.voice(seconds: 8, f0: 100 + 40 * Double(index), levelDBFS: -25, seed: UInt64(index))
        }
        let ids = (0..<4).map { engine.addStream(name: "s\($0)", room: room) }
        var allocations = 0
        var dominantEvents = 0
        func counted(_ body: () -> Void) {
            let before = allocation_counter_current_thread()
            body()
            allocations += allocation_counter_current_thread() - before
        }
        func run(_ frames: Range<Int>) {
            for frame in frames {
                let talker = (frame / 100) % voices.count
                voices[talker].withUnsafeBufferPointer { samples in
                    let hop = UnsafeBufferPointer(rebasing: samples[frame * 160..<(frame + 1) * 160])
                    counted { engine.submit(hop, to: ids[talker]) }
                }
                counted { engine.tick() }
                counted {
                    engine.consumeEvents { event in
                        if case .dominant = event { dominantEvents += 1 }
                    }
                }
            }
        }
        // Warm up through two talkers' turns: every stream has ticked, and the first utterances have
        // started (the process's first speech onset makes the runtime's one-time type metadata; with the
        // sound classifier, which waits for a little context, that onset comes after frame 20).
        run(0..<200)
        allocations = 0
        dominantEvents = 0
        run(200..<790)
        #expect(allocations == 0)
        #expect(dominantEvents > 0, "the measured ticks changed the holder")
    }
}

import CAllocationCounter
import Testing
@testable import SpeakerCore

/// The per-room decision stage on its own: scripted evidence in, events out.
@Suite struct RoomDecisionTests {
    /// A room of `count` talkers (slots 0…count−1) deciding with `configuration`.
    struct Room {
        let decision: RoomDecision
        let talkers: [Talker]
        var frame = 0
        var events: [EngineEvent] = []

        init(_ count: Int, configuration: EngineConfiguration = EngineConfiguration()) {
            decision = RoomDecision(
                room: RoomID(rawValue: 0, generation: 0), policy: HysteresisPolicy(configuration: configuration.selection),
                settings: RoomDecision.Settings(configuration))
            talkers = (0..<count).map {
                Talker(id: StreamID(rawValue: $0, generation: 0), initialSpeechLevel: configuration.leakage.initialSpeechLevel)
            }
            for (slot, talker) in talkers.enumerated() { decision.add(talker, slot: slot) }
        }

        /// Plays `frames` frames; `excess(talker, frame)` gives each talker's speech-band energy
        /// (dBFS), or nil for a frame without speech evidence (the noise floor, −70 dBFS).
        mutating func play(_ frames: Int, _ excess: (Int, Int) -> Float?) {
            for _ in 0..<frames {
                for (index, talker) in talkers.enumerated() {
                    let value = excess(index, frame)
                    talker.hear(voiced: value != nil, continues: value != nil, excess: value ?? -70, level: value == nil ? 70 : 30)
                }
                decision.decide(frame: frame, events: &events)
                frame += 1
            }
        }

        /// The speech events of a talker: (active, time, since).
        func speech(of index: Int) -> [(Bool, Double, Double)] {
            events.compactMap {
                if case .speech(let stream, let active, let time, let since) = $0, stream.rawValue == index {
                    return (active, time, since)
                }
                return nil
            }
        }

        /// The floor changes: (holder slot or nil, time).
        var floorChanges: [(Int?, Double)] {
            events.compactMap {
                if case .dominant(_, let stream, let time) = $0 { return (stream?.rawValue, time) }
                return nil
            }
        }
    }

    @Test func aVoiceStartsAnUtteranceTakesTheFloorAndLeavingEndsBoth() throws {
        var room = Room(2)
        room.play(10) { _, _ in nil }
        room.play(100) { talker, _ in talker == 0 ? -30 : nil }
        // 3 voiced frames of 5 start the utterance, dated to the first (frame 10 → 0.10 s), decided
        // at the end of frame 12.
        let start = try #require(room.speech(of: 0).first)
        #expect(start.0 && abs(start.1 - 0.13) < 1e-9 && abs(start.2 - 0.10) < 1e-9)
        // From nobody, 0.2 s of speech (frames 10…29) take the floor at the end of frame 29.
        let taken = try #require(room.floorChanges.first)
        #expect(taken.0 == 0 && abs(taken.1 - 0.30) < 1e-9)
        #expect(room.decision.holder === room.talkers[0])
        #expect(room.talkers[0].statistics.turns == 1 && room.talkers[0].statistics.utterances == 1)
        #expect(abs(room.talkers[0].statistics.dominantTime - 0.81) < 1e-6)  // frames 29…109
        #expect(room.speech(of: 1).isEmpty)

        room.decision.remove(slot: 0, time: 1.1, events: &room.events)
        let end = try #require(room.speech(of: 0).last)
        #expect(!end.0 && abs(end.1 - 1.1) < 1e-9 && abs(end.2 - 1.10) < 1e-9)  // its last speech frame ended at 1.10 s
        #expect(room.floorChanges.last! == (nil, 1.1))
        #expect(room.decision.holder == nil && room.decision.members == [1])
    }

    @Test(arguments: [true, false])
    func aNeighboursVoiceFarBelowItsSourceIsALeak(leakage: Bool) {
        // Talker 1's microphone hears talker 0's syllables 25 dB down: at least the 6 dB margin louder
        // relative to their own speech levels, with envelopes that correlate, so a leak. Without
        // leakage suppression the same frames start an utterance of talker 1: the check is what stops it.
        var configuration = EngineConfiguration()
        configuration.leakage.enabled = leakage
        var room = Room(2, configuration: configuration)
        room.play(10) { _, _ in nil }
        room.play(100) { talker, frame in
            let syllable: Float = frame % 20 < 12 ? -20 : -28
            return talker == 0 ? syllable : syllable - 25
        }
        #expect(room.speech(of: 0).count == 1)
        #expect(room.speech(of: 1).isEmpty == leakage)
        #expect(room.talkers[1].leak == leakage)
    }

    @Test func removingAnotherMemberKeepsTheHolderAndItsStatistics() {
        var room = Room(3)
        room.play(100) { talker, _ in talker == 2 ? -30 : nil }
        #expect(room.decision.holder === room.talkers[2])
        let dominantBefore = room.talkers[2].statistics.dominantTime
        room.decision.remove(slot: 0, time: 1.0, events: &room.events)
        #expect(room.decision.holder === room.talkers[2])
        #expect(room.decision.members == [1, 2])
        room.play(50) { talker, _ in talker == 2 ? -30 : nil }
        // The holder's position moved from 2 to 1; its time as holder keeps counting on it.
        #expect(abs(room.talkers[2].statistics.dominantTime - dominantBefore - 0.5) < 1e-6)
        #expect(room.talkers[1].statistics.dominantTime == 0)
    }

    @Test func decidingAllocatesNothing() {
        var room = Room(8)
        var state: UInt64 = 7
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        // Talkers take turns with bursts of noise-like evidence, so leakage, utterances and the floor all work.
        let script: (Int, Int) -> Float? = { talker, frame in
            let turn = (frame / 150) % 8
            if talker == turn { return -25 }
            return next() % 7 == 0 ? -50 : nil
        }
        room.play(50, script)
        var frame = room.frame
        room.events.reserveCapacity(10_000)
        var allocations = 0
        for _ in 0..<1200 {
            for (index, talker) in room.talkers.enumerated() {
                let value = script(index, frame)
                talker.hear(voiced: value != nil, continues: value != nil, excess: value ?? -70, level: value == nil ? 70 : 30)
            }
            let before = allocation_counter_current_thread()
            room.decision.decide(frame: frame, events: &room.events)
            allocations += allocation_counter_current_thread() - before
            frame += 1
        }
        #expect(room.floorChanges.count >= 4)  // the measured frames made decisions
        #expect(allocations == 0)
    }
}

import Testing
import TestSupport
@testable import SpeakerCore

/// Streams that carry RFC 6464 levels instead of audio.
@Suite struct LevelStreamTests {
    /// Levels of a talker: `quiet` outside [start, end), syllables of 20–40 (−20…−40 dBov) inside.
    static func talker(seconds: Double, quiet: UInt8, talks: [(Double, Double)], seed: UInt64) -> [UInt8] {
        var generator = SeededGenerator(seed: seed)
        return (0..<Int(seconds * 100)).map { frame in
            let t = Double(frame) / 100
            guard talks.contains(where: { t >= $0.0 && t < $0.1 }) else { return quiet }
            // A 4 Hz syllable rhythm with a dip between syllables.
            let phase = (t * 4).truncatingRemainder(dividingBy: 1)
            return phase < 0.8 ? UInt8(26 + Int(generator.next() % 6)) : 45
        }
    }

    /// Runs the streams' levels through one room; with `asPackets`, each level and flag is submitted as an RTP
    /// packet's `AudioLevel` (a missing flag is a cleared one), as the RTP hop sources do.
    static func run(
        _ streams: [(String, [UInt8], [Bool?]?)], policy: String? = nil, policies: FloorPolicies = .standard, asPackets: Bool = false
    ) throws -> EngineHarness.Result {
        let engine = try Engine(policies: policies)
        let room = engine.addRoom(name: "levels", policy: policy)
        var names: [StreamID: String] = [:]
        let ids = streams.map { stream -> StreamID in
            let id = engine.addLevelStream(name: stream.0, room: room)
            names[id] = stream.0
            return id
        }
        var events: [EngineEvent] = []
        for frame in 0..<(streams.map(\.1.count).max() ?? 0) {
            for (index, stream) in streams.enumerated() where frame < stream.1.count {
                if asPackets {
                    engine.submitLevel(AudioLevel(level: stream.1[frame], voice: stream.2?[frame] ?? false), to: ids[index])
                } else {
                    engine.submitLevel(stream.1[frame], voiceActivity: stream.2?[frame], to: ids[index])
                }
            }
            engine.tick()
            engine.consumeEvents { events.append($0) }
        }
        return EngineHarness.Result(events: events, names: names)
    }

    @Test func levelsAloneGiveSpeechAndTheFloor() throws {
        let a = Self.talker(seconds: 8, quiet: 70, talks: [(1, 3.5)], seed: 1)
        // b's sender reports digital silence as 59, as GStreamer 1.22 does, then talks.
        let b = Self.talker(seconds: 8, quiet: 59, talks: [(4, 6.5)], seed: 2)
        let result = try Self.run([("a", a, nil), ("b", b, nil)])
        let speechA = result.speech("a"), speechB = result.speech("b")
        #expect(speechA.filter(\.active).count == 1 && speechB.filter(\.active).count == 1)
        #expect(abs(speechA[0].since - 1.0) < 0.1 && abs(speechB[0].since - 4.0) < 0.1)
        #expect(result.holder(at: 2.5) == "a")
        #expect(result.holder(at: 5.5) == "b")
        #expect(result.holder(at: 7.9) == nil)
    }

    /// As a GStreamer sender: nothing for the first 0.5 s, then digital silence as level 59, then a
    /// continuous 3 s sentence at −25 dBov with no dips, which must stay one utterance.
    @Test func silenceLevelsBeforeAndLongSpeechAfter() throws {
        let engine = try Engine()
        let room = engine.addRoom(name: "r")
        let a = engine.addLevelStream(name: "a", room: room)
        var events: [EngineEvent] = []
        for frame in 0..<700 {
            if frame >= 50 { engine.submitLevel(frame >= 200 && frame < 500 ? 25 : 59, to: a) }
            engine.tick()
            engine.consumeEvents { events.append($0) }
        }
        let speech = events.compactMap { event -> (Bool, Double)? in
            if case .speech(_, let active, _, let since) = event { return (active, since) }
            return nil
        }
        #expect(speech.count == 2, "\(speech)")
        #expect(speech.first.map { $0.0 && abs($0.1 - 2.0) < 0.05 } == true)
    }

    /// Issue 33: browsers set the V flag on every packet. Taken as their voice decision, a talker's room noise
    /// (level 50, −50 dBov) was speech: alice held the floor through bob's turn. A flag that is never cleared
    /// decides nothing; the levels give the same turns as a sender without the flag.
    @Test(arguments: [true, false])
    func aVoiceFlagSetOnEveryPacketDecidesNothing(flagAlwaysSet: Bool) throws {
        let a = Self.talker(seconds: 8, quiet: 50, talks: [(1, 3.5)], seed: 1)
        let b = Self.talker(seconds: 8, quiet: 50, talks: [(4, 6.5)], seed: 2)
        let flags: [Bool?] = a.indices.map { _ in flagAlwaysSet }
        let result = try Self.run([("a", a, flags), ("b", b, flags)], asPackets: true)
        #expect(result.holder(at: 2.5) == "a")
        #expect(result.holder(at: 5.5) == "b")
        #expect(result.holder(at: 7.9) == nil)
        #expect(result.speech("a").filter(\.active).count == 1 && result.speech("b").filter(\.active).count == 1)
    }

    /// A sender whose flag varies is believed once it has both set and cleared it: after 2 s of quiet (level 70,
    /// flag clear), a's sentence (level 28, flag set), then music as loud (level 28, flag clear) that the levels
    /// alone would take for more speech.
    @Test func aFlagThatVariesDecides() throws {
        let a: [UInt8] = (0..<600).map { $0 < 200 ? 70 : 28 }
        let flags: [Bool?] = a.indices.map { $0 >= 200 && $0 < 400 }
        let result = try Self.run([("a", a, flags)], asPackets: true)
        let active = result.speech("a").filter(\.active)
        #expect(active.count == 1 && abs((active.first?.since ?? 0) - 2.0) < 0.1, "\(result.speech("a"))")
        #expect(result.holder(at: 1.0) == nil && result.holder(at: 3.0) == "a" && result.holder(at: 5.5) == nil, "\(result.dominant)")
    }

    @Test func theVoiceActivityFlagDecides() throws {
        let a = Self.talker(seconds: 5, quiet: 70, talks: [(1, 4)], seed: 3)
        let flags: [Bool?] = a.indices.map { _ in false }
        let result = try Self.run([("a", a, flags)])
        #expect(result.speech("a").isEmpty)  // loud, but the sender says it is not speech
    }

    /// A policy of the application's own, through the public `FloorPolicy` protocol: the last stream to join
    /// holds the floor while it is louder than 50 (RFC 6464), and a room may use it beside ours.
    final class LastLoudPolicy: FloorPolicy {
        private(set) var holder: Int?
        func update(now: Int, members: UnsafeBufferPointer<Int>, observation: (Int) -> SpeakerObservation) -> (changed: Bool, holder: Int?) {
            let next: Int? = members.isEmpty || observation(members.count - 1).level >= 50 ? nil : members[members.count - 1]
            defer { holder = next }
            return (next != holder, next)
        }
        func remove(_ index: Int) -> Bool {
            guard holder == index else { return false }
            holder = nil
            return true
        }
    }

    @Test func roomsCanUseAPolicyOfTheApplications() throws {
        let a = Self.talker(seconds: 6, quiet: 70, talks: [(1, 3)], seed: 4)
        let b = Self.talker(seconds: 6, quiet: 70, talks: [(3.5, 5)], seed: 5)
        let policies = FloorPolicies.standard.adding("last-loud") { _ in LastLoudPolicy() }
        let result = try Self.run([("a", a, nil), ("b", b, nil)], policy: "last-loud", policies: policies)
        // Only the last to join counts, whoever speaks.
        #expect(result.holder(at: 2) == nil)
        #expect(result.holder(at: 4.5) == "b")
        let ours = try Self.run([("a", a, nil), ("b", b, nil)], policies: policies)
        #expect(ours.holder(at: 2) == "a")
    }
}

import CAllocationCounter
import Foundation
import Testing
import TestSupport
@testable import SpeakerCore

/// `MultiRoomRunner`: several rooms of one engine, named by the caller's ids; the hops the engine heard.
@Suite struct MultiRoomRunnerTests {
    typealias Runner = MultiRoomRunner<String, String>

    static func events(_ runner: Runner) -> [Runner.Event] {
        var events: [Runner.Event] = []
        runner.consumeEvents { events.append($0) }
        return events
    }

    /// Two rooms, each with a talker and a quiet stream, decide as two single-room runners do, and the events
    /// name the room and stream by the caller's ids (with two workers, each owning a room).
    @Test(arguments: [1, 2]) func roomsDecideAsSingleRoomRunnersAndEventsUseTheCallersIDs(workers: Int) throws {
        let runner = try Runner(workers: workers)
        runner.addRoom("north")
        runner.addRoom("south")
        runner.add(SignalHops(RoomRunnerTests.voice), as: "alice", in: "north")
        runner.add(SignalHops(RoomRunnerTests.quiet), as: "bob", in: "north")
        runner.add(SignalHops(RoomRunnerTests.quiet), as: "carol", in: "south")
        runner.add(SignalHops(RoomRunnerTests.otherVoice), as: "dave", in: "south")
        #expect(runner.room(of: "dave") == "south")
        #expect(runner.streams == ["alice", "bob", "carol", "dave"])
        let north = try RoomRunner(roomName: "north")
        north.add(SignalHops(RoomRunnerTests.voice), name: "alice")
        north.add(SignalHops(RoomRunnerTests.quiet), name: "bob")
        let south = try RoomRunner(roomName: "south")
        south.add(SignalHops(RoomRunnerTests.quiet), name: "carol")
        south.add(SignalHops(RoomRunnerTests.otherVoice), name: "dave")
        var got: [Runner.Event] = [], expected: [Runner.Event] = []
        for _ in 0..<350 {
            runner.tick()
            got += Self.events(runner)
            for (name, single, streams) in [("north", north, ["alice", "bob"]), ("south", south, ["carol", "dave"])] {
                single.tick()
                single.consumeEvents { event in
                    switch event {
                    case .speech(let stream, let active, let time, let since):
                        expected.append(.speech(room: name, stream: streams[stream], active: active, time: time, since: since))
                    case .dominant(let stream, let time):
                        expected.append(.dominant(room: name, stream: stream.map { streams[$0] }, time: time))
                    }
                }
            }
        }
        #expect(got.contains { if case .dominant("north", "alice", _) = $0 { true } else { false } })
        #expect(got.contains { if case .dominant("south", "dave", _) = $0 { true } else { false } })
        // Same events, room by room (the two rooms' events interleave by time in the merged runner).
        for room in ["north", "south"] {
            func of(_ events: [Runner.Event]) -> [Runner.Event] {
                events.filter { switch $0 { case .speech(let r, _, _, _, _), .dominant(let r, _, _): r == room } }
            }
            #expect(of(got) == of(expected), "\(room)")
        }
    }

    /// Removing a room ends its streams' utterances and its floor, and the events still name the room and
    /// streams; the other room goes on.
    @Test func removingARoomEndsItsFloorInItsOwnNames() throws {
        let runner = try Runner()
        runner.addRoom("north")
        runner.addRoom("south")
        runner.add(SignalHops(RoomRunnerTests.voice), as: "alice", in: "north")
        runner.add(SignalHops(RoomRunnerTests.otherVoice), as: "dave", in: "south")
        var holder: String?
        for _ in 0..<250 {
            runner.tick()
            for case .dominant("north", let stream, _) in Self.events(runner) { holder = stream }
        }
        #expect(holder == "alice")
        runner.removeRoom("north")
        let removal = Self.events(runner)
        #expect(removal.contains { if case .speech("north", "alice", false, _, _) = $0 { true } else { false } }, "\(removal)")
        #expect(removal.contains(.dominant(room: "north", stream: nil, time: runner.time)), "\(removal)")
        #expect(!runner.hasRoom("north"))
        #expect(!runner.contains("alice"))
        #expect(runner.streams == ["dave"])
        runner.tick()
        #expect(runner.isSpeaking("dave"))
        // A room of the same id may come back, with a stream of the same id.
        runner.addRoom("north")
        runner.add(SignalHops(RoomRunnerTests.quiet), as: "alice", in: "north")
        runner.tick()
        #expect(runner.contains("alice"))
    }

    /// `tick(hearing:)` hands over each audio stream's hop when it held audio, as the engine analysed it,
    /// pulled or read on the workers; silent ticks and level streams are not heard.
    @Test(arguments: [true, false]) func hearingGivesTheHopsThatHeldAudio(readOnWorkers: Bool) throws {
        let runner = try Runner(workers: 2)
        runner.addRoom("room")
        let samples = (0..<1600).map { Float($0 % 160) / 1000 }
        // Ten ticks of audio, then silence (past the samples).
        let source: any HopSource =
            readOnWorkers ? ConcurrentSignalHops(samples, endTick: 1000) : SignalHops(samples)
        runner.add(source, as: "tone", in: "room")
        runner.add(LevelHops([UInt8](repeating: 30, count: 100)), as: "levels", in: "room", levels: true)
        var heard: [(tick: Int, stream: String, first: Float, last: Float)] = []
        for _ in 0..<20 {
            let tick = runner.ticks
            runner.tick { stream, hop in heard.append((tick, stream, hop[0], hop[159])) }
        }
        #expect(heard.map(\.tick) == Array(0..<10))
        #expect(heard.allSatisfy { $0.stream == "tone" && $0.first == 0 && $0.last == 0.159 })
    }

    /// A tick, with or without hearing, and its events allocate nothing once warm, across two rooms (the engine's
    /// prefetch of the next room's first stream once allocated here, in a debug build).
    @Test func aTickAllocatesNothingAfterWarmUp() throws {
        let runner = try Runner()
        runner.addRoom("north")
        runner.addRoom("south")
        runner.add(SignalHops(RoomRunnerTests.voice), as: "alice", in: "north")
        runner.add(SignalHops(RoomRunnerTests.quiet), as: "bob", in: "south")
        runner.add(LevelHops([UInt8](repeating: 40, count: 400)), as: "carol", in: "south", levels: true)
        var heard = 0, changes = 0, allocations = 0
        for tick in 0..<350 {
            let before = allocation_counter_current_thread()
            if tick % 2 == 0 { runner.tick(hearing: { _, _ in heard += 1 }) } else { runner.tick() }
            runner.consumeEvents { if case .dominant = $0 { changes += 1 } }
            if tick >= 100 { allocations += allocation_counter_current_thread() - before }
        }
        #expect(allocations == 0, "in 250 ticks after warm-up")
        #expect(heard > 0)
        #expect(changes > 0)
    }
}

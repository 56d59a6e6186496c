import Foundation
import Testing
@testable import SpeakerCore

/// Debug builds stop a call made while another thread is inside the engine or a room runner (`ConfinementCheck`).
@Suite struct ConfinementTests {
    /// An engine handed to another thread, which the compiler cannot check (the point of the test).
    final class Shared: @unchecked Sendable {
        let engine: Engine
        init(_ engine: Engine) { self.engine = engine }
    }

    #if DEBUG
        /// A `submit` from a second thread while the first is inside the engine stops the process.
        @Test func aCallFromASecondThreadDuringACallStops() async {
            await #expect(processExitsWith: .failure) {
                let engine = try! Engine()
                let stream = engine.addStream(name: "a", room: engine.addRoom(name: "r"))
                engine.confinement.enter("a test's call")  // this thread is inside the engine
                let hop = [Float](repeating: 0, count: AnalysisFormat.hopSize)
                let shared = Shared(engine)
                Thread { hop.withUnsafeBufferPointer { shared.engine.submit($0, to: stream) } }.start()
                for _ in 0..<600 { usleep(100_000) }  // the other thread stops the process long before
            }
        }

        /// A `RoomRunner`'s `tick` from a second thread while the first is inside the runner stops the process.
        @Test func aRunnerCalledFromASecondThreadDuringACallStops() async {
            await #expect(processExitsWith: .failure) {
                let runner = RoomRunner(engine: try! Engine(), roomName: "r")
                runner.confinement.enter("a test's call")
                let shared = SharedRunner(runner)
                Thread { shared.runner.tick() }.start()
                for _ in 0..<600 { usleep(100_000) }
            }
        }
    #endif

    /// A runner handed to another thread.
    final class SharedRunner: @unchecked Sendable {
        let runner: RoomRunner
        init(_ runner: RoomRunner) { self.runner = runner }
    }

    /// Calls that nest on one thread, and an engine handed from thread to thread between calls, pass.
    @Test func nestedCallsAndHandOversPass() {
        let engine = try! Engine()
        let room = engine.addRoom(name: "r")
        _ = engine.addLevelStream(name: "a", room: room)  // addLevelStream calls addStream
        engine.removeRoom(room)  // removeRoom calls removeStream
        let done = DispatchSemaphore(value: 0)
        let shared = Shared(engine)
        Thread {
            let stream = shared.engine.addStream(name: "b", room: shared.engine.addRoom(name: "s"))
            shared.engine.tick()
            _ = shared.engine.isSpeaking(stream)
            done.signal()
        }.start()
        done.wait()
        engine.tick()
        #expect(engine.streamCount == 1 && engine.ticks == 2)
    }
}

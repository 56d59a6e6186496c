// Imports what an app imports (CallClient, Foundation): the test compiles only if `import CallClient` gives every type a
// microphone of the app's own needs (issue 32, friction 8).
import CallClient
import Foundation
import Synchronization
import Testing

/// An app's own microphone: a 440 Hz tone, written against `import CallClient` alone.
final class ToneMicrophone: MicrophoneSource, Sendable {
    let sampleRate = 48000
    let frameSize = 960
    private let state = Mutex((running: false, phase: 0.0, frames: 0))

    func start() throws { state.withLock { $0.running = true } }
    func stop() { state.withLock { $0.running = false } }

    func read(into frame: UnsafeMutableBufferPointer<Float>) throws -> MicrophoneRead {
        try state.withLock { state in
            guard state.running else { return .stopped }
            guard state.frames < 50 else { return .finished }
            guard frame.count == frameSize else { throw SpeakerIOError(.device("tone"), .deviceFailed(operation: "read")) }
            for index in frame.indices {
                frame[index] = Float(0.1 * sin(state.phase))
                state.phase += 2 * Double.pi * 440 / Double(sampleRate)
            }
            state.frames += 1
            return .frame
        }
    }
}

@Suite struct CustomMicrophoneTests {
    @Test func anAppsOwnMicrophoneNeedsOnlyCallClient() throws {
        let tone = ToneMicrophone()
        let track = CustomMicrophoneTrack(source: tone, label: "tone")
        #expect(track.label == "tone")
        try tone.start()
        var frame = [Float](repeating: 0, count: 960)
        #expect(try frame.withUnsafeMutableBufferPointer { try tone.read(into: $0) } == .frame)
        #expect(frame.contains { $0 != 0 })
        let file = CustomMicrophoneTrack(source: FileMicrophone(samples: [Float](repeating: 0.1, count: 960)), label: "file")
        #expect(file.label == "file")
    }
}

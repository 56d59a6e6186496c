// How long the engine's per-tick handshake takes on this machine: the calling thread starts a worker and
// waits for it to finish, with ~50 µs of other work between rounds, as between ticks. Two ways:
//   semaphores   the worker sleeps on a semaphore between rounds (the engine before 2026-12-03);
//   signal       the engine's ThreadSignal: each side watches for ~50 µs before it sleeps
//                (Sources/SpeakerCore/Engine/ThreadSignal.swift, compiled in).
// Prints the round trip's quantiles for each.
//
//   /opt/swift/usr/bin/swiftc -O tools/benchmarks/handshake_latency.swift Sources/SpeakerCore/Engine/ThreadSignal.swift \
//       -o /tmp/handshake_latency && /tmp/handshake_latency
import Dispatch
import Foundation

@main
struct HandshakeLatency {
    static let rounds = 20_000

    static func main() {
        report("semaphores", measure(start: { $0.signal() }, wait: { $0.wait() }, make: { DispatchSemaphore(value: 0) }))
        report("signal", measure(start: { $0.post() }, wait: { $0.wait() }, make: { ThreadSignal() }))
    }

    /// Round trips in nanoseconds: post to the worker, wait for its answer, then ~50 µs of own work.
    static func measure<Signal>(
        start: @escaping (Signal) -> Void, wait: @escaping (Signal) -> Void, make: () -> Signal
    ) -> [UInt64] {
        nonisolated(unsafe) let go = make(), done = make()
        let worker = Thread {
            for _ in 0..<rounds {
                wait(go)
                start(done)
            }
        }
        worker.start()
        var samples: [UInt64] = []
        samples.reserveCapacity(rounds)
        var sink = 0.0
        for _ in 0..<rounds {
            let before = DispatchTime.now().uptimeNanoseconds
            start(go)
            wait(done)
            samples.append(DispatchTime.now().uptimeNanoseconds - before)
            for i in 0..<20_000 { sink += Double(i).squareRoot() }  // the caller's own work between ticks
        }
        if sink < 0 { print(sink) }  // keeps the work from being optimised away
        return samples.sorted()
    }

    static func report(_ name: String, _ samples: [UInt64]) {
        func microseconds(_ quantile: Double) -> String {
            String(format: "%.1f", Double(samples[Int(Double(samples.count - 1) * quantile)]) / 1000)
        }
        print("\(name): handshake round trip, µs: p50 \(microseconds(0.5)), p90 \(microseconds(0.9)), p99 \(microseconds(0.99)) (\(samples.count) rounds)")
    }
}

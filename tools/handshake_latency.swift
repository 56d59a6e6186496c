// How long the engine's per-tick handshake takes on this machine: the calling thread signals a worker's
// start semaphore and waits on its done semaphore (Sources/SpeakerCore/Engine/WorkerThread.swift), with
// ~50 µs of other work between rounds, as between ticks. Prints the round trip's quantiles.
//
//   /opt/swift/usr/bin/swiftc -O tools/handshake_latency.swift -o /tmp/handshake_latency && /tmp/handshake_latency
import Dispatch
import Foundation

let start = DispatchSemaphore(value: 0), done = DispatchSemaphore(value: 0)
let rounds = 20_000
let worker = Thread {
    for _ in 0..<rounds {
        start.wait()
        done.signal()
    }
}
worker.start()
var samples: [UInt64] = []
samples.reserveCapacity(rounds)
var sink = 0.0
for _ in 0..<rounds {
    let before = DispatchTime.now().uptimeNanoseconds
    start.signal()
    done.wait()
    samples.append(DispatchTime.now().uptimeNanoseconds - before)
    for i in 0..<20_000 { sink += Double(i).squareRoot() }  // the caller's own work between ticks
}
samples.sort()
func microseconds(_ quantile: Double) -> String {
    String(format: "%.1f", Double(samples[Int(Double(rounds - 1) * quantile)]) / 1000)
}
if sink < 0 { print(sink) }  // keeps the work from being optimised away
print("handshake round trip, µs: p50 \(microseconds(0.5)), p90 \(microseconds(0.9)), p99 \(microseconds(0.99)) (\(rounds) rounds)")

import CAllocationCounter
import Foundation
import SpeakerIO
import TestSupport
import Testing

@testable import SpeakerDevices
@testable import SpeakerRTP

/// The per-period and per-packet paths of live input allocate nothing after warm-up.
@Suite("Live input allocates nothing per period or packet")
struct LiveRealTimeSafetyTests {
    @Test func captureConversionResamplingAndQueueing() throws {
        let tone = Synthesis.sine(seconds: 0.5, frequency: 300, amplitude: 0.3)
        let devices = try FileBackedDevices([("stereo48", [tone, tone], 48000)])
        defer { devices.remove() }
        // Not started: the test thread plays the capture thread, so its counter sees the work.
        let capture = try AudioCapture(device: "stereo48", channelCount: 2, sampleRate: 48000, configurationFile: devices.configuration)
        var block = [Float](repeating: 0, count: capture.hopBlockSize)
        let frames = capture.format.periodFrames
        var allocations = 0
        try block.withUnsafeMutableBufferPointer { block in
            // libsoxr grows its internal buffers during the first half second (seen at periods 8, 9
            // and 47 at 48 kHz, low-latency quality); after one second of warm-up, nothing.
            for round in 0..<1000 {
                let before = allocation_counter_current_thread()
                capture.worker.deliver(frames: frames)
                if round >= 100 { allocations += allocation_counter_current_thread() - before }
                while capture.nextHop(into: block, timeout: 0) == .hop {}
            }
            try #require(capture.resamplerDelay > 0, "the 48 kHz device is resampled")
        }
        #expect(allocations == 0)
    }

    @Test func rtpParsingJitterBufferAndDecoding() throws {
        let signal = Synthesis.voice(seconds: 1.2, f0: 150, levelDBFS: -20, seed: 5).flatMap { [$0, $0, $0] }
        let sender = try OpusSender(signal: signal)
        let datagrams = sender.packets.indices.map { sender.datagram($0) }
        for mode in RTPStreamReceiver.Mode.allCases {
            let receiver = try RTPStreamReceiver(ssrc: 42, mode: mode, startTick: 0)
            var hop = [Float](repeating: 0, count: 160)
            var allocations = 0
            hop.withUnsafeMutableBufferPointer { hop in
                for tick in 0..<(2 * datagrams.count) {
                    let before = allocation_counter_current_thread()
                    if tick % 2 == 0 {
                        // Packets 3 (in the warm-up: the first use of a code path instantiates Swift
                        // runtime metadata once) and 12 are lost: concealment is on the path too.
                        if tick / 2 != 3 && tick / 2 != 12 {
                            datagrams[tick / 2].withUnsafeBytes { bytes in
                                if case .packet(let packet) = RTPPacket.parse(bytes, audioLevelID: 1) {
                                    receiver.insert(packet, datagram: bytes)
                                }
                            }
                        }
                    }
                    _ = receiver.pull(tick: tick, into: hop)
                    if tick >= 20 { allocations += allocation_counter_current_thread() - before }
                }
            }
            #expect(receiver.statistics.lost == 2)
            #expect(allocations == 0, "\(mode)")
        }
    }
}

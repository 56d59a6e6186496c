import Foundation
import SpeakerIO
import SpeakerOpus
import TestSupport
import Testing

@testable import SpeakerDevices
@testable import SpeakerRTP

/// What a participant hears: the mixer of forwarded streams, and the ALSA playback device.
@Suite struct PlaybackTests {
    /// RTP datagrams of `signal` (16 kHz) as a sender makes them: Opus at 48 kHz, 20 ms a packet.
    static func datagrams(_ signal: [Float], ssrc: UInt32) throws -> [[UInt8]] {
        let upsampled = try Resampler(inputRate: 16000, outputRate: 48000).process(signal)
        let encoder = try OpusPacketEncoder(sampleRate: 48000)
        var packets: [[UInt8]] = []
        for (index, start) in stride(from: 0, to: upsampled.count - 959, by: 960).enumerated() {
            let payload = try upsampled[start..<start + 960].withUnsafeBufferPointer { try encoder.encode($0) }
            var datagram = [UInt8](repeating: 0, count: 12 + payload.count)
            datagram.withUnsafeMutableBytes { buffer in
                RTPPacket.writeHeader(
                    marker: index == 0, payloadType: 111, sequenceNumber: UInt16(index), timestamp: UInt32(index * 960), ssrc: ssrc,
                    into: buffer)
            }
            datagram.replaceSubrange(12..., with: payload)
            packets.append(datagram)
        }
        return packets
    }

    static func rms(_ samples: ArraySlice<Float>) -> Double {
        (samples.reduce(0.0) { $0 + Double($1 * $1) } / Double(max(samples.count, 1))).squareRoot()
    }

    /// Two talkers, the second starting 1 s after the first: the mix has the first alone at its level,
    /// then both, each delayed by the jitter buffer (60 ms) and the codec, not more.
    @Test func theMixHasEachStreamAtItsLevelAndDelay() throws {
        let first = Synthesis.sine(seconds: 2, frequency: 440, amplitude: 0.1)
        let second = Synthesis.sine(seconds: 1, frequency: 700, amplitude: 0.2)
        let streams = [(try Self.datagrams(first, ssrc: 1), 0), (try Self.datagrams(second, ssrc: 2), 100)]
        let mixer = PlaybackMixer()
        var mix: [Float] = []
        var hop = [Float](repeating: 0, count: PlaybackMixer.hopSize)
        for tick in 0..<260 {
            // Packet k of a stream starting at tick s arrives at tick s + 2k (one packet per 20 ms).
            for (packets, start) in streams where tick >= start && (tick - start) % 2 == 0 && (tick - start) / 2 < packets.count {
                let result = packets[(tick - start) / 2].withUnsafeBytes { mixer.insert(datagram: $0, tick: tick) }
                #expect(result == .accepted)
            }
            hop.withUnsafeMutableBufferPointer { mixer.pull(tick: tick, into: $0) }
            mix += hop
        }
        #expect(mixer.ssrcs == [1, 2])
        // The first stream alone (0.2–0.9 s after it could play) at its own level (sine 0.1: RMS 0.0707).
        let alone = Self.rms(mix[Int(0.3 * 16000)..<Int(1.0 * 16000)])
        #expect(abs(20 * log10(alone / 0.0707)) < 1.5, "first alone: \(alone)")
        // Both: the powers add (0.0707² + 0.1414²).
        let both = Self.rms(mix[Int(1.3 * 16000)..<Int(1.9 * 16000)])
        #expect(abs(20 * log10(both / (0.0707 * 0.0707 + 0.1414 * 0.1414).squareRoot())) < 1.5, "both: \(both)")
        // The second is heard from 1 s + the jitter delay (60 ms) + Opus's look-ahead, within 40 ms.
        let onset = stride(from: Int(0.9 * 16000), to: mix.count - 160, by: 16).first { index in
            Self.rms(mix[index..<index + 160]) > 0.11
        }
        let seconds = Double(try #require(onset)) / 16000
        #expect(seconds > 1.04 && seconds < 1.12, "second stream heard from \(seconds) s")
    }

    @Test func otherDatagramsAndTooManyStreamsAreRefused() throws {
        let mixer = PlaybackMixer(maximumStreams: 1)
        let tone = Synthesis.sine(seconds: 0.1, frequency: 300, amplitude: 0.1)
        #expect(try Self.datagrams(tone, ssrc: 1)[0].withUnsafeBytes { mixer.insert(datagram: $0, tick: 0) } == .accepted)
        #expect(try Self.datagrams(tone, ssrc: 2)[0].withUnsafeBytes { mixer.insert(datagram: $0, tick: 0) } == nil)
        #expect([UInt8]("not rtp".utf8).withUnsafeBytes { mixer.insert(datagram: $0, tick: 0) } == nil)
        mixer.removeStream(ssrc: 1)
        #expect(mixer.ssrcs.isEmpty)
    }

    /// A `type file` PCM writes what it plays to a file: the samples come back as written (16-bit).
    @Test func aFileBackedDeviceReceivesWhatIsPlayed() throws {
        let device = try FilePlaybackDevice(name: "recorded")
        defer { device.remove() }
        let signal = Synthesis.sine(seconds: 0.5, frequency: 440, amplitude: 0.5) + [2, -2]
        let speaker = try ALSAPlayback(device: device.name, configurationFile: device.configuration)
        try signal.withUnsafeBufferPointer { try speaker.write($0) }
        speaker.close()
        let played = try device.played()
        #expect(played.count == signal.count)
        let expected = signal.map { Int16((max(-1, min(1, $0)) * 32767).rounded()) }
        #expect(played == expected)
    }

    @Test func anUnknownDeviceIsNamed() {
        #expect(throws: SpeakerIOError.self) { try ALSAPlayback(device: "no_such_playback_device") }
    }
}

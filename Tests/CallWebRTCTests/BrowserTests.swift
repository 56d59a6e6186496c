import CallWebRTC
import Foundation
import SpeakerOpus
import SpeakerRTP
import Synchronization
import Testing
import TestSupport

/// A real headless Chromium joins over WebRTC: its fake microphone plays a recording of speech; the
/// server's `WebRTCPeer` receives its Opus RTP (with RFC 6464 levels) and sends a tone back.
@Suite(.serialized)
struct BrowserTests {

    /// The speech the browser's microphone plays: Fixtures' alice.flac as 48 kHz 16-bit mono WAV.
    static func speechWAV(in profile: BrowserProfile) throws -> String {
        let output = profile.path("speech.wav")
        try HeadlessChromium.writeMicrophoneFile(from: FixturePaths.file("meetings/m1-clean/alice.flac"), to: output)
        return output
    }

    /// A signalling server and a Chromium whose microphone plays `speechWAV`; the caller opens the page.
    static func startCall(profile: BrowserProfile) throws -> (BrowserCall, HeadlessChromium) {
        let wav = try speechWAV(in: profile)
        var configuration = WebRTCConfiguration()
        configuration.iceHost = "127.0.0.1"
        let call = BrowserCall(configuration: configuration)
        _ = try call.start()
        do {
            let browser = try HeadlessChromium(extraArguments: [
                "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", "--use-file-for-fake-audio-capture=\(wav)",
                "--autoplay-policy=no-user-gesture-required", "--disable-features=WebRtcHideLocalIpsWithMdns",
            ])
            return (call, browser)
        } catch {
            call.stop()
            throw error
        }
    }

    /// 20 ms Opus packets of a 440 Hz tone from a foreign source (SSRC 0xDEADBEEF, sequence numbers
    /// that wrap, payload type 96), encoded ahead of time.
    static func tonePackets(_ count: Int) throws -> [[UInt8]] {
        let encoder = try OpusPacketEncoder(sampleRate: 48000, bitrate: 32000)
        let frame = (0..<960).map { Float(0.3 * sin(2 * Double.pi * 440 * Double($0) / 48000)) }
        return try (0..<count).map { index in
            let payload = try frame.withUnsafeBufferPointer { try encoder.encode($0) }
            let sequence = UInt16(truncatingIfNeeded: 65500 + index), timestamp = UInt32(123_456 + 960 * index)
            var packet: [UInt8] = [0x80, 96, UInt8(sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
            packet += withUnsafeBytes(of: timestamp.bigEndian, Array.init) + withUnsafeBytes(of: UInt32(0xDEAD_BEEF).bigEndian, Array.init)
            return packet + payload
        }
    }

    /// Sends `packets` paced at 20 ms (pacing at the packet rate, not a wait for an event).
    static func sendPaced(_ packets: [[UInt8]], to peer: WebRTCPeer) {
        let start = Date()
        for (index, packet) in packets.enumerated() {
            peer.send(rtp: packet)
            let next = start.addingTimeInterval(0.02 * Double(index + 1)).timeIntervalSinceNow
            if next > 0 { usleep(useconds_t(next * 1e6)) }
        }
    }

    /// The extension id the answer gives the audio level, if any.
    static func audioLevelID(in sdp: String) -> Int? {
        for line in sdp.split(whereSeparator: \.isNewline) where line.hasPrefix("a=extmap:") && line.hasSuffix("urn:ietf:params:rtp-hdrext:ssrc-audio-level") {
            return Int(line.dropFirst("a=extmap:".count).prefix(while: \.isNumber))
        }
        return nil
    }

    @Test(
        "Chromium's microphone reaches the server as Opus RTP with audio levels, and the server's audio reaches Chromium",
        .enabled(if: GStreamerInstalled.webrtc, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"),
        .enabled(if: HeadlessChromium.executable != nil && HeadlessChromium.sox != nil, "needs chromium and sox: bash tools/install-deps.sh"))
    func browserRoundTrip() throws {
        PeerTests.threadCountLock.lock()
        defer { PeerTests.threadCountLock.unlock() }
        let profile = try BrowserProfile()
        defer { profile.remove() }
        let (call, browser) = try Self.startCall(profile: profile)
        defer {
            browser.close()
            call.stop()
        }
        let threadsBefore = PeerTests.threadCount
        let session = try browser.open(try #require(call.url))

        // Receive: ≥ 100 packets (2 s of 20 ms packets) within a generous bound.
        let enough = Waiting.until(timeout: 40) { call.packetCount >= 100 || call.failure != nil }
        let states = (try? browser.evaluate("JSON.stringify(window.states)", session: session)) ?? "?"
        #expect(call.failure == nil, "\(call.failure ?? "")")
        try #require(enough && call.failure == nil, "only \(call.packetCount) packets; browser states \(states)")
        let answer = try #require(call.answer)
        #expect(answer.lowercased().contains("opus/48000/2"))
        let levelID = try #require(Self.audioLevelID(in: answer), "the answer has no ssrc-audio-level extmap:\n\(answer)")

        let decoder = try OpusPacketDecoder(sampleRate: 48000)
        var output = [Float](repeating: 0, count: decoder.maximumPacketSamples)
        var sumOfSquares = 0.0, samples = 0, withLevel = 0, loudest = UInt8(127), loudestPacketRMS = 0.0
        let received = call.packets  // one snapshot: packets keep coming
        for packet in received {
            try packet.withUnsafeBytes { bytes in
                guard case .packet(let rtp) = RTPPacket.parse(bytes, audioLevelID: levelID) else {
                    Issue.record("a packet from the browser does not parse as RTP")
                    return
                }
                #expect(answer.lowercased().contains("a=rtpmap:\(rtp.payloadType) opus/48000/2"))
                if let level = rtp.audioLevel {
                    withLevel += 1
                    loudest = min(loudest, level.level)
                }
                let count = try output.withUnsafeMutableBufferPointer { out in
                    try decoder.decode(packet: UnsafeRawBufferPointer(rebasing: bytes[rtp.payload]), into: out)
                }
                let packetSum = output[..<count].reduce(0.0) { $0 + Double($1 * $1) }
                sumOfSquares += packetSum
                samples += count
                loudestPacketRMS = max(loudestPacketRMS, (packetSum / Double(max(count, 1))).squareRoot())
            }
        }
        let rms = (sumOfSquares / Double(max(samples, 1))).squareRoot()
        let packets = received.count
        print("webrtc: \(packets) packets, first \(String(format: "%.2f", call.offerToFirstPacket ?? -1)) s after the offer; "
            + "decoded RMS \(String(format: "%.4f", rms)) (\(String(format: "%.1f", 20 * log10(max(rms, 1e-9)))) dBFS); "
            + "loudest packet \(String(format: "%.1f", 20 * log10(max(loudestPacketRMS, 1e-9)))) dBFS; "
            + "\(withLevel) with a level, loudest -\(loudest) dBov")
        #expect(samples >= 100 * 960)
        // Digital silence decodes to RMS 0 (< -90 dBFS); the recording's speech peaks near -25 dBFS, and
        // its first seconds hold pauses, so the whole 2 s is checked loosely and the loudest packet firmly.
        #expect(rms > 0.002, "speech should be far above digital silence")
        #expect(loudestPacketRMS > 0.02, "the loudest 20 ms should be speech (> -34 dBFS)")
        // The browser's level (measured before encoding) and the decoded audio agree within 6 dB.
        #expect(abs(20 * log10(max(loudestPacketRMS, 1e-9)) + Double(loudest)) < 6)
        #expect(withLevel == packets, "every packet should carry the audio level (id \(levelID))")
        #expect(loudest < 50, "speech should give levels well above silence (127)")

        // Send: 3 s of a 440 Hz tone, paced at 20 ms, with a foreign SSRC and sequence numbers that wrap.
        try #require(Waiting.until(timeout: 20) { call.connected }, "the peer never reported connected")
        let peer = try #require(call.peer)
        Self.sendPaced(try Self.tonePackets(150), to: peer)
        var stats: BrowserCall.Stats?
        let heard = Waiting.until(timeout: 20) {
            call.requestStats()
            _ = Waiting.until(timeout: 0.5) { call.stats != stats }
            stats = call.stats
            return (stats?.packetsReceived ?? 0) > 100 && (stats?.audioLevel ?? 0) > 0
        }
        print("webrtc: threads: \(threadsBefore) before the call, \(PeerTests.threadCount) with the connected peer sending")
        print("webrtc: the browser reports \(stats?.packetsReceived ?? -1) packets received, audioLevel \(stats?.audioLevel ?? -1)")
        #expect(heard, "browser stats: \(String(describing: stats))")
    }

    @Test(
        "Measurement: CPU of one peer receiving and sending for 20 s, against 20 s without a peer",
        .enabled(if: ProcessInfo.processInfo.environment["ACTIVESPEAKER_WEBRTC_MEASURE"] != nil, "set ACTIVESPEAKER_WEBRTC_MEASURE=1"),
        .enabled(if: HeadlessChromium.executable != nil && HeadlessChromium.sox != nil, "needs chromium and sox"))
    func measureCPU() throws {
        PeerTests.threadCountLock.lock()
        defer { PeerTests.threadCountLock.unlock() }
        let packets = try Self.tonePackets(1000)
        var idle = ProcessCPU.seconds()
        let idleStart = Date()
        // 20 s without a peer: the same process, its servers idle (pacing, as in sendPaced).
        while Date().timeIntervalSince(idleStart) < 20 { usleep(20_000) }
        idle = ProcessCPU.seconds() - idle

        let profile = try BrowserProfile()
        defer { profile.remove() }
        let (call, browser) = try Self.startCall(profile: profile)
        defer {
            browser.close()
            call.stop()
        }
        _ = try browser.open(try #require(call.url))
        try #require(Waiting.until(timeout: 40) { call.connected && call.packetCount > 0 }, "no connection")
        let peer = try #require(call.peer)
        let before = (cpu: ProcessCPU.seconds(), packets: call.packetCount)
        Self.sendPaced(packets, to: peer)
        let busy = ProcessCPU.seconds() - before.cpu
        let received = call.packetCount - before.packets
        print("webrtc: CPU over 20 s: no peer \(String(format: "%.2f", idle)) s; one peer receiving \(received) and sending 1000 packets "
            + "\(String(format: "%.2f", busy)) s (\(String(format: "%.1f", 100 * (busy - idle) / 20)) % of one core for the peer)")
    }
}

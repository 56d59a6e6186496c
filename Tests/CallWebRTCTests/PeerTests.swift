@testable import CallWebRTC
import Foundation
import Synchronization
import Testing
import TestSupport

/// The peer without a browser: answers, refusals, closing, and threads released.
@Suite(.serialized, .enabled(if: GStreamerInstalled.webrtc, "needs GStreamer's webrtcbin and libnice: bash tools/install-deps.sh"))
struct PeerTests {
    static func loopback() -> WebRTCConfiguration {
        var configuration = WebRTCConfiguration()
        configuration.iceHost = "127.0.0.1"
        return configuration
    }

    /// A peer whose server candidates are collected.
    static func peer(candidates: Candidates? = nil) throws -> WebRTCPeer {
        try WebRTCPeer(configuration: loopback(), onCandidate: { candidate, _ in candidates?.list.withLock { $0.append(candidate) } },
                       onPacket: { _ in }, onState: { _ in })
    }

    /// Held by tests that count threads or start peers in another suite (BrowserTests), so that the
    /// suites, which run in parallel, do not see each other's peers' threads.
    static let threadCountLock = NSLock()

    static var threadCount: Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    @Test("Chromium's offer gets an answer with Opus and the audio-level extension, then host candidates on the loopback")
    func answersChromiumsOffer() throws {
        let candidates = Candidates()
        let peer = try Self.peer(candidates: candidates)
        defer { peer.close() }
        let answer = try peer.answer(offer: ChromiumOffer.audio)
        #expect(answer.hasPrefix("v=0"))
        #expect(answer.contains("a=rtpmap:111 OPUS/48000/2"))
        #expect(answer.contains("a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(answer.contains("a=sendrecv"))
        #expect(answer.contains("a=fingerprint:sha-256 "))
        #expect(!answer.contains("transport-wide-cc-extensions"), "only the level extension is accepted")
        #expect(Waiting.until { !candidates.list.withLock { $0.isEmpty } }, "no server candidate")
        for candidate in candidates.list.withLock({ $0 }) {
            #expect(candidate.hasPrefix("candidate:") && candidate.contains(" 127.0.0.1 "), "\(candidate)")
        }
        // The browser's candidates, a trickle end, and a second answer refused.
        try peer.addCandidate("candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host generation 0", sdpMLineIndex: 0)
        try peer.addCandidate("a=candidate:2 1 UDP 2122260222 192.0.2.2 50001 typ host", sdpMLineIndex: 0)
        try peer.addCandidate("", sdpMLineIndex: 0)
        #expect(throws: WebRTCError.pipeline("answer(offer:) was called already")) { try peer.answer(offer: ChromiumOffer.audio) }
    }

    @Test("The answer keeps the offer's Opus payload type and audio-level extension id")
    func keepsTheOffersNumbers() throws {
        let peer = try Self.peer()
        defer { peer.close() }
        let answer = try peer.answer(offer: ChromiumOffer.renumbered)
        #expect(answer.contains("m=audio 9 UDP/TLS/RTP/SAVPF 109\r\n"), "\(answer)")
        #expect(answer.contains("a=rtpmap:109 OPUS/48000/2"))
        #expect(answer.contains("a=extmap:5 urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
    }

    @Test("Candidates that come before the offer are kept")
    func candidatesBeforeTheOffer() throws {
        let peer = try Self.peer()
        defer { peer.close() }
        try peer.addCandidate("candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host", sdpMLineIndex: 0)
        _ = try peer.answer(offer: ChromiumOffer.audio)
    }

    static let malformed: [(String, String)] = [
        ("", "it does not start with v=0"),
        ("hello world", "it does not start with v=0"),
        ("v=0\r\nthis is not sdp\r\n", "no o= line"),
        (ChromiumOffer.withoutFingerprint, "m-line 0 has no a=fingerprint"),
    ]

    @Test("Malformed offers are refused with .malformedSDP", arguments: malformed)
    func malformedOffer(offer: String, why: String) throws {
        let peer = try Self.peer()
        defer { peer.close() }
        #expect(throws: WebRTCError.malformedSDP(why)) { try peer.answer(offer: offer) }
        // The peer still takes a good offer.
        #expect(try peer.answer(offer: ChromiumOffer.audio).contains("OPUS/48000/2"))
    }

    /// `a=extmap` and `a=rtpmap` lines that are not well formed (issue 29: `a=extmap:/ …` trapped).
    static let badAttributes: [(String, String)] = [
        (ChromiumOffer.withExtmap("extmap:/ urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:/ "),
        (ChromiumOffer.withExtmap("extmap:// urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:// "),
        (ChromiumOffer.withExtmap("extmap:/sendrecv urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:/sendrecv"),
        (ChromiumOffer.withExtmap("extmap:1/ urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:1/ "),
        (ChromiumOffer.withExtmap("extmap:1/bogus urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:1/bogus"),
        (ChromiumOffer.withExtmap("extmap:0 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:0 "),
        (ChromiumOffer.withExtmap("extmap:256 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:256 "),
        (ChromiumOffer.withExtmap("extmap:99999999999999999999999 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:9999"),
        (ChromiumOffer.withExtmap("extmap:-1 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "bad a=extmap:-1"),
        (ChromiumOffer.withExtmap("extmap:"), "bad a=extmap:"),
        (ChromiumOffer.withExtmap("extmap:1"), "bad a=extmap:1"),
        (ChromiumOffer.audio.replacingOccurrences(of: "a=rtpmap:111 opus/48000/2", with: "a=rtpmap:/ opus/48000/2"), "bad a=rtpmap:/ "),
        (ChromiumOffer.audio.replacingOccurrences(of: "a=rtpmap:111 opus/48000/2", with: "a=rtpmap:128 opus/48000/2"), "bad a=rtpmap:128 "),
        (ChromiumOffer.audio.replacingOccurrences(of: "a=rtpmap:111 opus/48000/2", with: "a=rtpmap:111"), "bad a=rtpmap:111"),
        (ChromiumOffer.audio.replacingOccurrences(of: "a=rtpmap:9 G722/8000", with: "a=rtpmap: "), "bad a=rtpmap:"),
    ]

    @Test("Offers with an a=extmap or a=rtpmap that is not well formed are refused with .malformedSDP", arguments: badAttributes)
    func malformedAttribute(offer: String, why: String) throws {
        let peer = try Self.peer()
        defer { peer.close() }
        #expect {
            try peer.answer(offer: offer)
        } throws: { error in
            guard case .malformedSDP(let reason) = error as? WebRTCError else { return false }
            return reason.hasPrefix(why)
        }
        #expect(try peer.answer(offer: ChromiumOffer.audio).contains("OPUS/48000/2"))
    }

    @Test("A direction on the level extension is accepted (Firefox writes one)")
    func extmapWithDirection() throws {
        let peer = try Self.peer()
        defer { peer.close() }
        let answer = try peer.answer(offer: ChromiumOffer.withExtmap("extmap:3/sendrecv urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        #expect(answer.contains("a=extmap:3 urn:ietf:params:rtp-hdrext:ssrc-audio-level"), "\(answer)")
    }

    @Test("Offers with more than one m-line are refused with .malformedSDP, and make no threads", arguments: [2, 200])
    func tooManyMLines(count: Int) throws {
        Self.threadCountLock.lock()
        defer { Self.threadCountLock.unlock() }
        let peer = try Self.peer()
        defer { peer.close() }
        let before = Self.threadCount
        #expect(throws: WebRTCError.malformedSDP("it has \(count) m-lines; one audio m-line is taken")) {
            try peer.answer(offer: ChromiumOffer.audioMLines(count))
        }
        #expect(Self.threadCount <= before + 2, "threads \(before) → \(Self.threadCount)")
        #expect(try peer.answer(offer: ChromiumOffer.audioMLines(1)).contains("OPUS/48000/2"))
    }

    @Test("Candidates named by host name (mDNS .local or other) are ignored, never handed to webrtcbin")
    func namedCandidatesAreIgnored() throws {
        let peer = try Self.peer()
        defer { peer.close() }
        // Before the answer (kept) and after it (added at once).
        try peer.addCandidate("candidate:1 1 udp 2122260223 5b0c7d4e-7f0e-4d8a-9c1e-3f1f2d0a9b77.local 50000 typ host", sdpMLineIndex: 0)
        _ = try peer.answer(offer: ChromiumOffer.audio)
        try peer.addCandidate("candidate:2 1 udp 2122260223 attacker-chosen.local 50001 typ host", sdpMLineIndex: 0)
        try peer.addCandidate("candidate:3 1 udp 1686052607 resolver.example.com 50002 typ srflx raddr 0.0.0.0 rport 0", sdpMLineIndex: 0)
        #expect(peer.candidatesAdded == 0)
        try peer.addCandidate("candidate:4 1 udp 2122260223 ::1 50003 typ host", sdpMLineIndex: 0)
        try peer.addCandidate("candidate:5 1 udp 2122260223 127.0.0.1 50004 typ host", sdpMLineIndex: 0)
        #expect(peer.candidatesAdded == 2)
    }

    @Test("A peer takes at most maximumRemoteCandidates remote candidates, before and after the answer together")
    func candidatesAreCapped() throws {
        let peer = try Self.peer()
        defer { peer.close() }
        let half = WebRTCPeer.maximumRemoteCandidates / 2
        func candidate(_ number: Int) -> String { "candidate:\(number) 1 udp 2122260223 127.0.0.1 \(40000 + number) typ host" }
        for number in 0..<half { try peer.addCandidate(candidate(number), sdpMLineIndex: 0) }
        _ = try peer.answer(offer: ChromiumOffer.audio)
        for number in half..<WebRTCPeer.maximumRemoteCandidates { try peer.addCandidate(candidate(number), sdpMLineIndex: 0) }
        #expect(peer.candidatesAdded == WebRTCPeer.maximumRemoteCandidates)
        #expect(throws: WebRTCError.candidate("more than \(WebRTCPeer.maximumRemoteCandidates) candidates")) {
            try peer.addCandidate(candidate(99), sdpMLineIndex: 0)
        }
        // Names and the end of candidates are not counted, and refused candidates are not either.
        try peer.addCandidate("candidate:7 1 udp 2122260223 other.local 50000 typ host", sdpMLineIndex: 0)
        try peer.addCandidate("", sdpMLineIndex: 0)
        #expect(peer.candidatesAdded == WebRTCPeer.maximumRemoteCandidates)
    }

    @Test("Offers without an audio m-line with Opus are refused with .noAudio", arguments: [ChromiumOffer.videoOnly, ChromiumOffer.withoutOpus])
    func offerWithoutAudio(offer: String) throws {
        let peer = try Self.peer()
        defer { peer.close() }
        #expect(throws: WebRTCError.noAudio) { try peer.answer(offer: offer) }
    }

    static let badCandidates: [(String, Int)] = [
        ("garbage", 0),
        ("candidate:", 0),
        ("candidate:1 1 udp not-a-number 127.0.0.1 5000 typ host", 0),
        ("candidate:1 1 sctp 2122260223 127.0.0.1 5000 typ host", 0),
        ("candidate:1 1 udp 2122260223 127.0.0.1 99999 typ host", 0),
        ("candidate:1 1 udp 2122260223 127.0.0.1 5000 type host", 0),
        ("candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host", 1),
        ("candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host", -1),
    ]

    @Test("Bad candidates are refused with .candidate, and the peer carries on", arguments: badCandidates)
    func badCandidate(candidate: String, index: Int) throws {
        let peer = try Self.peer()
        defer { peer.close() }
        _ = try peer.answer(offer: ChromiumOffer.audio)
        #expect {
            try peer.addCandidate(candidate, sdpMLineIndex: index)
        } throws: { error in
            guard case .candidate(let why) = error as? WebRTCError else { return false }
            return !why.isEmpty
        }
        try peer.addCandidate("candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host", sdpMLineIndex: 0)
    }

    @Test("After refusals a new peer answers; close() twice is fine; a closed peer refuses and drops")
    func afterBadInput() throws {
        let first = try Self.peer()
        #expect(throws: WebRTCError.self) { try first.answer(offer: "garbage") }
        #expect(throws: WebRTCError.self) { try first.answer(offer: ChromiumOffer.videoOnly) }
        #expect(throws: WebRTCError.self) { try first.addCandidate("garbage", sdpMLineIndex: 0) }
        first.close()
        first.close()
        #expect(throws: WebRTCError.pipeline("the peer is closed")) { try first.answer(offer: ChromiumOffer.audio) }
        #expect(throws: WebRTCError.pipeline("the peer is closed")) {
            try first.addCandidate("candidate:1 1 udp 2122260223 127.0.0.1 5000 typ host", sdpMLineIndex: 0)
        }
        first.send(rtp: [0x80, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xFC])

        let second = try Self.peer()
        defer { second.close() }
        #expect(try second.answer(offer: ChromiumOffer.audio).contains("urn:ietf:params:rtp-hdrext:ssrc-audio-level"))
        second.send(rtp: [0x80, 111, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0xFC])  // not connected: dropped, never blocks
    }

    @Test("A local address libnice cannot use is refused with .pipeline", arguments: ["not-an-address", "999.1.1.1"])
    func badICEHost(host: String) {
        var configuration = WebRTCConfiguration()
        configuration.iceHost = host
        #expect {
            _ = try WebRTCPeer(configuration: configuration, onCandidate: { _, _ in }, onPacket: { _ in }, onState: { _ in })
        } throws: { error in
            guard case .pipeline(let why) = error as? WebRTCError else { return false }
            return why.contains(host)
        }
    }

    @Test("20 peers answered and closed give their threads back")
    func threadsAreReleased() throws {
        Self.threadCountLock.lock()
        defer { Self.threadCountLock.unlock() }
        // The process-wide GStreamer thread and GLib's shared workers exist after the first peer.
        try Self.peer().close()
        let baseline = Self.threadCount
        var peak = baseline
        for _ in 0..<20 {
            let candidates = Candidates()
            let peer = try Self.peer(candidates: candidates)
            _ = try peer.answer(offer: ChromiumOffer.audio)
            #expect(Waiting.until { !candidates.list.withLock { $0.isEmpty } })
            peak = max(peak, Self.threadCount)
            peer.close()
        }
        // GLib keeps a few idle pool threads for a while; a leak would be ≥ 20 (one or more per peer).
        let settled = Waiting.until(timeout: 30) { Self.threadCount <= baseline + 4 }
        print("webrtc: threads: baseline \(baseline), with one peer up to \(peak), after 20 peers \(Self.threadCount)")
        #expect(settled, "threads: baseline \(baseline), now \(Self.threadCount)")
    }
}

/// The server candidates a peer reported.
final class Candidates: Sendable {
    let list = Mutex<[String]>([])
}

enum GStreamerInstalled {
    /// Whether a peer can be made here (GStreamer, webrtcbin, libnice, dtls, srtp installed).
    static let webrtc: Bool = {
        guard let peer = try? WebRTCPeer(configuration: WebRTCConfiguration(), onCandidate: { _, _ in }, onPacket: { _ in }, onState: { _ in }) else {
            return false
        }
        peer.close()
        return true
    }()
}

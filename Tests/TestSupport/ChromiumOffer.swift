/// Offers for tests that need no browser.
public enum ChromiumOffer {
    /// An offer Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm) made (getUserMedia audio, one sendrecv transceiver, no STUN), captured from
    /// `BrowserTests`. Its ICE credentials and fingerprint are Chromium's; a peer can answer it any
    /// number of times (nothing connects).
    public static let audio = lines(#"""
        v=0
        o=- 6785655190549277638 2 IN IP4 127.0.0.1
        s=-
        t=0 0
        a=group:BUNDLE 0
        a=extmap-allow-mixed
        a=msid-semantic: WMS 575d08d0-c546-4c7b-b312-74d9ced4feeb
        m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126
        c=IN IP4 0.0.0.0
        a=rtcp:9 IN IP4 0.0.0.0
        a=ice-ufrag:uU9S
        a=ice-pwd:0IgymKl0vScKGe5btGPxh7TI
        a=ice-options:trickle
        a=fingerprint:sha-256 D8:3C:45:6B:A7:12:4C:D0:7D:84:9C:60:23:E1:35:E6:77:16:B3:9E:66:09:CB:57:AE:88:81:36:01:E9:36:6A
        a=setup:actpass
        a=mid:0
        a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level
        a=extmap:2 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time
        a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01
        a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid
        a=sendrecv
        a=msid:575d08d0-c546-4c7b-b312-74d9ced4feeb fbd17d18-9040-4724-b72a-7df4a061645c
        a=rtcp-mux
        a=rtcp-rsize
        a=rtcp-xr:rcvr-rtt=all
        a=rtpmap:111 opus/48000/2
        a=rtcp-fb:111 transport-cc
        a=fmtp:111 minptime=10;useinbandfec=1
        a=rtpmap:63 red/48000/2
        a=fmtp:63 111/111
        a=rtpmap:9 G722/8000
        a=rtpmap:0 PCMU/8000
        a=rtpmap:8 PCMA/8000
        a=rtpmap:13 CN/8000
        a=rtpmap:110 telephone-event/48000
        a=rtpmap:126 telephone-event/8000
        a=ssrc:3874129585 cname:QdyBhXIKLNv68DQe
        a=ssrc:3874129585 msid:575d08d0-c546-4c7b-b312-74d9ced4feeb fbd17d18-9040-4724-b72a-7df4a061645c
        """#)

    /// `audio` with its m-line turned into video (VP8 only).
    public static let videoOnly = lines(audioText
        .replacingOccurrences(of: "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126", with: "m=video 9 UDP/TLS/RTP/SAVPF 96")
        .split(separator: "\n").filter { !$0.hasPrefix("a=rtpmap") && !$0.hasPrefix("a=fmtp") && !$0.hasPrefix("a=rtcp-fb") }
        .joined(separator: "\n") + "\na=rtpmap:96 VP8/90000")

    /// `audio` offering G.711 only.
    public static let withoutOpus = lines(audioText
        .replacingOccurrences(of: "m=audio 9 UDP/TLS/RTP/SAVPF 111 63 9 0 8 13 110 126", with: "m=audio 9 UDP/TLS/RTP/SAVPF 0 8")
        .split(separator: "\n").filter { !$0.hasPrefix("a=rtpmap:111") && !$0.hasPrefix("a=fmtp:111") && !$0.hasPrefix("a=rtcp-fb:111") && !$0.hasPrefix("a=fmtp:63") }
        .joined(separator: "\n"))

    /// `audio` with Opus as payload type 109 and the audio level as extension 5 (another browser's numbering).
    public static let renumbered = lines(audioText
        .replacingOccurrences(of: "SAVPF 111 63", with: "SAVPF 109 63")
        .replacingOccurrences(of: ":111 ", with: ":109 ")
        .replacingOccurrences(of: "111/111", with: "109/109")
        .replacingOccurrences(of: "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", with: "a=extmap:5 urn:ietf:params:rtp-hdrext:ssrc-audio-level"))

    /// `audio` without its DTLS fingerprint.
    public static let withoutFingerprint = lines(audioText.split(separator: "\n").filter { !$0.hasPrefix("a=fingerprint") }.joined(separator: "\n"))

    /// `audio` with its m-line section repeated `count` times (mids 0…count−1), all bundled: what a
    /// client that adds `count` audio transceivers offers.
    public static func audioMLines(_ count: Int) -> String {
        let text = audioText
        guard let start = text.range(of: "m=audio") else { return audio }
        let session = text[..<start.lowerBound].replacingOccurrences(
            of: "a=group:BUNDLE 0", with: "a=group:BUNDLE " + (0..<count).map(String.init).joined(separator: " "))
        let media = String(text[start.lowerBound...])
        return lines(session + (0..<count).map { media.replacingOccurrences(of: "a=mid:0", with: "a=mid:\($0)") + "\n" }.joined())
    }

    /// `audio` with its audio-level `a=extmap` line replaced by `line` (without `a=`).
    public static func withExtmap(_ line: String) -> String {
        lines(audioText.replacingOccurrences(of: "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", with: "a=" + line))
    }

    private static var audioText: String { audio.replacingOccurrences(of: "\r\n", with: "\n") }

    /// SDP lines end with CRLF.
    private static func lines(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: true).map { $0 + "\r\n" }.joined()
    }
}

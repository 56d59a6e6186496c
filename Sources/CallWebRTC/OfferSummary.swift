internal import CGStreamer

/// What the peer needs from a browser's offer: the audio m-line and how it carries Opus and levels.
///
/// Every field is read defensively: an attribute that does not have the shape RFC 8866 (`rtpmap`) or
/// RFC 8285 (`extmap`) gives it is a refusal (`.malformedSDP`), never a trap. `Fuzz/SDPFuzzer.swift`
/// runs this reading (and GStreamer's parser before it) on arbitrary text.
struct OfferSummary: Equatable {
    /// The index of the audio m-line: always 0, the offer has exactly one.
    var audioIndex: Int
    /// The number of m-lines (candidates name one by index): always 1.
    var mediaCount: Int
    /// The payload type the offer gives `opus/48000/2`, 0…127.
    var opusPayloadType: Int
    /// The extension id the offer gives `urn:ietf:params:rtp-hdrext:ssrc-audio-level`, if any: 1…255.
    var audioLevelID: Int?

    static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"
    /// The m-lines an offer may have. webrtcbin builds a transport (ICE agent streams, DTLS, threads and
    /// sockets) per m-line; the meeting page offers one audio transceiver, so one is taken.
    static let maximumMediaCount = 1

    /// Reads a parsed offer.
    /// - Throws: `.malformedSDP` for more than one m-line, without ICE credentials or a DTLS fingerprint, or
    ///   with an `a=rtpmap`/`a=extmap` of the audio m-line that is not well formed; `.noAudio` without an
    ///   audio m-line (port not 0) offering Opus/48000/2.
    init(_ message: UnsafePointer<GstSDPMessage>) throws(WebRTCError) {
        let count = Int(gst_sdp_message_medias_len(message))
        guard count > 0 else { throw .noAudio }
        guard count <= Self.maximumMediaCount else {
            throw .malformedSDP("it has \(count) m-lines; one audio m-line is taken")
        }
        let sessionAttributes = Self.attributes(count: gst_sdp_message_attributes_len(message)) {
            gst_sdp_message_get_attribute(message, $0)
        }
        guard let media = gst_sdp_message_get_media(message, 0) else { throw .malformedSDP("m-line 0 cannot be read") }
        let attributes = Self.attributes(count: gst_sdp_media_attributes_len(media)) { gst_sdp_media_get_attribute(media, $0) }
        let kind = gst_sdp_media_get_media(media).map { String(cString: $0) }
        try self.init(kind: kind, port: Int(gst_sdp_media_get_port(media)), sessionAttributes: sessionAttributes, attributes: attributes)
    }

    /// Reads the one m-line of an offer: its media kind, port and attributes, and the session's attributes.
    /// - Throws: as `init(_:)`.
    init(kind: String?, port: Int, sessionAttributes: [(key: String, value: String)],
         attributes: [(key: String, value: String)]) throws(WebRTCError) {
        let all = sessionAttributes + attributes
        for key in ["ice-ufrag", "ice-pwd", "fingerprint"] where !all.contains(where: { $0.key == key }) {
            throw .malformedSDP("m-line 0 has no a=\(key)")
        }
        guard kind == "audio", port != 0 else { throw .noAudio }
        var opus: Int?
        var level: Int?
        for attribute in attributes {
            switch attribute.key {
            case "rtpmap":
                let map = try Self.rtpmap(attribute.value)
                if opus == nil, map.encoding.lowercased().hasPrefix("opus/48000") { opus = map.payloadType }
            case "extmap":
                let map = try Self.extmap(attribute.value)
                if level == nil, map.uri == Self.audioLevelURI { level = map.id }
            default:
                continue
            }
        }
        guard let opus else { throw .noAudio }
        audioIndex = 0
        mediaCount = 1
        opusPayloadType = opus
        audioLevelID = level
    }

    /// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<parameters>]` (RFC 8866 §6.6).
    /// - Throws: `.malformedSDP` when the payload type is not 0…127 or the encoding is missing.
    static func rtpmap(_ value: String) throws(WebRTCError) -> (payloadType: Int, encoding: Substring) {
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, let payloadType = decimal(parts[0], in: 0...127), !parts[1].isEmpty else {
            throw .malformedSDP("bad a=rtpmap:\(value.prefix(80))")
        }
        return (payloadType, parts[1])
    }

    /// `a=extmap:<id>[/<direction>] <URI> [<attributes>]` (RFC 8285 §8).
    /// - Throws: `.malformedSDP` when the id is not 1…255 (a direction, if any, is not one of RFC 8285's
    ///   four) or the URI is missing.
    static func extmap(_ value: String) throws(WebRTCError) -> (id: Int, uri: Substring) {
        let refused = WebRTCError.malformedSDP("bad a=extmap:\(value.prefix(80))")
        let parts = value.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 2 else { throw refused }
        let idAndDirection = parts[0].split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let first = idAndDirection.first, let id = decimal(first, in: 1...255) else { throw refused }
        if idAndDirection.count == 2, !["sendrecv", "sendonly", "recvonly", "inactive"].contains(idAndDirection[1]) {
            throw refused
        }
        return (id, parts[1])
    }

    /// A decimal number of at most 3 ASCII digits within `range`, or nil.
    private static func decimal(_ text: Substring, in range: ClosedRange<Int>) -> Int? {
        guard (1...3).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(text) else {
            return nil
        }
        return range.contains(value) ? value : nil
    }

    private static func attributes(count: UInt32, _ get: (UInt32) -> UnsafePointer<GstSDPAttribute>?) -> [(key: String, value: String)] {
        (0..<count).compactMap { index in
            guard let attribute = get(index), let key = attribute.pointee.key else { return nil }
            return (String(cString: key), attribute.pointee.value.map { String(cString: $0) } ?? "")
        }
    }

    /// Parses `sdp` with GStreamer's SDP parser (lenient: it skips lines it does not know), after checking
    /// that it is at least shaped like SDP (`v=0` first, an `o=` line) and has no NUL (GStreamer reads a C
    /// string: what follows a NUL would be checked by nobody).
    /// - Returns: a message the caller frees with `gst_sdp_message_free` (or hands to a session description).
    /// - Complexity: O(*n*) in the offer's UTF-8 bytes.
    static func parse(_ sdp: String) throws(WebRTCError) -> UnsafeMutablePointer<GstSDPMessage> {
        guard !sdp.utf8.contains(0) else { throw .malformedSDP("it contains a NUL") }
        // Lines end with CR, LF or both; empty lines are skipped.
        let lines = sdp.utf8.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D })
        let first = lines.first.map { line in line.drop(while: { $0 == 0x20 || $0 == 0x09 }) }
        guard let first, first.starts(with: "v=0".utf8), first.dropFirst(3).allSatisfy({ $0 == 0x20 || $0 == 0x09 }) else {
            throw .malformedSDP("it does not start with v=0")
        }
        guard lines.contains(where: { $0.starts(with: "o=".utf8) }) else { throw .malformedSDP("no o= line") }
        var message: UnsafeMutablePointer<GstSDPMessage>?
        guard gst_sdp_message_new_from_text(sdp, &message) == GST_SDP_OK, let message else {
            throw .malformedSDP("GStreamer's SDP parser refused it")
        }
        return message
    }
}

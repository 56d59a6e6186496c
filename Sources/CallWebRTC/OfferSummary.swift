import CGStreamer

/// What the peer needs from a browser's offer: the audio m-line and how it carries Opus and levels.
struct OfferSummary: Equatable {
    /// The index of the audio m-line.
    var audioIndex: Int
    /// The number of m-lines (candidates name one by index).
    var mediaCount: Int
    /// The payload type the offer gives `opus/48000/2`.
    var opusPayloadType: Int
    /// The extension id the offer gives `urn:ietf:params:rtp-hdrext:ssrc-audio-level`, if any.
    var audioLevelID: Int?

    static let audioLevelURI = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"

    /// Reads a parsed offer.
    /// - Throws: `.malformedSDP` without ICE credentials or a DTLS fingerprint, `.noAudio` without an
    ///   audio m-line (port not 0) offering Opus/48000/2.
    init(_ message: UnsafePointer<GstSDPMessage>) throws(WebRTCError) {
        let count = Int(gst_sdp_message_medias_len(message))
        guard count > 0 else { throw .noAudio }
        mediaCount = count
        let sessionAttributes = Self.attributes(count: gst_sdp_message_attributes_len(message)) {
            gst_sdp_message_get_attribute(message, $0)
        }
        var found: (index: Int, payloadType: Int, levelID: Int?)?
        for index in 0..<count {
            guard let media = gst_sdp_message_get_media(message, UInt32(index)) else { continue }
            let attributes = Self.attributes(count: gst_sdp_media_attributes_len(media)) { gst_sdp_media_get_attribute(media, $0) }
            let all = sessionAttributes + attributes
            for key in ["ice-ufrag", "ice-pwd", "fingerprint"] where !all.contains(where: { $0.key == key }) {
                throw .malformedSDP("m-line \(index) has no a=\(key)")
            }
            guard found == nil, gst_sdp_media_get_media(media).map({ String(cString: $0) }) == "audio",
                gst_sdp_media_get_port(media) != 0
            else { continue }
            let opus = attributes.lazy.filter { $0.key == "rtpmap" }.compactMap { attribute -> Int? in
                let parts = attribute.value.split(separator: " ", maxSplits: 1)
                guard parts.count == 2, parts[1].lowercased().hasPrefix("opus/48000") else { return nil }
                return Int(parts[0])
            }.first
            guard let opus else { continue }
            let level = attributes.lazy.filter { $0.key == "extmap" }.compactMap { attribute -> Int? in
                let parts = attribute.value.split(separator: " ")
                guard parts.count >= 2, parts[1] == Self.audioLevelURI else { return nil }
                return Int(parts[0].split(separator: "/")[0])
            }.first
            found = (index, opus, level)
        }
        guard let found else { throw .noAudio }
        audioIndex = found.index
        opusPayloadType = found.payloadType
        audioLevelID = found.levelID
    }

    private static func attributes(count: UInt32, _ get: (UInt32) -> UnsafePointer<GstSDPAttribute>?) -> [(key: String, value: String)] {
        (0..<count).compactMap { index in
            guard let attribute = get(index), let key = attribute.pointee.key else { return nil }
            return (String(cString: key), attribute.pointee.value.map { String(cString: $0) } ?? "")
        }
    }

    /// Parses `sdp` with GStreamer's SDP parser (lenient: it skips lines it does not know), after checking
    /// that it is at least shaped like SDP (`v=0` first, an `o=` line).
    /// - Returns: a message the caller frees with `gst_sdp_message_free` (or hands to a session description).
    static func parse(_ sdp: String) throws(WebRTCError) -> UnsafeMutablePointer<GstSDPMessage> {
        let lines = sdp.split(whereSeparator: \.isNewline)
        guard lines.first.map({ String($0).trimmingWhitespace }) == "v=0" else { throw .malformedSDP("it does not start with v=0") }
        guard lines.contains(where: { $0.hasPrefix("o=") }) else { throw .malformedSDP("no o= line") }
        var message: UnsafeMutablePointer<GstSDPMessage>?
        guard gst_sdp_message_new_from_text(sdp, &message) == GST_SDP_OK, let message else {
            throw .malformedSDP("GStreamer's SDP parser refused it")
        }
        return message
    }
}

import CGStreamer

/// libFuzzer target for what the server reads from a browser's `offer` and `ice-candidate`:
/// `OfferSummary.parse` (the shape check, then GStreamer's SDP parser), `OfferSummary(_:)` on what it
/// parsed, the `a=rtpmap`/`a=extmap` readers alone, and `ICECandidateSyntax.check`.
///
/// Built by `tools/network/fuzz_call.sh sdp` together with `OfferSummary.swift`, `ICECandidateSyntax.swift` and
/// `WebRTCError.swift` of CallWebRTC into one module, linked with GStreamer's SDP library (not
/// instrumented: coverage counts the Swift side; the dictionary supplies SDP's syntax).
///
/// Input: one offer's text. Bytes that are not UTF-8 are skipped (the transport refuses them). A refusal
/// must be `.malformedSDP` or `.noAudio` (4007); an accepted offer must have one audio m-line with a
/// payload type 0…127 and, if any, a level extension id 1…255. Each line also goes to the
/// candidate check and the attribute readers: a refusal must be `.candidate`/`.malformedSDP`, an
/// accepted candidate must start `candidate:`, and its address counts as an IP address only where
/// `inet_pton` says so.

@_cdecl("LLVMFuzzerTestOneInput")
public func sdpFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    checkOffer(text)
    for bytes in text.utf8.split(whereSeparator: { $0 == 0x0A || $0 == 0x0D }) {
        let line = String(Substring(bytes))
        checkCandidate(line)
        if line.hasPrefix("a=rtpmap:") { checkRtpmap(String(line.dropFirst(9))) }
        if line.hasPrefix("a=extmap:") { checkExtmap(String(line.dropFirst(9))) }
    }
    return 0
}

private func checkOffer(_ text: String) {
    let message: UnsafeMutablePointer<GstSDPMessage>
    do {
        message = try OfferSummary.parse(text)
    } catch {
        guard case .malformedSDP = error else { preconditionFailure("parse refused with \(error)") }
        return
    }
    defer { gst_sdp_message_free(message) }
    let summary: OfferSummary
    do {
        summary = try OfferSummary(message)
    } catch {
        switch error {
        case .malformedSDP, .noAudio: return
        default: preconditionFailure("the summary refused with \(error)")
        }
    }
    precondition(summary.mediaCount == 1 && summary.audioIndex == 0, "accepted \(summary)")
    precondition((0...127).contains(summary.opusPayloadType), "accepted payload type \(summary.opusPayloadType)")
    precondition(summary.audioLevelID.map { (1...255).contains($0) } ?? true, "accepted level id \(summary.audioLevelID!)")
    precondition(text.contains("m=audio") && text.lowercased().contains("opus/48000"), "accepted an offer without Opus audio")
}

private func checkCandidate(_ text: String) {
    switch ICECandidateSyntax.check(text) {
    case .failure(let error):
        guard case .candidate = error else { preconditionFailure("candidate refused with \(error)") }
    case .success(let attribute):
        precondition(attribute.text.isEmpty || attribute.text.hasPrefix("candidate:"), "accepted \(attribute)")
        if attribute.hasIPAddress {
            let address = attribute.text.split(separator: " ")[4]
            precondition(address.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }, "\(address) counted as an IP address")
        }
    }
}

private func checkRtpmap(_ value: String) {
    do {
        let map = try OfferSummary.rtpmap(value)
        precondition((0...127).contains(map.payloadType) && !map.encoding.isEmpty, "rtpmap accepted \(value)")
    } catch {
        guard case .malformedSDP = error else { preconditionFailure("rtpmap refused with \(error)") }
    }
}

private func checkExtmap(_ value: String) {
    do {
        let map = try OfferSummary.extmap(value)
        precondition((1...255).contains(map.id) && !map.uri.isEmpty, "extmap accepted \(value)")
    } catch {
        guard case .malformedSDP = error else { preconditionFailure("extmap refused with \(error)") }
    }
}

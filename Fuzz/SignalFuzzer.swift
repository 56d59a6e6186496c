/// libFuzzer target for the signalling decoders: `ClientMessage(json:)` (what the server reads from every
/// WebSocket text frame) and `ServerMessage(json:)` (what the client SDK reads from the server).
///
/// Built by `tools/network/fuzz_call.sh signal` together with the CallProtocol sources into one module, with
/// `swiftc -sanitize=fuzzer,address`.
///
/// Input: one text frame. Bytes that are not UTF-8 are skipped, as the transport refuses them before any
/// decoder sees them. The frame goes to both decoders; a refusal must be `.malformedMessage`, and every
/// message that parses must satisfy its decoder's checks and survive `.json` and a second parse:
/// - a client message comes back equal, and its JSON is a fixed point (the same text again);
/// - a server message comes back equal once its time is rounded to the millisecond, which is what
///   `.json` writes (a time from about 1.8e305 s on, where `time * 1000` overflows, is whole and kept);
///   its JSON is a fixed point whenever that rounding is (it need not be from about 2^51 ms on).

@_cdecl("LLVMFuzzerTestOneInput")
public func signalFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    // The transport's MessageAssembler hands on only valid UTF-8.
    guard let text = String(validating: UnsafeBufferPointer(start: data, count: size), as: UTF8.self) else { return 0 }
    checkClientMessage(text)
    checkServerMessage(text)
    return 0
}

private func checkClientMessage(_ text: String) {
    let message: ClientMessage
    do {
        message = try ClientMessage(json: text)
    } catch {
        precondition(error.code == .malformedMessage, "client decoder refused with \(error.code)")
        return
    }
    if case .join(_, _, _, let rtpPort, let displayName) = message {
        precondition(rtpPort.map { (1...65535).contains($0) } ?? true, "join accepted rtpPort \(rtpPort!)")
        precondition(displayName.map { !$0.isEmpty && $0.count <= 128 } ?? true, "join accepted a bad displayName")
    }
    if case .offer(let sdp) = message { precondition(!sdp.isEmpty, "offer accepted an empty sdp") }
    if case .iceCandidate(let candidate) = message {
        precondition((0...65535).contains(candidate.sdpMLineIndex), "ice-candidate accepted sdpMLineIndex \(candidate.sdpMLineIndex)")
        precondition(candidate.candidate.utf8.count <= ICECandidate.maximumLength, "ice-candidate accepted a long candidate")
    }
    let json = message.json
    let again: ClientMessage
    do {
        again = try ClientMessage(json: json)
    } catch {
        preconditionFailure("\(message) wrote \(json), which does not parse: \(error)")
    }
    precondition(again == message, "\(message) came back as \(again)")
    precondition(again.json == json, "\(json) came back as \(again.json)")
}

private func checkServerMessage(_ text: String) {
    let message: ServerMessage
    do {
        message = try ServerMessage(json: text)
    } catch {
        precondition(error.code == .malformedMessage, "server decoder refused with \(error.code)")
        return
    }
    let json = message.json
    let again: ServerMessage
    do {
        again = try ServerMessage(json: json)
    } catch {
        preconditionFailure("\(message) wrote \(json), which does not parse: \(error)")
    }
    precondition(again == millisecondRounded(message), "\(message) came back as \(again)")
    if millisecondRounded(again) == again {
        precondition(again.json == json, "\(json) came back as \(again.json)")
    }
}

/// The message with its time as `.json` writes it: rounded to the millisecond.
private func millisecondRounded(_ message: ServerMessage) -> ServerMessage {
    func rounded(_ time: Double) -> Double {
        let milliseconds = (time * 1000).rounded() / 1000
        return milliseconds.isFinite ? milliseconds : time
    }
    switch message {
    case .speakerChanged(let id, let time): return .speakerChanged(id, time: rounded(time))
    case .audioLevels(let time, let levels, let speaking): return .audioLevels(time: rounded(time), levels: levels, speaking: speaking)
    default: return message
    }
}

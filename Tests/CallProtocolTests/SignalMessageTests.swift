import Testing
import CallProtocol
import Foundation
import TestSupport

@Suite struct SignalMessageTests {
    static let alice = ParticipantInfo(id: "alice", displayName: "Alice", role: .publisher, micMuted: false, audio: true, video: false, ssrc: 0x1234_5678)
    static let viewer = ParticipantInfo(id: "v", displayName: "Viewer", role: .subscriber, micMuted: true, audio: false, video: false, ssrc: nil)

    static let clientMessages: [ClientMessage] = [
        .join(token: "t.o.k", mic: false, webcam: true, rtpPort: 40000), .join(token: "x", mic: true, webcam: false, rtpPort: nil),
        .join(token: "x", mic: true, webcam: false, rtpPort: nil, displayName: "Zoë"),
        .leave, .muteMic, .unmuteMic, .enableStream(.video), .disableStream(.audio),
        .message(.text("hi \"there\"\n"), to: nil), .message(.data([0, 1, 255]), to: "bob"),
        .muteParticipant("bob"), .unmuteParticipant("bob"), .removeParticipant("bob"), .ping, .observe(token: "t.o.k"),
        .offer(sdp: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n"),
        .iceCandidate(ICECandidate(candidate: "candidate:1 1 udp 2122260223 192.168.1.5 50000 typ host", sdpMLineIndex: 0, sdpMid: "0")),
        .iceCandidate(ICECandidate(candidate: "", sdpMLineIndex: 0)),
    ]

    static let serverMessages: [ServerMessage] = [
        .joined(JoinedRoom(roomID: "r", participantID: "alice", participants: [alice, viewer], speakerID: nil,
            media: MediaDescription(rtpPort: 40000, ssrc: 0x1234_5678))),
        .joined(JoinedRoom(roomID: "r", participantID: "v", participants: [alice, viewer], speakerID: "alice", media: nil)),
        .participantJoined(alice), .participantLeft("alice", reason: .timeout), .streamEnabled("alice", .video),
        .streamDisabled("alice", .audio), .micMuted("alice", muted: true, by: "mod"), .micMuted("alice", muted: false, by: nil),
        .speakerChanged("alice", time: 1.25), .speakerChanged(nil, time: 2.5),
        .audioLevels(time: 3.2, levels: ["alice": -20.5, "bob": -127], speaking: ["alice"]),
        .message(.text("hello"), from: "alice", to: nil), .message(.data([9, 8]), from: "alice", to: "bob"),
        .error(CallError(.roomFull, "room full")), .pong,
        .observing(ObservedRoom(roomID: "r", participants: [alice], speakerID: nil)),
        .observing(ObservedRoom(roomID: "r", participants: [], speakerID: "alice")),
        .answer(sdp: "v=0\r\ns=-\r\n"),
        .iceCandidate(ICECandidate(candidate: "candidate:1 1 UDP 2015363327 127.0.0.1 41234 typ host", sdpMLineIndex: 0)),
    ]

    @Test(arguments: clientMessages)
    func clientMessagesRoundTrip(message: ClientMessage) throws {
        #expect(try ClientMessage(json: message.json) == message)
    }

    @Test(arguments: serverMessages)
    func serverMessagesRoundTrip(message: ServerMessage) throws {
        #expect(try ServerMessage(json: message.json) == message)
    }

    @Test func nobodyIsAnExplicitNull() {
        #expect(ServerMessage.speakerChanged(nil, time: 1).json == #"{"participantId":null,"t":1,"type":"speaker-changed"}"#)
        #expect(ServerMessage.speakerChanged("bob", time: 0.5).json == #"{"participantId":"bob","t":0.5,"type":"speaker-changed"}"#)
        #expect(ServerMessage.joined(JoinedRoom(roomID: "r", participantID: "p", participants: [], speakerID: nil, media: nil)).json
            .contains(#""speakerId":null"#))
    }

    /// Found by Fuzz/SignalFuzzer.swift (seed regression-huge-time): a time from about 1.8e305 s on was
    /// parsed, and then `.json` trapped, its milliseconds having overflowed to infinity.
    @Test func aTimeTooLargeForMillisecondsIsWrittenAsItIs() throws {
        let message = try ServerMessage(json: #"{"type":"speaker-changed","participantId":"alice","t":2.341E+305}"#)
        #expect(message == .speakerChanged("alice", time: 2.341e305))
        #expect(try ServerMessage(json: message.json) == message)
        let levels = ServerMessage.audioLevels(time: -.greatestFiniteMagnitude, levels: ["alice": -20], speaking: [])
        #expect(try ServerMessage(json: levels.json) == levels)
        #expect(ServerMessage.speakerChanged(nil, time: 0.0004).json == #"{"participantId":null,"t":0,"type":"speaker-changed"}"#)
    }

    @Test func wireNamesAreTheDocumentedOnes() {
        #expect(ClientMessage.muteMic.json == #"{"type":"mute-mic"}"#)
        #expect(ClientMessage.join(token: "T", mic: true, webcam: false, rtpPort: 5000).json
            == #"{"mic":true,"rtpPort":5000,"token":"T","type":"join","webcam":false}"#)
        #expect(ServerMessage.error(CallError(.invalidToken, "bad")).json == #"{"code":4001,"message":"bad","type":"error"}"#)
    }

    /// Every message type is one row of docs/call.md's tables, and every row a message type: the type
    /// enums are the protocol's one table of names.
    @Test func messageTypesAreTheDocumentedTables() throws {
        let doc = try String(contentsOfFile: FixturePaths.repositoryRoot.appendingPathComponent("docs/call.md").path, encoding: .utf8)
        func rows(under heading: String) -> Set<String> {
            let section = doc.components(separatedBy: heading)[1].components(separatedBy: "\n### ")[0]
            var names = Set<String>()
            for line in section.split(separator: "\n") where line.hasPrefix("| `") {
                let cell = line.dropFirst(2).prefix { $0 != "|" }
                for part in cell.components(separatedBy: " / ") { names.insert(part.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`"))) }
            }
            return names
        }
        #expect(Set(ClientMessageType.allCases.map(\.rawValue)) == rows(under: "### Client to server"))
        #expect(Set(ServerMessageType.allCases.map(\.rawValue)) == rows(under: "### Server to client"))
    }

    @Test(arguments: [
        (#"{"type":"join"}"#, #"malformed message: join needs "token""#),
        (#"{"type":"mute-participant"}"#, #"malformed message: mute-participant needs "participantId""#),
        (#"{"type":"enable-stream"}"#, #"malformed message: enable-stream needs "kind""#),
        (#"{"type":"message","to":"bob"}"#, #"malformed message: message needs "text" or "data""#),
        (#"{"type":"join","token":5}"#, "malformed message: join has a field of the wrong type"),
        (#"{"type":"dance"}"#, #"malformed message: unknown type "dance""#),
        (#"{"type":"offer"}"#, #"malformed message: offer needs "sdp""#),
        (#"{"type":"ice-candidate","candidate":"c","sdpMLineIndex":-1}"#, "malformed message: sdpMLineIndex must be 0-65535"),
    ])
    func aMalformedMessageSaysWhatIsWrong(text: String, sentence: String) {
        #expect(throws: CallError(.malformedMessage, sentence)) { try ClientMessage(json: text) }
    }

    @Test func webRTCMessagesHaveTheDocumentedFields() throws {
        #expect(ClientMessage.offer(sdp: "v=0").json == #"{"sdp":"v=0","type":"offer"}"#)
        #expect(ServerMessage.iceCandidate(ICECandidate(candidate: "candidate:x", sdpMLineIndex: 0)).json
            == #"{"candidate":"candidate:x","sdpMLineIndex":0,"type":"ice-candidate"}"#)
        // What a browser's `RTCIceCandidate.toJSON()` gives, spread into the message, parses.
        let browser = #"{"type":"ice-candidate","candidate":"candidate:1 1 udp 1 10.0.0.1 9 typ host","sdpMid":"0","sdpMLineIndex":0,"usernameFragment":"abcd"}"#
        #expect(try ClientMessage(json: browser)
            == .iceCandidate(ICECandidate(candidate: "candidate:1 1 udp 1 10.0.0.1 9 typ host", sdpMLineIndex: 0, sdpMid: "0")))
        let long = String(repeating: "a", count: ICECandidate.maximumLength + 1)
        #expect(throws: CallError.self) { try ClientMessage(json: #"{"type":"ice-candidate","candidate":"\#(long)","sdpMLineIndex":0}"#) }
    }

    @Test func everyMessageNamesItsType() {
        #expect(ClientMessage.removeParticipant("bob").type == .removeParticipant)
        #expect(ServerMessage.speakerChanged(nil, time: 1).type.rawValue == "speaker-changed")
    }

    @Test func joinDefaultsMicOnAndWebcamOff() throws {
        #expect(try ClientMessage(json: #"{"type":"join","token":"T"}"#) == .join(token: "T", mic: true, webcam: false, rtpPort: nil))
    }

    @Test(arguments: [
        "", "null", "[]", "{}", #"{"type":1}"#, #"{"type":"dance"}"#, #"{"type":"join"}"#, #"{"type":"join","token":"T","rtpPort":0}"#,
        #"{"type":"join","token":"T","rtpPort":70000}"#, #"{"type":"enable-stream","kind":"smell"}"#,
        #"{"type":"message"}"#, #"{"type":"message","text":"a","data":"AA=="}"#, #"{"type":"message","data":"%%%"}"#,
        #"{"type":"mute-participant"}"#, "{\"type\":\"ping\"", #"{"type":"join","token":5}"#,
        #"{"type":"join","token":"T","displayName":""}"#,
        #"{"type":"offer"}"#, #"{"type":"offer","sdp":""}"#, #"{"type":"offer","sdp":5}"#,
        #"{"type":"ice-candidate","candidate":"candidate:1 1 udp 1 1.2.3.4 5 typ host"}"#,
        #"{"type":"ice-candidate","candidate":"c","sdpMLineIndex":-1}"#,
        #"{"type":"ice-candidate","candidate":"c","sdpMLineIndex":70000}"#,
    ])
    func malformedClientMessagesAreRefused(text: String) {
        do {
            let message = try ClientMessage(json: text)
            Issue.record("accepted \(message)")
        } catch {
            #expect(error.code == .malformedMessage)
        }
    }

    @Test func everyErrorCodeHasAnHTTPStatus() {
        for code in CallErrorCode.allCases { #expect((400...599).contains(code.httpStatus)) }
        #expect(CallErrorCode.invalidToken.httpStatus == 401)
        #expect(CallErrorCode.roomNotFound.httpStatus == 404)
    }
}

@Suite struct JSONTextTests {
    @Test func quotedEscapesWhatJSONRequires() throws {
        let text = "a\"b\\c\nd\u{01}é/"
        let quoted = JSON.quoted(text)
        #expect(quoted.hasPrefix("\"") && quoted.hasSuffix("\""))
        #expect(!quoted.contains("\n") && !quoted.contains("\u{01}"))
        // Whatever the escapes, it reads back as the same string.
        #expect(JSON.decode(String.self, from: Array(quoted.utf8)) == text)
        #expect(JSON.quoted("room-1") == #""room-1""#)
    }
}

import Foundation

/// A message from a client to the server (docs/call.md, "Client to server").
public enum ClientMessage: Sendable, Hashable {
    /// Must come first. `rtpPort`: the UDP port the client sends RTP from and receives forwarded RTP on.
    /// `displayName` replaces the token's name (1–128 characters).
    case join(token: String, mic: Bool, webcam: Bool, rtpPort: Int?, displayName: String? = nil)
    case leave
    case muteMic
    case unmuteMic
    case enableStream(StreamKind)
    case disableStream(StreamKind)
    /// To one participant, or to everyone when `to` is nil.
    case message(MessageBody, to: String?)
    /// Moderators only. The participant cannot unmute itself until a moderator sends `unmuteParticipant`.
    case muteParticipant(String)
    /// Moderators only: lifts a moderator's mute (the participant's microphone is live again).
    case unmuteParticipant(String)
    /// Moderators only. The participant cannot rejoin for the server's rejoin ban, unless with a token
    /// issued after the removal.
    case removeParticipant(String)
    case ping
}

/// A message from the server to a client (docs/call.md, "Server to client").
public enum ServerMessage: Sendable, Hashable {
    case joined(JoinedRoom)
    case participantJoined(ParticipantInfo)
    case participantLeft(String, reason: LeaveReason)
    case streamEnabled(String, StreamKind)
    case streamDisabled(String, StreamKind)
    /// `by`: the moderator who muted the participant, nil when it muted itself.
    case micMuted(String, muted: Bool, by: String?)
    /// The dominant speaker from `time` (seconds of room time) on; nil when nobody speaks.
    case speakerChanged(String?, time: Double)
    /// Levels in dBov (−127…0) per participant, and who speaks now.
    case audioLevels(time: Double, levels: [String: Double], speaking: [String])
    case message(MessageBody, from: String, to: String?)
    case error(CallError)
    case pong
}

/// Every field any message has, for Codable; `type` selects which are meaningful.
private struct Wire: Codable {
    var type: String
    var token: String?
    var mic: Bool?
    var webcam: Bool?
    var rtpPort: Int?
    var kind: StreamKind?
    var text: String?
    var data: String?
    var to: String?
    var from: String?
    var participantId: String?
    var displayName: String?
    var roomId: String?
    var participants: [ParticipantInfo]?
    var participant: ParticipantInfo?
    var speakerId: String?
    var media: MediaDescription?
    var reason: LeaveReason?
    var muted: Bool?
    var by: String?
    var t: Double?
    var levels: [String: Double]?
    var speaking: [String]?
    var code: Int?
    var message: String?
    /// Keys written as `null` when their value is nil (`speakerId`, `participantId` of speaker-changed).
    var nullKeys: [CodingKeys] = []

    init(type: String) { self.type = type }

    enum CodingKeys: String, CodingKey {
        case type, token, mic, webcam, rtpPort, kind, text, data, to, from, participantId, displayName, roomId, participants,
            participant, speakerId, media, reason, muted, by, t, levels, speaking, code, message
    }

    init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        type = try c.decode(String.self, forKey: .type)
        token = try c.decodeIfPresent(String.self, forKey: .token)
        mic = try c.decodeIfPresent(Bool.self, forKey: .mic)
        webcam = try c.decodeIfPresent(Bool.self, forKey: .webcam)
        rtpPort = try c.decodeIfPresent(Int.self, forKey: .rtpPort)
        kind = try c.decodeIfPresent(StreamKind.self, forKey: .kind)
        text = try c.decodeIfPresent(String.self, forKey: .text)
        data = try c.decodeIfPresent(String.self, forKey: .data)
        to = try c.decodeIfPresent(String.self, forKey: .to)
        from = try c.decodeIfPresent(String.self, forKey: .from)
        participantId = try c.decodeIfPresent(String.self, forKey: .participantId)
        displayName = try c.decodeIfPresent(String.self, forKey: .displayName)
        roomId = try c.decodeIfPresent(String.self, forKey: .roomId)
        participants = try c.decodeIfPresent([ParticipantInfo].self, forKey: .participants)
        participant = try c.decodeIfPresent(ParticipantInfo.self, forKey: .participant)
        speakerId = try c.decodeIfPresent(String.self, forKey: .speakerId)
        media = try c.decodeIfPresent(MediaDescription.self, forKey: .media)
        reason = try c.decodeIfPresent(LeaveReason.self, forKey: .reason)
        muted = try c.decodeIfPresent(Bool.self, forKey: .muted)
        by = try c.decodeIfPresent(String.self, forKey: .by)
        t = try c.decodeIfPresent(Double.self, forKey: .t)
        levels = try c.decodeIfPresent([String: Double].self, forKey: .levels)
        speaking = try c.decodeIfPresent([String].self, forKey: .speaking)
        code = try c.decodeIfPresent(Int.self, forKey: .code)
        message = try c.decodeIfPresent(String.self, forKey: .message)
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
        try c.encodeIfPresent(token, forKey: .token)
        try c.encodeIfPresent(mic, forKey: .mic)
        try c.encodeIfPresent(webcam, forKey: .webcam)
        try c.encodeIfPresent(rtpPort, forKey: .rtpPort)
        try c.encodeIfPresent(kind, forKey: .kind)
        try c.encodeIfPresent(text, forKey: .text)
        try c.encodeIfPresent(data, forKey: .data)
        try c.encodeIfPresent(to, forKey: .to)
        try c.encodeIfPresent(from, forKey: .from)
        try c.encodeIfPresent(participantId, forKey: .participantId)
        try c.encodeIfPresent(displayName, forKey: .displayName)
        try c.encodeIfPresent(roomId, forKey: .roomId)
        try c.encodeIfPresent(participants, forKey: .participants)
        try c.encodeIfPresent(participant, forKey: .participant)
        try c.encodeIfPresent(speakerId, forKey: .speakerId)
        try c.encodeIfPresent(media, forKey: .media)
        try c.encodeIfPresent(reason, forKey: .reason)
        try c.encodeIfPresent(muted, forKey: .muted)
        try c.encodeIfPresent(by, forKey: .by)
        try c.encodeIfPresent(t, forKey: .t)
        try c.encodeIfPresent(levels, forKey: .levels)
        try c.encodeIfPresent(speaking, forKey: .speaking)
        try c.encodeIfPresent(code, forKey: .code)
        try c.encodeIfPresent(message, forKey: .message)
        for key in nullKeys { try c.encodeNil(forKey: key) }
    }

    var body: MessageBody? {
        if let text, data == nil { return .text(text) }
        if let data, text == nil, let bytes = Data(base64Encoded: data) { return .data([UInt8](bytes)) }
        return nil
    }

    mutating func setBody(_ body: MessageBody) {
        switch body {
        case .text(let value): text = value
        case .data(let bytes): data = Data(bytes).base64EncodedString()
        }
    }
}

extension ClientMessage {
    /// The message as one line of JSON.
    public var json: String { String(decoding: JSON.encode(wire), as: UTF8.self) }

    private var wire: Wire {
        switch self {
        case .join(let token, let mic, let webcam, let rtpPort, let displayName):
            var w = Wire(type: "join")
            w.displayName = displayName
            w.token = token
            w.mic = mic
            w.webcam = webcam
            w.rtpPort = rtpPort
            return w
        case .leave: return Wire(type: "leave")
        case .muteMic: return Wire(type: "mute-mic")
        case .unmuteMic: return Wire(type: "unmute-mic")
        case .enableStream(let kind):
            var w = Wire(type: "enable-stream")
            w.kind = kind
            return w
        case .disableStream(let kind):
            var w = Wire(type: "disable-stream")
            w.kind = kind
            return w
        case .message(let body, let to):
            var w = Wire(type: "message")
            w.setBody(body)
            w.to = to
            return w
        case .muteParticipant(let id):
            var w = Wire(type: "mute-participant")
            w.participantId = id
            return w
        case .unmuteParticipant(let id):
            var w = Wire(type: "unmute-participant")
            w.participantId = id
            return w
        case .removeParticipant(let id):
            var w = Wire(type: "remove-participant")
            w.participantId = id
            return w
        case .ping: return Wire(type: "ping")
        }
    }

    /// Parses one client message.
    /// - Throws: `CallError` `.malformedMessage` naming what is wrong.
    public init(json text: String) throws(CallError) {
        guard let w = JSON.decode(Wire.self, from: Array(text.utf8)) else {
            throw CallError(.malformedMessage, "malformed message: not a JSON object with a string \"type\" and valid fields")
        }
        func required<T>(_ value: T?, _ field: String) throws(CallError) -> T {
            guard let value else { throw CallError(.malformedMessage, "malformed message: \(w.type) needs \"\(field)\"") }
            return value
        }
        switch w.type {
        case "join":
            if let port = w.rtpPort, !(1...65535).contains(port) {
                throw CallError(.malformedMessage, "malformed message: rtpPort must be 1-65535")
            }
            if let name = w.displayName, name.isEmpty || name.count > 128 {
                throw CallError(.malformedMessage, "malformed message: displayName must be 1-128 characters")
            }
            self = .join(
                token: try required(w.token, "token"), mic: w.mic ?? true, webcam: w.webcam ?? false, rtpPort: w.rtpPort,
                displayName: w.displayName)
        case "leave": self = .leave
        case "mute-mic": self = .muteMic
        case "unmute-mic": self = .unmuteMic
        case "enable-stream": self = .enableStream(try required(w.kind, "kind"))
        case "disable-stream": self = .disableStream(try required(w.kind, "kind"))
        case "message": self = .message(try required(w.body, "text\" or \"data"), to: w.to)
        case "mute-participant": self = .muteParticipant(try required(w.participantId, "participantId"))
        case "unmute-participant": self = .unmuteParticipant(try required(w.participantId, "participantId"))
        case "remove-participant": self = .removeParticipant(try required(w.participantId, "participantId"))
        case "ping": self = .ping
        default: throw CallError(.malformedMessage, "malformed message: unknown type \"\(w.type)\"")
        }
    }
}

extension ServerMessage {
    /// The message as one line of JSON.
    public var json: String { String(decoding: JSON.encode(wire), as: UTF8.self) }

    /// The protocol's name of the message, e.g. `speaker-changed`.
    public var type: String { wire.type }

    private var wire: Wire {
        switch self {
        case .joined(let room):
            var w = Wire(type: "joined")
            w.roomId = room.roomID
            w.participantId = room.participantID
            w.participants = room.participants
            w.speakerId = room.speakerID
            if room.speakerID == nil { w.nullKeys.append(.speakerId) }
            w.media = room.media
            return w
        case .participantJoined(let participant):
            var w = Wire(type: "participant-joined")
            w.participant = participant
            return w
        case .participantLeft(let id, let reason):
            var w = Wire(type: "participant-left")
            w.participantId = id
            w.reason = reason
            return w
        case .streamEnabled(let id, let kind):
            var w = Wire(type: "stream-enabled")
            w.participantId = id
            w.kind = kind
            return w
        case .streamDisabled(let id, let kind):
            var w = Wire(type: "stream-disabled")
            w.participantId = id
            w.kind = kind
            return w
        case .micMuted(let id, let muted, let by):
            var w = Wire(type: "mic-muted")
            w.participantId = id
            w.muted = muted
            w.by = by
            return w
        case .speakerChanged(let id, let time):
            var w = Wire(type: "speaker-changed")
            w.participantId = id
            if id == nil { w.nullKeys.append(.participantId) }
            w.t = Self.milliseconds(time)
            return w
        case .audioLevels(let time, let levels, let speaking):
            var w = Wire(type: "audio-levels")
            w.t = Self.milliseconds(time)
            w.levels = levels
            w.speaking = speaking
            return w
        case .message(let body, let from, let to):
            var w = Wire(type: "message")
            w.setBody(body)
            w.from = from
            w.to = to
            return w
        case .error(let error):
            var w = Wire(type: "error")
            w.code = error.code.rawValue
            w.message = error.message
            return w
        case .pong: return Wire(type: "pong")
        }
    }

    /// `time` rounded to the millisecond, as `t` is written. A time from about 1.8e305 s on, where
    /// `time * 1000` overflows to infinity (which JSON cannot carry), is a whole number already and is
    /// written as it is.
    static func milliseconds(_ time: Double) -> Double {
        let rounded = (time * 1000).rounded() / 1000
        return rounded.isFinite ? rounded : time
    }

    /// Parses one server message.
    /// - Throws: `CallError` `.malformedMessage` naming what is wrong.
    public init(json text: String) throws(CallError) {
        guard let w = JSON.decode(Wire.self, from: Array(text.utf8)) else {
            throw CallError(.malformedMessage, "malformed server message: \(text.prefix(200))")
        }
        func required<T>(_ value: T?, _ field: String) throws(CallError) -> T {
            guard let value else { throw CallError(.malformedMessage, "malformed server message: \(w.type) needs \"\(field)\"") }
            return value
        }
        switch w.type {
        case "joined":
            self = .joined(
                JoinedRoom(
                    roomID: try required(w.roomId, "roomId"), participantID: try required(w.participantId, "participantId"),
                    participants: try required(w.participants, "participants"), speakerID: w.speakerId, media: w.media))
        case "participant-joined": self = .participantJoined(try required(w.participant, "participant"))
        case "participant-left":
            self = .participantLeft(try required(w.participantId, "participantId"), reason: w.reason ?? .left)
        case "stream-enabled": self = .streamEnabled(try required(w.participantId, "participantId"), try required(w.kind, "kind"))
        case "stream-disabled": self = .streamDisabled(try required(w.participantId, "participantId"), try required(w.kind, "kind"))
        case "mic-muted":
            self = .micMuted(try required(w.participantId, "participantId"), muted: try required(w.muted, "muted"), by: w.by)
        case "speaker-changed": self = .speakerChanged(w.participantId, time: w.t ?? 0)
        case "audio-levels":
            self = .audioLevels(time: w.t ?? 0, levels: try required(w.levels, "levels"), speaking: w.speaking ?? [])
        case "message":
            self = .message(try required(w.body, "text\" or \"data"), from: try required(w.from, "from"), to: w.to)
        case "error":
            let number = try required(w.code, "code")
            let code = CallErrorCode(rawValue: number) ?? .serverError
            self = .error(CallError(code, w.message ?? "error \(number)"))
        case "pong": self = .pong
        default: throw CallError(.malformedMessage, "malformed server message: unknown type \"\(w.type)\"")
        }
    }
}

import Foundation

// The fields of each message beside its `type`, one Codable payload per message (docs/call.md).
// `SignalMessage.swift` maps them to and from `ClientMessage` and `ServerMessage`.

/// A message without fields (`leave`, `ping`, `pong`, ...).
struct NoPayload: Codable {}

/// `join`.
struct JoinPayload: Codable {
    var token: String
    var mic: Bool?
    var webcam: Bool?
    var rtpPort: Int?
    var displayName: String?
}

/// `observe`.
struct ObservePayload: Codable {
    var token: String
}

/// `observing`; `speakerId` is written as `null` when nobody speaks.
struct ObservingPayload: Codable {
    var roomId: String
    var participants: [ParticipantInfo]
    var speakerId: String?

    enum CodingKeys: String, CodingKey { case roomId, participants, speakerId }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(roomId, forKey: .roomId)
        try c.encode(participants, forKey: .participants)
        try c.encode(speakerId, forKey: .speakerId)
    }
}

/// `offer` (client), `answer` (server): a WebRTC session description.
struct SessionDescriptionPayload: Codable {
    var sdp: String
}

/// `enable-stream`, `disable-stream`.
struct StreamKindPayload: Codable {
    var kind: StreamKind
}

/// `mute-participant`, `unmute-participant`, `remove-participant`.
struct ParticipantPayload: Codable {
    var participantId: String
}

/// The body of a `message`: `text`, or `data` (base64), never both.
struct BodyFields: Codable {
    var text: String?
    var data: String?

    init(text: String?, data: String?) {
        self.text = text
        self.data = data
    }

    init(_ body: MessageBody) {
        switch body {
        case .text(let value): text = value
        case .data(let bytes): data = Data(bytes).base64EncodedString()
        }
    }

    var body: MessageBody? {
        if let text, data == nil { return .text(text) }
        if let data, text == nil, let bytes = Data(base64Encoded: data) { return .data([UInt8](bytes)) }
        return nil
    }
}

/// A client's `message`.
struct ClientBodyPayload: Codable {
    var text: String?
    var data: String?
    var to: String?
}

/// The server's `message`.
struct ServerBodyPayload: Codable {
    var text: String?
    var data: String?
    var from: String
    var to: String?
}

/// `joined`; `speakerId` is written as `null` when nobody speaks.
struct JoinedPayload: Codable {
    var roomId: String
    var participantId: String
    var participants: [ParticipantInfo]
    var speakerId: String?
    var media: MediaDescription?

    enum CodingKeys: String, CodingKey { case roomId, participantId, participants, speakerId, media }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(roomId, forKey: .roomId)
        try c.encode(participantId, forKey: .participantId)
        try c.encode(participants, forKey: .participants)
        try c.encode(speakerId, forKey: .speakerId)
        try c.encodeIfPresent(media, forKey: .media)
    }
}

/// `participant-joined`.
struct ParticipantJoinedPayload: Codable {
    var participant: ParticipantInfo
}

/// `participant-left`; a missing reason reads as `left`.
struct ParticipantLeftPayload: Codable {
    var participantId: String
    var reason: LeaveReason?
}

/// `stream-enabled`, `stream-disabled`.
struct StreamStatePayload: Codable {
    var participantId: String
    var kind: StreamKind
}

/// `mic-muted`.
struct MicMutedPayload: Codable {
    var participantId: String
    var muted: Bool
    var by: String?
}

/// `speaker-changed`; `participantId` is written as `null` when nobody speaks.
struct SpeakerChangedPayload: Codable {
    var participantId: String?
    var t: Double?

    enum CodingKeys: String, CodingKey { case participantId, t }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(participantId, forKey: .participantId)
        try c.encodeIfPresent(t, forKey: .t)
    }
}

/// `audio-levels`.
struct AudioLevelsPayload: Codable {
    var t: Double?
    var levels: [String: Double]
    var speaking: [String]?
}

/// `error`.
struct ErrorPayload: Codable {
    var code: Int
    var message: String?
}

/// Writes a message: its `type` beside its payload's fields, in one JSON object.
struct TypedMessage<Payload: Encodable>: Encodable {
    var type: String
    var payload: Payload

    enum CodingKeys: String, CodingKey { case type }

    func encode(to encoder: any Encoder) throws {
        try payload.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(type, forKey: .type)
    }
}

/// Decoding of a message's payload with field-level errors for people ("join needs \"token\"").
enum PayloadDecoding {
    /// Decodes one JSON object whose `type`, one of `Type`'s names, selects the payload that `body`
    /// reads. `prefix` starts every error's sentence ("malformed message", "malformed server message");
    /// `unparsable` ends the one for text that is no such object.
    static func read<Type: RawRepresentable, Message>(
        _ text: String, prefix: String, unparsable: String,
        body: @escaping (Type, PayloadSource) throws(CallError) -> Message
    ) throws(CallError) -> Message where Type.RawValue == String {
        let named = { (name: String, source: PayloadSource) throws(CallError) -> Message in
            guard let type = Type(rawValue: name) else { throw CallError(.malformedMessage, "\(prefix): unknown type \"\(name)\"") }
            return try body(type, source)
        }
        let decoder = JSONDecoder()
        let box = Box<Message>(prefix: prefix, body: named)
        decoder.userInfo[Box<Message>.key] = box
        let failure = CallError(.malformedMessage, "\(prefix): \(unparsable)")
        do {
            _ = try decoder.decode(Reading<Message>.self, from: Data(text.utf8))
        } catch {
            throw box.failure ?? failure
        }
        guard let message = box.message else { throw box.failure ?? failure }
        return message
    }

    /// What the message's body closure decodes its payload from.
    struct PayloadSource {
        let decoder: any Decoder
        let type: String
        let prefix: String

        /// The payload `P`; a missing field says which, a wrong one says the message is malformed.
        func payload<P: Decodable>(_: P.Type) throws(CallError) -> P {
            do {
                return try P(from: decoder)
            } catch DecodingError.keyNotFound(let key, _) {
                throw CallError(.malformedMessage, "\(prefix): \(type) needs \"\(key.stringValue)\"")
            } catch {
                throw CallError(.malformedMessage, "\(prefix): \(type) has a field of the wrong type")
            }
        }

        /// A field the payload needs but may lack, e.g. a body that is neither text nor data.
        func required<T>(_ value: T?, _ field: String) throws(CallError) -> T {
            guard let value else { throw CallError(.malformedMessage, "\(prefix): \(type) needs \"\(field)\"") }
            return value
        }
    }

    private final class Box<Message>: @unchecked Sendable {
        // @unchecked Sendable: lives for one synchronous decode on one thread.
        static var key: CodingUserInfoKey { CodingUserInfoKey(rawValue: "activespeaker.message")! }
        let prefix: String
        let body: (String, PayloadSource) throws(CallError) -> Message
        var message: Message?
        var failure: CallError?

        init(prefix: String, body: @escaping (String, PayloadSource) throws(CallError) -> Message) {
            self.prefix = prefix
            self.body = body
        }
    }

    private struct Reading<Message>: Decodable {
        enum CodingKeys: String, CodingKey { case type }

        init(from decoder: any Decoder) throws {
            let box = decoder.userInfo[Box<Message>.key] as! Box<Message>
            let type = try decoder.container(keyedBy: CodingKeys.self).decode(String.self, forKey: .type)
            do {
                box.message = try box.body(type, PayloadSource(decoder: decoder, type: type, prefix: box.prefix))
            } catch {
                box.failure = error
                throw error
            }
        }
    }
}

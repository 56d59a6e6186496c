import Foundation

/// A message from a client to the server (docs/call.md, "Client to server").
public enum ClientMessage: Sendable, Hashable {
    /// Must come first. `rtpPort`: the UDP port the client sends RTP from and receives forwarded RTP on.
    /// `displayName` replaces the token's name (1–128 characters).
    case join(token: String, mic: Bool, webcam: Bool, rtpPort: Int?, displayName: String? = nil)
    /// Instead of `join`: watch the room without being in it (a dashboard). Any valid token for the
    /// room will do; the observer gets `observing`, then the room's events, and may send only `ping`
    /// and `leave`.
    case observe(token: String)
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
    /// A browser's WebRTC offer (SDP): the participant's audio then travels over WebRTC (ICE, DTLS-SRTP)
    /// instead of plain RTP. After `joined`; one per connection. Answer: `answer`, or `error`.
    case offer(sdp: String)
    /// One of the browser's ICE candidates for its WebRTC session (after `offer`).
    case iceCandidate(ICECandidate)
}

/// A message from the server to a client (docs/call.md, "Server to client").
public enum ServerMessage: Sendable, Hashable {
    case joined(JoinedRoom)
    /// The answer to `observe`: who is in the room and who speaks.
    case observing(ObservedRoom)
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
    /// Several nodes (`serve --redis`): the room lives on another node. The server closes the connection
    /// after it; the client connects to `url` and sends its `join` (or `observe`) again.
    case redirect(Redirect)
    /// The server's WebRTC answer (SDP) to the client's `offer`.
    case answer(sdp: String)
    /// One of the server's ICE candidates for the client's WebRTC session.
    case iceCandidate(ICECandidate)
}

extension ClientMessage {
    /// The message's `type`.
    public var type: ClientMessageType {
        switch self {
        case .join: .join
        case .observe: .observe
        case .leave: .leave
        case .muteMic: .muteMic
        case .unmuteMic: .unmuteMic
        case .enableStream: .enableStream
        case .disableStream: .disableStream
        case .message: .message
        case .muteParticipant: .muteParticipant
        case .unmuteParticipant: .unmuteParticipant
        case .removeParticipant: .removeParticipant
        case .ping: .ping
        case .offer: .offer
        case .iceCandidate: .iceCandidate
        }
    }

    /// The message as one line of JSON.
    public var json: String {
        switch self {
        case .offer(let sdp): return write(SessionDescriptionPayload(sdp: sdp))
        case .iceCandidate(let candidate): return write(candidate)
        case .join(let token, let mic, let webcam, let rtpPort, let displayName):
            return write(JoinPayload(token: token, mic: mic, webcam: webcam, rtpPort: rtpPort, displayName: displayName))
        case .observe(let token): return write(ObservePayload(token: token))
        case .leave, .muteMic, .unmuteMic, .ping: return write(NoPayload())
        case .enableStream(let kind), .disableStream(let kind): return write(StreamKindPayload(kind: kind))
        case .message(let body, let to):
            let fields = BodyFields(body)
            return write(ClientBodyPayload(text: fields.text, data: fields.data, to: to))
        case .muteParticipant(let id), .unmuteParticipant(let id), .removeParticipant(let id):
            return write(ParticipantPayload(participantId: id))
        }
    }

    private func write<P: Encodable>(_ payload: P) -> String {
        JSON.text(TypedMessage(type: type.rawValue, payload: payload))
    }

    /// Parses one client message.
    /// - Throws: `CallError` `.malformedMessage` naming what is wrong.
    public init(json text: String) throws(CallError) {
        self = try PayloadDecoding.read(
            text, prefix: "malformed message", unparsable: "not a JSON object with a string \"type\" and valid fields"
        ) { (type: ClientMessageType, source) throws(CallError) in try ClientMessage(type, source) }
    }

    private init(_ type: ClientMessageType, _ source: PayloadDecoding.PayloadSource) throws(CallError) {
        switch type {
        case .join:
            let join = try source.payload(JoinPayload.self)
            if let port = join.rtpPort, !(1...65535).contains(port) {
                throw CallError(.malformedMessage, "malformed message: rtpPort must be 1-65535")
            }
            if let name = join.displayName, name.isEmpty || name.count > 128 {
                throw CallError(.malformedMessage, "malformed message: displayName must be 1-128 characters")
            }
            self = .join(
                token: join.token, mic: join.mic ?? true, webcam: join.webcam ?? false, rtpPort: join.rtpPort,
                displayName: join.displayName)
        case .observe: self = .observe(token: try source.payload(ObservePayload.self).token)
        case .leave: self = .leave
        case .muteMic: self = .muteMic
        case .unmuteMic: self = .unmuteMic
        case .enableStream: self = .enableStream(try source.payload(StreamKindPayload.self).kind)
        case .disableStream: self = .disableStream(try source.payload(StreamKindPayload.self).kind)
        case .message:
            let message = try source.payload(ClientBodyPayload.self)
            let body = BodyFields(text: message.text, data: message.data).body
            self = .message(try source.required(body, "text\" or \"data"), to: message.to)
        case .muteParticipant: self = .muteParticipant(try source.payload(ParticipantPayload.self).participantId)
        case .unmuteParticipant: self = .unmuteParticipant(try source.payload(ParticipantPayload.self).participantId)
        case .removeParticipant: self = .removeParticipant(try source.payload(ParticipantPayload.self).participantId)
        case .ping: self = .ping
        case .offer:
            let offer = try source.payload(SessionDescriptionPayload.self)
            guard !offer.sdp.isEmpty else { throw CallError(.malformedMessage, "malformed message: offer needs a non-empty \"sdp\"") }
            self = .offer(sdp: offer.sdp)
        case .iceCandidate: self = .iceCandidate(try Self.candidate(source, prefix: "malformed message"))
        }
    }

    /// An `ice-candidate`'s fields, checked: an m-line index of 0-65535, a candidate of at most
    /// `ICECandidate.maximumLength` characters.
    static func candidate(_ source: PayloadDecoding.PayloadSource, prefix: String) throws(CallError) -> ICECandidate {
        let candidate = try source.payload(ICECandidate.self)
        guard (0...65535).contains(candidate.sdpMLineIndex) else {
            throw CallError(.malformedMessage, "\(prefix): sdpMLineIndex must be 0-65535")
        }
        guard candidate.candidate.utf8.count <= ICECandidate.maximumLength else {
            throw CallError(.malformedMessage, "\(prefix): candidate is longer than \(ICECandidate.maximumLength) bytes")
        }
        return candidate
    }
}

extension ServerMessage {
    /// The message's `type`, e.g. `.speakerChanged` (`type.rawValue`: `speaker-changed`).
    public var type: ServerMessageType {
        switch self {
        case .joined: .joined
        case .observing: .observing
        case .participantJoined: .participantJoined
        case .participantLeft: .participantLeft
        case .streamEnabled: .streamEnabled
        case .streamDisabled: .streamDisabled
        case .micMuted: .micMuted
        case .speakerChanged: .speakerChanged
        case .audioLevels: .audioLevels
        case .message: .message
        case .error: .error
        case .pong: .pong
        case .redirect: .redirect
        case .answer: .answer
        case .iceCandidate: .iceCandidate
        }
    }

    /// The message as one line of JSON.
    public var json: String {
        switch self {
        case .joined(let room):
            return write(JoinedPayload(
                roomId: room.roomID, participantId: room.participantID, participants: room.participants,
                speakerId: room.speakerID, media: room.media))
        case .observing(let room):
            return write(ObservingPayload(roomId: room.roomID, participants: room.participants, speakerId: room.speakerID))
        case .participantJoined(let participant): return write(ParticipantJoinedPayload(participant: participant))
        case .participantLeft(let id, let reason): return write(ParticipantLeftPayload(participantId: id, reason: reason))
        case .streamEnabled(let id, let kind), .streamDisabled(let id, let kind):
            return write(StreamStatePayload(participantId: id, kind: kind))
        case .micMuted(let id, let muted, let by): return write(MicMutedPayload(participantId: id, muted: muted, by: by))
        case .speakerChanged(let id, let time): return write(SpeakerChangedPayload(participantId: id, t: Self.milliseconds(time)))
        case .audioLevels(let time, let levels, let speaking):
            return write(AudioLevelsPayload(t: Self.milliseconds(time), levels: levels, speaking: speaking))
        case .message(let body, let from, let to):
            let fields = BodyFields(body)
            return write(ServerBodyPayload(text: fields.text, data: fields.data, from: from, to: to))
        case .error(let error): return write(ErrorPayload(code: error.code.rawValue, message: error.message))
        case .pong: return write(NoPayload())
        case .redirect(let redirect): return write(redirect)
        case .answer(let sdp): return write(SessionDescriptionPayload(sdp: sdp))
        case .iceCandidate(let candidate): return write(candidate)
        }
    }

    private func write<P: Encodable>(_ payload: P) -> String {
        JSON.text(TypedMessage(type: type.rawValue, payload: payload))
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
        self = try PayloadDecoding.read(text, prefix: "malformed server message", unparsable: String(text.prefix(200))) {
            (type: ServerMessageType, source) throws(CallError) in try ServerMessage(type, source)
        }
    }

    private init(_ type: ServerMessageType, _ source: PayloadDecoding.PayloadSource) throws(CallError) {
        switch type {
        case .joined:
            let room = try source.payload(JoinedPayload.self)
            self = .joined(JoinedRoom(
                roomID: room.roomId, participantID: room.participantId, participants: room.participants,
                speakerID: room.speakerId, media: room.media))
        case .observing:
            let room = try source.payload(ObservingPayload.self)
            self = .observing(ObservedRoom(roomID: room.roomId, participants: room.participants, speakerID: room.speakerId))
        case .participantJoined: self = .participantJoined(try source.payload(ParticipantJoinedPayload.self).participant)
        case .participantLeft:
            let left = try source.payload(ParticipantLeftPayload.self)
            self = .participantLeft(left.participantId, reason: left.reason ?? .left)
        case .streamEnabled:
            let stream = try source.payload(StreamStatePayload.self)
            self = .streamEnabled(stream.participantId, stream.kind)
        case .streamDisabled:
            let stream = try source.payload(StreamStatePayload.self)
            self = .streamDisabled(stream.participantId, stream.kind)
        case .micMuted:
            let mute = try source.payload(MicMutedPayload.self)
            self = .micMuted(mute.participantId, muted: mute.muted, by: mute.by)
        case .speakerChanged:
            let change = try source.payload(SpeakerChangedPayload.self)
            self = .speakerChanged(change.participantId, time: change.t ?? 0)
        case .audioLevels:
            let levels = try source.payload(AudioLevelsPayload.self)
            self = .audioLevels(time: levels.t ?? 0, levels: levels.levels, speaking: levels.speaking ?? [])
        case .message:
            let message = try source.payload(ServerBodyPayload.self)
            let body = BodyFields(text: message.text, data: message.data).body
            self = .message(try source.required(body, "text\" or \"data"), from: message.from, to: message.to)
        case .error:
            let error = try source.payload(ErrorPayload.self)
            self = .error(CallError(CallErrorCode(rawValue: error.code) ?? .serverError, error.message ?? "error \(error.code)"))
        case .pong: self = .pong
        case .redirect:
            let redirect = try source.payload(Redirect.self)
            guard redirect.url.hasPrefix("ws://") || redirect.url.hasPrefix("wss://") else {
                throw CallError(.malformedMessage, "malformed server message: redirect url must be ws:// or wss://")
            }
            self = .redirect(redirect)
        case .answer: self = .answer(sdp: try source.payload(SessionDescriptionPayload.self).sdp)
        case .iceCandidate: self = .iceCandidate(try ClientMessage.candidate(source, prefix: "malformed server message"))
        }
    }
}

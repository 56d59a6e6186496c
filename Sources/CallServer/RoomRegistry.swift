import CallProtocol
internal import CallTransport
import SpeakerRTP

/// The rooms, their participants and the signalling connections: every rule of docs/call.md that is
/// not about packets, as a state machine that turns inputs into `Effect`s.
///
/// No I/O and no threads: `RoomServer` owns one behind a mutex, feeds it what the transport and the
/// media loop report, and carries out the effects. That keeps every rule testable without sockets.
struct RoomRegistry {
    /// Limits and identities that do not change while the server runs.
    struct Settings {
        var secret: TokenSecret
        /// Where datagrams reach the server's RTP socket (as when it was bound). Its port is told to
        /// publishers; no member may receive there, or the server would forward to itself.
        var rtp: UDPSocket.OwnAddresses
        var defaultMaxParticipants = 16
        /// Seconds without a message after which a joined client is removed.
        var clientTimeout: Double = 15
        /// Seconds for which a participant removed by a moderator cannot rejoin the room, unless with
        /// a token issued after the removal.
        var rejoinBan = 300
        /// Each connection's message budget: messages a second (bursts of twice as many), and bytes a
        /// second (bursts of four times as many). A client over either is closed (4015, then code 1008);
        /// the others keep their connections.
        var messageRate: Double = 50
        var byteRate: Double = 128 * 1024
        /// Several nodes: a room that is not here may live on another node (`Effect.locate`).
        var clustered = false
        /// The host publishers send RTP to when it is not the signalling connection's (MEDIA's `host`).
        var mediaHost: String?
        /// The media loop hears levels only (`serve --levels-only`): it decodes nothing, so it has no mix to
        /// give a browser, and WebRTC offers are refused.
        var levelsOnly = false
        /// Rooms are recorded (`serve --record`): a room cannot be created level-only (no audio to record).
        var recording = false
    }

    /// A member of a room. A value: the registry changes it in place, in `rooms`, and nowhere else.
    struct Participant {
        var info: ParticipantInfo
        /// The signalling connection; nil for a plain-RTP ingest participant.
        var connection: ConnectionID?
        /// The moderator whose mute holds: the participant cannot unmute itself until a moderator lifts it.
        var mutedBy: ParticipantID?
        /// It joined with an `rtpPort` (plain RTP): it cannot also offer WebRTC.
        var plainRTP = false
    }

    /// A room. A value, like its participants: what a reader gets is a copy that no later decision changes.
    struct Room {
        let id: CallRoomID
        let maxParticipants: Int
        /// The engine hears its publishers' RFC 6464 levels and nothing of it is decoded (`levelsOnly` at
        /// creation, or every room of a level-only server): no mix for a browser, so no WebRTC.
        var levelsOnly = false
        /// In joining order.
        var participants: [Participant] = []
        var speaker: ParticipantID?
        /// Participants removed by a moderator: when (seconds since 1970), and by whom.
        var removals: [ParticipantID: (at: Int, by: ParticipantID)] = [:]
        /// Connections that watch the room without being in it (`observe`), in the order they came.
        var observers: [ConnectionID] = []

        func participant(_ id: ParticipantID) -> Participant? { participants.first { $0.info.id == id.rawValue } }
        func index(of id: ParticipantID) -> Int? { participants.firstIndex { $0.info.id == id.rawValue } }
    }

    /// Where a connection's WebRTC session stands.
    enum WebRTCPhase: Equatable {
        /// The offer went to `WebRTCSessions`; no answer yet.
        case answering
        /// The answer was sent; media bound.
        case answered
    }

    struct Connection {
        var peerHost: String
        /// The room named in the connection's URL (`?room=`).
        var requestedRoom: CallRoomID?
        /// Set once joined.
        var room: CallRoomID?
        var participant: ParticipantID?
        /// Set while the connection observes a room (it then has no `room` or `participant`).
        var observing: CallRoomID?
        /// The participant id of the token it observes with.
        var observer: ParticipantID?
        /// Several nodes: the cluster was asked where the connection's room lives (once per connection).
        var located = false
        /// The connection's WebRTC session (`offer`), if any.
        var webRTC: WebRTCPhase?
        /// The relay socket of the connection's answered WebRTC session: a socket of the server.
        var relay: MediaEndpoint?
        /// The server's candidates found while the offer is being answered: sent after `answer`.
        var heldCandidates: [ICECandidate] = []
        var lastSeen: Double
        var messageBudget: RateBudget
        var byteBudget: RateBudget
    }

    private(set) var settings: Settings
    private(set) var rooms: [CallRoomID: Room] = [:]
    private var connections: [ConnectionID: Connection] = [:]
    /// Streamed publishers' WebSockets (`/v1/pcm`): which participant each one is.
    private var streamedConnections: [ConnectionID: (room: CallRoomID, participant: ParticipantID)] = [:]
    private var usedSSRCs: Set<SSRC> = []
    private var generator = SystemRandomNumberGenerator()

    init(settings: Settings) {
        self.settings = settings
    }

    /// The server's RTP port, told to publishers.
    var rtpPort: Int { settings.rtp.port }

    // MARK: Rooms (HTTP API)

    /// Creates a room, with a generated id when none is given.
    /// - Parameter levelsOnly: The room's publishers are heard by their RFC 6464 levels, nothing decoded.
    /// - Throws: `.malformedMessage` for a bad id or limit, or a level-only room on a recording server;
    ///   `.joinState` if the id is taken.
    mutating func createRoom(id requested: CallRoomID?, maxParticipants: Int?, levelsOnly: Bool = false) throws(CallError) -> (CallRoomID, [Effect]) {
        let room = try newRoom(id: requested, maxParticipants: maxParticipants, levelsOnly: levelsOnly)
        guard rooms[room.id] == nil else { throw CallError(.joinState, "room \(room.id) already exists") }
        rooms[room.id] = room
        return (room.id, [.media(.openRoom(room: room.id, levelsOnly: room.levelsOnly))])
    }

    /// A room to create (not added): the id checked, or generated when none is given, and the limit.
    /// - Throws: `.malformedMessage` for a bad id or limit, `.joinState` if the id is taken here.
    func newRoom(id requested: CallRoomID?, maxParticipants: Int?, levelsOnly: Bool = false) throws(CallError) -> Room {
        let id = requested ?? newRoomID()
        guard AccessToken.isValidID(id.rawValue) else { throw CallError(.malformedMessage, "roomId must be \(AccessToken.idRule)") }
        guard rooms[id] == nil else { throw CallError(.joinState, "room \(id) already exists") }
        let limit = maxParticipants ?? settings.defaultMaxParticipants
        guard (1...1000).contains(limit) else { throw CallError(.malformedMessage, "maxParticipants must be 1-1000") }
        guard !(levelsOnly && settings.recording) else {
            throw CallError(.malformedMessage, "this server records rooms (serve --record): a level-only room has no audio to record")
        }
        return Room(id: id, maxParticipants: limit, levelsOnly: levelsOnly || settings.levelsOnly)
    }

    /// Deletes a room: its members get error 4013 and are disconnected.
    mutating func deleteRoom(_ id: CallRoomID) throws(CallError) -> [Effect] {
        guard let room = rooms.removeValue(forKey: id) else { throw CallError(.roomNotFound, "room \(id) not found") }
        var effects: [Effect] = []
        for participant in room.participants {
            if let ssrc = participant.info.ssrc { usedSSRCs.remove(SSRC(ssrc)) }
            guard let connection = participant.connection else { continue }
            effects += endWebRTC(connection)
            connections[connection]?.room = nil
            connections[connection]?.participant = nil
            effects.append(.send(connection, .error(CallError(.roomClosed, "room \(id) was closed"))))
            effects.append(.close(connection))
        }
        for (connection, streamed) in streamedConnections where streamed.room == id {
            streamedConnections[connection] = nil
            effects.append(.close(connection, code: UInt16(CallErrorCode.roomClosed.rawValue)))
        }
        for observer in room.observers {
            connections[observer]?.observing = nil
            effects.append(.send(observer, .error(CallError(.roomClosed, "room \(id) was closed"))))
            effects.append(.close(observer))
        }
        effects.append(.media(.closeRoom(room: id)))
        return effects
    }

    func room(_ id: CallRoomID) -> Room? { rooms[id] }

    var participantCount: Int { rooms.values.reduce(0) { $0 + $1.participants.count } }
    /// Open signalling connections, joined or not.
    var connectionCount: Int { connections.count }

    /// Checks an API token for an action on `room` (nil: on the server, e.g. creating a room).
    func authorize(_ token: String?, room: CallRoomID?, moderator: Bool, now: Int) throws(CallError) -> AccessToken {
        guard let token else { throw CallError(.invalidToken, "missing token (Authorization: Bearer TOKEN)") }
        let claims = try AccessToken.verify(token, secret: settings.secret, now: now)
        guard claims.room == AccessToken.anyRoom || (room != nil && claims.room == room?.rawValue) else {
            throw CallError(.wrongRoom, room == nil ? "needs a server-wide token (room \"*\")" : "token is for room \(claims.room)")
        }
        if moderator, claims.role != .moderator { throw CallError(.notAllowed, "needs a moderator token") }
        return claims
    }

    // MARK: Plain-RTP ingest

    /// Adds a participant whose audio comes as plain RTP from `source` (no signalling connection).
    mutating func addIngest(
        room id: CallRoomID, participant: ParticipantID, displayName: String?, source: MediaSource, ssrc requested: SSRC?
    ) throws(CallError) -> (ParticipantInfo, [Effect]) {
        guard let room = rooms[id] else { throw CallError(.roomNotFound, "room \(id) not found") }
        guard AccessToken.isValidID(participant.rawValue) else { throw CallError(.malformedMessage, "participantId must be \(AccessToken.idRule)") }
        guard room.participant(participant) == nil else { throw CallError(.duplicateParticipant, "\(participant) is already in room \(id)") }
        guard room.participants.count < room.maxParticipants else { throw CallError(.roomFull, "room \(id) is full") }
        if let requested, usedSSRCs.contains(requested) { throw CallError(.duplicateParticipant, "ssrc \(requested) is in use") }
        if let port = source.port, isOwnRTPAddress(host: source.host, port: port) {
            throw CallError(.malformedMessage, "source \(source.host):\(port) is the server's own RTP address")
        }
        let ssrc = requested ?? newSSRC()
        usedSSRCs.insert(ssrc)
        let info = ParticipantInfo(
            id: participant.rawValue, displayName: displayName ?? participant.rawValue, role: .publisher, micMuted: false,
            audio: true, video: false, ssrc: ssrc.rawValue)
        var effects = broadcast(room, .participantJoined(info), except: nil)
        rooms[id]!.participants.append(Participant(info: info, connection: nil))
        effects.append(.media(.addMember(room: id, participant: participant, ssrc: ssrc, sender: source, receiver: nil)))
        return (info, effects)
    }

    // MARK: Streamed publishers (raw PCM over a WebSocket)

    /// Adds a participant whose audio arrives as raw PCM on `connection` (`/v1/pcm`, LiveKit's track egress).
    /// The token must be for the room (or server-wide) and either a moderator's or the participant's own
    /// with a role that publishes.
    /// - Throws: `.invalidToken`, `.wrongRoom`, `.notAllowed`, `.roomNotFound`, `.duplicateParticipant`,
    ///   `.roomFull`, `.malformedMessage` (a bad id).
    mutating func addStreamed(
        room id: CallRoomID, participant: ParticipantID, displayName: String?, connection: ConnectionID, input: StreamedInput,
        token: String?, now: Int
    ) throws(CallError) -> [Effect] {
        let claims = try authorize(token, room: id, moderator: false, now: now)
        guard claims.role == .moderator || (claims.participantID == participant.rawValue && claims.role.canPublish) else {
            throw CallError(.notAllowed, "needs a moderator token, or \(participant)'s own publisher token")
        }
        guard let room = rooms[id] else { throw CallError(.roomNotFound, "room \(id) not found") }
        guard AccessToken.isValidID(participant.rawValue) else { throw CallError(.malformedMessage, "participant must be \(AccessToken.idRule)") }
        guard room.participant(participant) == nil else { throw CallError(.duplicateParticipant, "\(participant) is already in room \(id)") }
        guard room.participants.count < room.maxParticipants else { throw CallError(.roomFull, "room \(id) is full") }
        let info = ParticipantInfo(
            id: participant.rawValue, displayName: displayName ?? participant.rawValue, role: .publisher, micMuted: false,
            audio: true, video: false, ssrc: nil)
        var effects = broadcast(room, .participantJoined(info), except: nil)
        rooms[id]!.participants.append(Participant(info: info, connection: nil))
        streamedConnections[connection] = (id, participant)
        effects.append(.media(.addStreamed(room: id, participant: participant, input: input)))
        return effects
    }

    /// A streamed publisher's WebSocket closed: the participant leaves. Nothing for another connection.
    mutating func streamedClosed(_ connection: ConnectionID) -> [Effect] {
        guard let (room, participant) = streamedConnections.removeValue(forKey: connection) else { return [] }
        return remove(participant, from: room, reason: .left)
    }

    mutating func removeIngest(room id: CallRoomID, participant: ParticipantID) throws(CallError) -> [Effect] {
        guard let room = rooms[id] else { throw CallError(.roomNotFound, "room \(id) not found") }
        guard let member = room.participant(participant), member.connection == nil else {
            throw CallError(.noSuchParticipant, "no ingest participant \(participant) in room \(id)")
        }
        return remove(participant, from: id, reason: .left)
    }

    // MARK: Signalling

    mutating func opened(_ connection: ConnectionID, room: CallRoomID?, peerHost: String, now: Double) {
        connections[connection] = Connection(
            peerHost: peerHost, requestedRoom: room, lastSeen: now,
            messageBudget: RateBudget(rate: settings.messageRate, burst: 2 * settings.messageRate, now: now),
            byteBudget: RateBudget(rate: settings.byteRate, burst: 4 * settings.byteRate, now: now))
    }

    /// Handles one text message of a connection.
    mutating func received(_ connection: ConnectionID, text: String, now: Double, epochSeconds: Int) -> [Effect] {
        guard var state = connections[connection] else { return [] }
        state.lastSeen = now
        let withinBudget =
            state.messageBudget.spend(1, now: now) && state.byteBudget.spend(Double(text.utf8.count), now: now)
        connections[connection] = state
        guard withinBudget else {
            // The sender goes, not the members its messages would have flooded.
            let limit = "\(Int(settings.messageRate)) messages and \(Int(settings.byteRate)) bytes a second"
            return [.send(connection, .error(CallError(.rateLimited, "over the message budget of \(limit)")))]
                + closeEffects(connection, code: 1008)
        }
        let message: ClientMessage
        do {
            message = try ClientMessage(json: text)
        } catch {
            // A malformed message ends that connection, as it would a broken peer.
            return [.send(connection, .error(error))] + closeEffects(connection)
        }
        if let watched = state.observing {
            switch message {
            case .ping: return [.send(connection, .pong)]
            case .leave: return closeEffects(connection)
            case .join, .observe: return [.send(connection, .error(CallError(.joinState, "already observing room \(watched)")))]
            default: return notAllowed(connection, "an observer only watches: join to take part")
            }
        }
        guard let roomID = state.room, let participantID = state.participant,
            let room = rooms[roomID], let me = room.participant(participantID)
        else {
            if case .observe(let token) = message { return observe(connection, token: token, epochSeconds: epochSeconds) }
            if case .join(let token, let mic, let webcam, let rtpPort, let displayName) = message {
                return join(
                    connection, token: token, mic: mic, webcam: webcam, rtpPort: rtpPort, displayName: displayName,
                    epochSeconds: epochSeconds)
            }
            if case .ping = message { return [.send(connection, .pong)] }
            return [.send(connection, .error(CallError(.joinState, "send join first")))]
        }
        switch message {
        case .join, .observe:
            return [.send(connection, .error(CallError(.joinState, "already joined")))]
        case .ping:
            return [.send(connection, .pong)]
        case .leave:
            return remove(participantID, from: roomID, reason: .left) + [.close(connection)]
        case .muteMic, .unmuteMic:
            let muted = message == .muteMic
            guard muted || me.info.role.canPublish else { return notAllowed(connection, "a subscriber has no microphone") }
            if !muted, let moderator = me.mutedBy {
                return notAllowed(connection, "muted by \(moderator): only a moderator can unmute you")
            }
            return setMuted(participantID, in: roomID, muted: muted, by: nil)
        case .enableStream(let kind), .disableStream(let kind):
            let enabled = message == .enableStream(kind)
            if kind == .audio, enabled, !me.info.role.canPublish { return notAllowed(connection, "a subscriber cannot publish") }
            return setStream(participantID, in: roomID, kind: kind, enabled: enabled)
        case .message(let body, let to):
            if let to {
                guard let target = room.participant(ParticipantID(to)) else {
                    return [.send(connection, .error(CallError(.noSuchParticipant, "no participant \(to)")))]
                }
                return target.connection.map { [.send($0, .message(body, from: me.info.id, to: to))] } ?? []
            }
            return broadcast(room, .message(body, from: me.info.id, to: nil), except: participantID)
        case .muteParticipant(let name), .unmuteParticipant(let name), .removeParticipant(let name):
            guard me.info.role == .moderator else { return notAllowed(connection, "only a moderator may do that") }
            let action: Moderation = switch message {
            case .muteParticipant: .mute
            case .unmuteParticipant: .unmute
            default: .remove
            }
            do {
                return try moderate(action, ParticipantID(name), in: roomID, by: participantID, epochSeconds: epochSeconds)
            } catch {
                return [.send(connection, .error(error))]
            }
        case .offer(let sdp):
            guard !settings.levelsOnly else {
                return [.send(connection, .error(CallError(
                    .notAllowed, "this server hears levels only (serve --levels-only): a browser needs a mix of decoded audio")))]
            }
            guard !room.levelsOnly else {
                return [.send(connection, .error(CallError(
                    .notAllowed, "room \(roomID) hears levels only: a browser needs a mix of decoded audio")))]
            }
            guard state.webRTC == nil else {
                return [.send(connection, .error(CallError(.joinState, "a WebRTC session is open already: renegotiation is not supported")))]
            }
            guard !me.plainRTP else {
                return [.send(connection, .error(CallError(.joinState, "joined with rtpPort (plain RTP): a WebRTC offer needs a join without it")))]
            }
            connections[connection]?.webRTC = .answering
            let ssrc = me.info.ssrc.map { SSRC($0) }
            return [.webRTC(.open(connection, room: roomID, participant: participantID, ssrc: ssrc, offer: sdp))]
        case .iceCandidate(let candidate):
            guard state.webRTC != nil else {
                return [.send(connection, .error(CallError(.joinState, "no WebRTC session: send offer first")))]
            }
            return [.webRTC(.candidate(connection, candidate))]
        }
    }

    // MARK: WebRTC sessions (from WebRTCSessions)

    /// The connection's offer was answered; its session's packets reach the media loop from
    /// `endpoint`, where the room's audio is forwarded to it. The answer is sent, then the candidates
    /// held meanwhile. A connection that left meanwhile gets nothing, and its session is closed.
    mutating func webRTCAnswered(_ connection: ConnectionID, answer: String, endpoint: MediaEndpoint, mixSSRC: SSRC? = nil) -> [Effect] {
        guard let state = connections[connection], state.webRTC == .answering, let roomID = state.room, let id = state.participant,
            let member = rooms[roomID]?.participant(id)
        else { return [.webRTC(.close(connection))] }
        connections[connection]?.webRTC = .answered
        connections[connection]?.relay = endpoint
        connections[connection]?.heldCandidates = []
        // A subscriber (no SSRC) only receives: nothing it sends is accepted.
        let sender = member.info.ssrc.map { _ in MediaSource(host: endpoint.host, port: endpoint.port) }
        return [
            .media(.bind(room: roomID, participant: id, sender: sender, receiver: endpoint, mixSSRC: mixSSRC)),
            .send(connection, .answer(sdp: answer)),
        ]
            + state.heldCandidates.map { .send(connection, .iceCandidate($0)) }
    }

    /// The connection's offer was refused (malformed SDP, no audio, …): it hears why, stays in the
    /// room, and may offer again.
    mutating func webRTCRefused(_ connection: ConnectionID, _ error: CallError) -> [Effect] {
        guard connections[connection]?.webRTC == .answering else { return [] }
        connections[connection]?.webRTC = nil
        connections[connection]?.heldCandidates = []
        return [.send(connection, .error(error))]
    }

    /// One of the server's candidates for the connection's session: held until the answer is sent.
    mutating func webRTCLocalCandidate(_ connection: ConnectionID, _ candidate: ICECandidate) -> [Effect] {
        switch connections[connection]?.webRTC {
        case .answering?:
            connections[connection]?.heldCandidates.append(candidate)
            return []
        case .answered?: return [.send(connection, .iceCandidate(candidate))]
        case nil: return []
        }
    }

    /// A browser's candidate that its session refused.
    func webRTCCandidateRefused(_ connection: ConnectionID, _ error: CallError) -> [Effect] {
        guard connections[connection]?.webRTC != nil else { return [] }
        return [.send(connection, .error(error))]
    }

    /// Ends a connection's WebRTC session, if it has one.
    private mutating func endWebRTC(_ connection: ConnectionID) -> [Effect] {
        guard connections[connection]?.webRTC != nil else { return [] }
        connections[connection]?.webRTC = nil
        connections[connection]?.relay = nil
        connections[connection]?.heldCandidates = []
        return [.webRTC(.close(connection))]
    }

    /// What a moderator does to another participant.
    enum Moderation: Sendable {
        /// The participant cannot unmute itself until a moderator lifts the mute.
        case mute
        /// Lifts a moderator's mute.
        case unmute
        /// Out of the room (4011), banned from rejoining for the rejoin ban.
        case remove
    }

    /// A moderator's action on a participant, from the signalling (`mute-participant`, …) or the HTTP
    /// API (a moderator token of the room or of the server).
    /// - Throws: `.roomNotFound`, `.noSuchParticipant`, or `.notAllowed` to unmute a participant no
    ///   moderator muted.
    mutating func moderate(
        _ action: Moderation, _ target: ParticipantID, in roomID: CallRoomID, by moderator: ParticipantID, epochSeconds: Int
    ) throws(CallError) -> [Effect] {
        guard let room = rooms[roomID] else { throw CallError(.roomNotFound, "room \(roomID) not found") }
        guard let member = room.participant(target) else { throw CallError(.noSuchParticipant, "no participant \(target)") }
        switch action {
        case .mute:
            update(target, in: roomID) { $0.mutedBy = moderator }
            if member.info.micMuted {
                // Already muted by itself: everyone still learns that a moderator now holds the mute.
                return broadcast(room, .micMuted(member.info.id, muted: true, by: moderator.rawValue), except: nil)
            }
            return setMuted(target, in: roomID, muted: true, by: moderator)
        case .unmute:
            guard member.mutedBy != nil else {
                throw CallError(.notAllowed, "\(target) was not muted by a moderator: only they can unmute themselves")
            }
            update(target, in: roomID) { $0.mutedBy = nil }
            return setMuted(target, in: roomID, muted: false, by: moderator)
        case .remove:
            rooms[roomID]!.removals = room.removals.filter { epochSeconds < $0.value.at + settings.rejoinBan }
            if settings.rejoinBan > 0 { rooms[roomID]!.removals[target] = (at: epochSeconds, by: moderator) }
            var effects: [Effect] = []
            if let theirs = member.connection {
                effects.append(.send(theirs, .error(CallError(.removed, "removed by \(moderator)"))))
                connections[theirs]?.room = nil
                connections[theirs]?.participant = nil
                effects.append(.close(theirs))
            }
            return effects + remove(target, from: roomID, reason: .removed)
        }
    }

    /// The transport reports that a connection is gone.
    mutating func closed(_ connection: ConnectionID) -> [Effect] {
        stopObserving(connection)
        let session = endWebRTC(connection)
        guard let state = connections.removeValue(forKey: connection) else { return session }
        guard let roomID = state.room, let id = state.participant else { return session }
        return session + remove(id, from: roomID, reason: .left)
    }

    /// Removes joined clients silent for longer than the client timeout, and connections that never
    /// joined within it.
    mutating func sweep(now: Double) -> [Effect] {
        var effects: [Effect] = []
        for (connection, state) in connections where now - state.lastSeen > settings.clientTimeout {
            effects.append(.send(connection, .error(CallError(.timedOut, "no message for \(Int(settings.clientTimeout)) s"))))
            if let roomID = state.room, let id = state.participant {
                effects += remove(id, from: roomID, reason: .timeout)
            }
            stopObserving(connection)
            connections[connection]?.room = nil
            connections[connection]?.participant = nil
            effects.append(.close(connection))
        }
        return effects
    }

    // MARK: From the media loop

    mutating func speakerChanged(room id: CallRoomID, participant: ParticipantID?, time: Double) -> [Effect] {
        guard rooms[id] != nil else { return [] }
        rooms[id]!.speaker = participant
        return broadcast(rooms[id]!, .speakerChanged(participant?.rawValue, time: time), except: nil)
    }

    func audioLevels(room id: CallRoomID, time: Double, levels: [String: Double], speaking: [String]) -> [Effect] {
        guard let room = rooms[id] else { return [] }
        return broadcast(room, .audioLevels(time: time, levels: levels, speaking: speaking), except: nil)
    }

    // MARK: Rules

    private mutating func join(
        _ connection: ConnectionID, token: String, mic: Bool, webcam: Bool, rtpPort: Int?, displayName: String?,
        epochSeconds: Int
    ) -> [Effect] {
        guard let state = connections[connection] else { return [] }
        let claims: AccessToken, roomID: CallRoomID, room: Room
        switch admission(of: connection, state, token: token, epochSeconds: epochSeconds) {
        case .admitted(let admitted): (claims, roomID, room) = admitted
        case .refused(let error): return refuse(connection, error)
        case .elsewhere(let roomID):
            return [.locate(connection, roomID, .join(token: token, mic: mic, webcam: webcam, rtpPort: rtpPort, displayName: displayName))]
        }
        if let displayName, claims.hasSignedName, displayName != claims.displayName {
            return refuse(connection, CallError(.notAllowed, "the token names you \"\(claims.displayName)\": a signed name cannot be changed"))
        }
        guard room.participant(ParticipantID(claims.participantID)) == nil else {
            return refuse(connection, CallError(.duplicateParticipant, "\(claims.participantID) is already in room \(roomID)"))
        }
        guard room.participants.count < room.maxParticipants else { return refuse(connection, CallError(.roomFull, "room \(roomID) is full")) }
        if let rtpPort, isOwnRTPAddress(host: state.peerHost, port: rtpPort) {
            // The server would forward the room's audio to itself, and accept it again from there.
            return refuse(connection, CallError(.malformedMessage, "rtpPort \(rtpPort) is the server's own RTP port"))
        }
        if let rtpPort, isRelaySocket(host: state.peerHost, port: rtpPort) {
            // The room's audio would go into another member's browser (its relay takes only its mix, and
            // the media loop gives a relay's address to its session alone; this says why at once).
            return refuse(connection, CallError(.malformedMessage, "rtpPort \(rtpPort) is a socket of the server"))
        }

        let publishes = claims.role.canPublish
        let ssrc = publishes ? newSSRC() : nil
        if let ssrc { usedSSRCs.insert(ssrc) }
        let participantID = ParticipantID(claims.participantID)
        let info = ParticipantInfo(
            id: claims.participantID, displayName: displayName ?? claims.displayName, role: claims.role, micMuted: !(publishes && mic),
            audio: publishes && mic, video: webcam, ssrc: ssrc?.rawValue)
        var effects = broadcast(room, .participantJoined(info), except: nil)
        rooms[roomID]!.participants.append(Participant(info: info, connection: connection, plainRTP: rtpPort != nil))
        connections[connection]?.room = roomID
        connections[connection]?.participant = participantID
        let media = rtpPort.flatMap { _ in ssrc.map { MediaDescription(rtpPort: self.rtpPort, ssrc: $0.rawValue, host: settings.mediaHost) } }
        let endpoint = rtpPort.map { MediaEndpoint(host: state.peerHost, port: $0) }
        let source = (media != nil) ? rtpPort.map { MediaSource(host: state.peerHost, port: $0) } : nil
        // The media binding is queued before the client hears `joined` (and starts sending): its first
        // packets then find the binding, and the join is logged before its audio can arrive.
        effects.append(.media(.addMember(room: roomID, participant: participantID, ssrc: ssrc, sender: source, receiver: endpoint)))
        if info.micMuted, ssrc != nil { effects.append(.media(.setMuted(room: roomID, participant: participantID, muted: true))) }
        effects.append(
            .send(
                connection,
                .joined(JoinedRoom(
                    roomID: roomID.rawValue, participantID: info.id, participants: rooms[roomID]!.participants.map(\.info),
                    speakerID: room.speaker?.rawValue, media: media))))
        return effects
    }

    /// What `join` and `observe` both check: the token is valid now and admits to the room the
    /// connection names (or the token's own), the room exists, and the token's participant is not
    /// serving a rejoin ban (unless the token was issued after the removal).
    private mutating func admission(
        of connection: ConnectionID, _ state: Connection, token: String, epochSeconds: Int
    ) -> Admission {
        let claims: AccessToken
        do {
            claims = try AccessToken.verify(token, secret: settings.secret, now: epochSeconds)
        } catch {
            return .refused(error)
        }
        let roomID = state.requestedRoom ?? CallRoomID(claims.room)
        guard claims.room == AccessToken.anyRoom || claims.room == roomID.rawValue else {
            return .refused(CallError(.wrongRoom, "token is for room \(claims.room), not \(roomID)"))
        }
        guard let room = rooms[roomID] else {
            if settings.clustered, !state.located, AccessToken.isValidID(roomID.rawValue) {
                connections[connection]?.located = true
                return .elsewhere(roomID)
            }
            return .refused(CallError(.roomNotFound, "room \(roomID) not found"))
        }
        if let removal = room.removals[ParticipantID(claims.participantID)], epochSeconds < removal.at + settings.rejoinBan,
            claims.issuedAt <= removal.at
        {
            let wait = removal.at + settings.rejoinBan - epochSeconds
            return .refused(CallError(
                .removed, "removed from room \(roomID) by \(removal.by): rejoin in \(wait) s or with a token issued after the removal"))
        }
        return .admitted((claims, roomID, room))
    }

    /// What `admission` found.
    private enum Admission {
        case admitted((AccessToken, CallRoomID, Room))
        case refused(CallError)
        /// Several nodes: the room is not here; the cluster is asked where it lives.
        case elsewhere(CallRoomID)
    }

    // MARK: Several nodes

    /// The cluster found the connection's room on another node: the client is sent there.
    mutating func redirect(_ connection: ConnectionID, to redirect: Redirect) -> [Effect] {
        guard connections[connection] != nil else { return [] }
        return [.send(connection, .redirect(redirect))] + closeEffects(connection)
    }

    /// The cluster could not place the connection's room (absent, or Redis lost): the join fails.
    mutating func refuseLocated(_ connection: ConnectionID, _ error: CallError) -> [Effect] {
        guard connections[connection] != nil else { return [] }
        return refuse(connection, error)
    }

    /// Ends a connection's observing, if it observes: it leaves its room's observers.
    private mutating func stopObserving(_ connection: ConnectionID) {
        guard let watched = connections[connection]?.observing else { return }
        rooms[watched]?.observers.removeAll { $0 == connection }
        connections[connection]?.observing = nil
        connections[connection]?.observer = nil
    }

    /// Whether `host`:`port` is the relay socket of an answered WebRTC session.
    /// - Complexity: O(*n*) in the open connections.
    private func isRelaySocket(host: String, port: Int) -> Bool {
        guard let address = SocketAddress(host: host, port: port)?.unmapped else { return false }
        return connections.values.contains { connection in
            guard let relay = connection.relay else { return false }
            return SocketAddress(host: relay.host, port: relay.port)?.unmapped == address
        }
    }

    /// True when datagrams sent to `host`:`port` would arrive on the server's own RTP socket. `host` is
    /// numeric (a peer's address or an ingest source as parsed); one that does not parse is not ours.
    private func isOwnRTPAddress(host: String, port: Int) -> Bool {
        guard port == rtpPort, let address = SocketAddress(host: host, port: port) else { return false }
        return settings.rtp.contains(address)
    }

    /// A join that fails: the error, then the connection closes.
    private mutating func refuse(_ connection: ConnectionID, _ error: CallError) -> [Effect] {
        [.send(connection, .error(error))] + closeEffects(connection)
    }

    private mutating func closeEffects(_ connection: ConnectionID, code: UInt16 = 1000) -> [Effect] {
        var effects: [Effect] = []
        if let state = connections[connection], let roomID = state.room, let id = state.participant {
            effects += remove(id, from: roomID, reason: .left)
        }
        stopObserving(connection)
        connections[connection]?.room = nil
        connections[connection]?.participant = nil
        effects.append(.close(connection, code: code))
        return effects
    }

    private func notAllowed(_ connection: ConnectionID, _ why: String) -> [Effect] {
        [.send(connection, .error(CallError(.notAllowed, why)))]
    }

    /// Changes a participant in place.
    private mutating func update(_ participant: ParticipantID, in roomID: CallRoomID, _ change: (inout Participant) -> Void) {
        guard let index = rooms[roomID]?.index(of: participant) else { return }
        change(&rooms[roomID]!.participants[index])
    }

    /// Removes a participant (nothing if it is not there): everyone left is told, and so is a member that
    /// left by itself; its media binding goes.
    private mutating func remove(_ participant: ParticipantID, from roomID: CallRoomID, reason: LeaveReason) -> [Effect] {
        guard let index = rooms[roomID]?.index(of: participant) else { return [] }
        let member = rooms[roomID]!.participants.remove(at: index)
        if let ssrc = member.info.ssrc { usedSSRCs.remove(SSRC(ssrc)) }
        var effects = member.connection.map { endWebRTC($0) } ?? []
        effects += broadcast(rooms[roomID]!, .participantLeft(member.info.id, reason: reason), except: nil)
        if let connection = member.connection, reason == .left { effects.append(.send(connection, .participantLeft(member.info.id, reason: reason))) }
        effects.append(.media(.removeMember(room: roomID, participant: participant)))
        // A streamed publisher removed by a moderator or with its room: its WebSocket goes too.
        if let streamed = streamedConnections.first(where: { $0.value.room == roomID && $0.value.participant == participant })?.key {
            streamedConnections[streamed] = nil
            effects.append(.close(streamed, code: 1000))
        }
        return effects
    }

    private mutating func setMuted(_ participant: ParticipantID, in roomID: CallRoomID, muted: Bool, by moderator: ParticipantID?) -> [Effect] {
        guard let index = rooms[roomID]?.index(of: participant), rooms[roomID]!.participants[index].info.micMuted != muted else { return [] }
        rooms[roomID]!.participants[index].info.micMuted = muted
        rooms[roomID]!.participants[index].info.audio = !muted
        return broadcast(rooms[roomID]!, .micMuted(participant.rawValue, muted: muted, by: moderator?.rawValue), except: nil)
            + [.media(.setMuted(room: roomID, participant: participant, muted: muted))]
    }

    private mutating func setStream(_ participant: ParticipantID, in roomID: CallRoomID, kind: StreamKind, enabled: Bool) -> [Effect] {
        guard let index = rooms[roomID]?.index(of: participant) else { return [] }
        var info = rooms[roomID]!.participants[index].info
        switch kind {
        case .video:
            guard info.video != enabled else { return [] }
            info.video = enabled
        case .audio:
            guard info.audio != enabled else { return [] }
            info.audio = enabled
        }
        rooms[roomID]!.participants[index].info = info
        let message: ServerMessage = enabled ? .streamEnabled(participant.rawValue, kind) : .streamDisabled(participant.rawValue, kind)
        var effects = broadcast(rooms[roomID]!, message, except: nil)
        if kind == .audio { effects.append(.media(.setMuted(room: roomID, participant: participant, muted: !enabled || info.micMuted))) }
        return effects
    }

    /// Sends `message` to every member but `excluded`, and to the room's observers.
    private func broadcast(_ room: Room, _ message: ServerMessage, except excluded: ParticipantID?) -> [Effect] {
        room.participants.compactMap { member in
            guard member.info.id != excluded?.rawValue, let connection = member.connection else { return nil }
            return .send(connection, message)
        } + room.observers.map { .send($0, message) }
    }

    /// The most observers one room has; more are refused (4004).
    static let maximumObservers = 64
    /// The observer slots of a room one token (its participant id) may hold: a moderator's dashboard
    /// finds the room's slots free however many tabs another token opens (issue 29: one took all 64).
    static let maximumObserversPerToken = 4

    /// `observe`: the connection watches the room without taking part. Any valid token for the room
    /// admits, unless its participant was removed and is still banned (as for `join`).
    private mutating func observe(_ connection: ConnectionID, token: String, epochSeconds: Int) -> [Effect] {
        guard let state = connections[connection] else { return [] }
        let claims: AccessToken, roomID: CallRoomID, room: Room
        switch admission(of: connection, state, token: token, epochSeconds: epochSeconds) {
        case .admitted(let admitted): (claims, roomID, room) = admitted
        case .refused(let error): return refuse(connection, error)
        case .elsewhere(let roomID): return [.locate(connection, roomID, .observe(token: token))]
        }
        guard room.observers.count < Self.maximumObservers else {
            return refuse(connection, CallError(.roomFull, "room \(roomID) has \(Self.maximumObservers) observers already"))
        }
        let observer = ParticipantID(claims.participantID)
        guard room.observers.count(where: { connections[$0]?.observer == observer }) < Self.maximumObserversPerToken else {
            let why = "\(observer) observes room \(roomID) from \(Self.maximumObserversPerToken) connections already"
            return refuse(connection, CallError(.roomFull, why))
        }
        rooms[roomID]!.observers.append(connection)
        connections[connection]?.observing = roomID
        connections[connection]?.observer = observer
        let observed = ObservedRoom(roomID: roomID.rawValue, participants: room.participants.map(\.info), speakerID: room.speaker?.rawValue)
        return [.send(connection, .observing(observed))]
    }

    private mutating func newSSRC() -> SSRC {
        while true {
            let candidate = SSRC(UInt32.random(in: 1...UInt32.max, using: &generator))
            if !usedSSRCs.contains(candidate) { return candidate }
        }
    }

    /// A random room id that is not taken here (50 bits: with several nodes, a clash with another node's
    /// room is refused by the cluster as a taken id).
    private func newRoomID() -> CallRoomID {
        let alphabet = Array("abcdefghijkmnpqrstuvwxyz23456789")
        var generator = SystemRandomNumberGenerator()
        while true {
            let id = CallRoomID(String((0..<10).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }))
            if rooms[id] == nil { return id }
        }
    }
}

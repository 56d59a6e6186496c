import CallProtocol
import CallTransport

/// The rules of one meeting, as a value: it takes an input (an API call, a server message, a
/// connection's outcome, a timer) and returns the effects to carry out, in order. It holds values only,
/// does no I/O and reads no clock (the caller gives `now`, monotonic seconds); `Meeting` owns the
/// sockets, timers, devices and threads, feeds it and carries out what it returns (see
/// `RoomRegistry`/`EffectExecutor`, the server's same shape).
///
/// Connections are numbered by `generation`: a connection, a timer or a message of an earlier one (a
/// late message, close or answer) changes nothing. The generation moves on whenever the current
/// connection is given up (lost, redirected, abandoned, left).
struct MeetingStateMachine {
    /// `reconnecting`: the connection was lost while joined; the participants, the speaker and the
    /// local participant's id stay as they were until the rejoin's `joined` replaces them.
    enum Phase: Equatable { case idle, joining, joined, reconnecting, left }

    /// Why a microphone is being started, which decides what its outcome means.
    enum PublishPurpose: Equatable {
        /// Joined with the microphone on: a failure mutes it (the server is told).
        case joinedLive
        /// Joined muted: it runs anyway, sending nothing, so that `speakingWhileMuted` can fire; a
        /// failure is reported when the user unmutes.
        case joinedMuted
        /// `unmuteMic()`: the server hears of the unmute once the microphone runs.
        case unmute
    }

    enum Input {
        /// `join()`; `microphoneListed`: whether any microphone device is there now.
        case join(microphoneListed: Bool)
        case leave
        case mute
        case unmute
        /// The `async` form: mute or unmute, answered (`answerMute`) once the server confirms.
        case setMicMuted(Bool, waiter: Int)
        /// The server did not confirm waiter's mute in time.
        case muteUnconfirmed(waiter: Int)
        case setWebcam(Bool)
        /// A message for the server that only a joined meeting sends (chat, moderation).
        case sendWhileJoined(ClientMessage)
        /// The microphone chosen now (`changeMic`).
        case microphoneChosen(MicrophoneChoice)
        /// A connection of `generation` opened, its UDP socket bound to `rtpPort`.
        case connected(generation: Int, url: String, serverIndex: Int?, rtpPort: Int?)
        case connectFailed(generation: Int, serverIndex: Int?, MeetingError)
        case received(ServerMessage, generation: Int)
        /// A message that could not be decoded.
        case undecodable(MeetingError, generation: Int)
        /// The connection closed (or went silent past the ping timeout).
        case closed(generation: Int, reason: String)
        case published(PublishPurpose, failure: MeetingError?)
        case joinTimedOut
        case pingTick(generation: Int)
        case reconnectDeadline(episode: Int)
        case attemptTimedOut(generation: Int, server: String, seconds: Double)
        /// The backoff before a reconnect attempt from the server list ended.
        case attemptDue(url: String, serverIndex: Int, generation: Int)
    }

    enum Effect {
        /// Open a signalling connection to `url` (and a UDP socket of its address family, unless the
        /// one there is fits), giving up after `timeout` seconds; then `connected` or `connectFailed`.
        case connect(url: String, generation: Int, timeout: Double, serverIndex: Int?)
        /// Keep the connection `connected` reported as the meeting's own.
        case adoptConnection(generation: Int)
        /// Close a connection that opened for an attempt given up meanwhile.
        case discardConnection(generation: Int)
        /// Close the meeting's connection and forget it (the server may be closing it too).
        case closeConnection
        case send(ClientMessage)
        case emit(MeetingEvent)
        /// `join()` returns (nil) or throws.
        case finishJoin(MeetingError?)
        /// `setMicMuted(_:)` returns the local participant as the server confirmed it, or throws.
        case answerMute(waiter: Int, Result<Participant, MeetingError>)
        /// Nothing follows on the event stream.
        case finishEvents
        /// Make the RTP sender for the room's MEDIA (none without one) on the meeting's socket.
        case bindMedia(MediaDescription?)
        case startPublishing(muted: Bool, PublishPurpose)
        case stopPublishing
        case setPublisherMuted(Bool)
        /// The keep-alive pings of `generation`, and (once per socket) the count of forwarded audio.
        case startPings(generation: Int)
        case stopPings
        case startPlayback
        /// Stop the pings, the packet counter, the playback, the microphone and the connection.
        case shutDown
        /// Feed `input` back after `seconds`.
        case after(seconds: Double, Input)
    }

    let configuration: MeetingConfiguration
    /// The registry every participant value carries (their own listeners); never changed here.
    let participantListeners: ParticipantListeners?

    private(set) var phase = Phase.idle
    private(set) var localID: String?
    private(set) var participants: [String: Participant] = [:]
    /// Participant ids in joining order.
    private(set) var order: [String] = []
    private(set) var speaker: String?
    private(set) var micMuted = true
    /// The moderator whose mute holds the local microphone (only a moderator can lift it).
    private(set) var micMutedBy: String?
    private(set) var webcam = false
    private(set) var microphone: MicrophoneChoice
    /// Whether a microphone runs (or is being started) for the room.
    private(set) var publishing = false
    private(set) var media: MediaDescription?
    /// Who each SSRC belongs to, kept after they leave, for the packet counts.
    private(set) var owners: [UInt32: String] = [:]
    /// Whether a connection has been adopted for the current generation.
    private(set) var connected = false
    private(set) var generation = 0
    /// The signalling URL connected now (after any redirect): RTP goes to its host unless MEDIA names another.
    private(set) var signalURL: String?
    /// Why the server is about to close the connection (its 4011, 4012 or 4013 came first).
    private var ending: (reason: MeetingLeaveReason, error: MeetingError)?
    /// The index in `servers` of the server connected last.
    private var serverIndex = 0
    /// Joining: the servers that could not be reached so far.
    private var joinFailures: [MeetingError] = []
    /// `redirect`s followed in a row (reset when joined and at each attempt from the server list).
    private var redirects = 0
    /// While reconnecting: which server next, when to give up.
    private var reconnection: Reconnection?
    /// Numbers the reconnecting episodes, for their deadline timers.
    private var episode = 0
    /// Why the last attempt failed, for the final error.
    private var lastFailure: MeetingError?
    /// When the server was last heard from, for the ping timeout.
    private var lastHeard = 0.0
    /// The current reconnect attempt's timeout, started once it has connected.
    private var attemptSeconds = 0.0
    /// The local microphone's state as the server last said it (`joined`, then `mic-muted`).
    private var serverMuted = true
    /// `setMicMuted` calls waiting for the server's word: which state each wants.
    private var muteWaiters: [(id: Int, muted: Bool)] = []

    init(configuration: MeetingConfiguration, participantListeners: ParticipantListeners?) {
        self.configuration = configuration
        self.participantListeners = participantListeners
        microphone = configuration.microphone
    }

    /// `configuration.server`, then `configuration.fallbackServers`.
    var servers: [String] { [configuration.server] + configuration.fallbackServers }

    /// Everyone in the room, in joining order.
    var everyone: [Participant] { order.compactMap { participants[$0] } }

    var localParticipant: Participant? { localID.flatMap { participants[$0] } }

    /// The signalling URL of a server (`ws://HOST:PORT`) for the room.
    func signalURL(of server: String) -> String {
        (server.hasSuffix("/") ? String(server.dropLast()) : server) + "/v1/signal?room=" + configuration.roomId
    }

    // MARK: Inputs

    mutating func handle(_ input: Input, now: Double) -> [Effect] {
        var effects = apply(input, now: now)
        // Once the meeting is over, nothing will confirm a mute.
        if phase == .left, !muteWaiters.isEmpty {
            effects += answerMuteWaiters(where: { _ in true }, with: .failure(MeetingError(code: .network, "the meeting ended before the server confirmed the microphone's state")))
        }
        return effects
    }

    private mutating func apply(_ input: Input, now: Double) -> [Effect] {
        switch input {
        case .join(let microphoneListed): return join(microphoneListed: microphoneListed)
        case .leave: return leave()
        case .mute: return mute()
        case .unmute: return unmute()
        case .setMicMuted(let muted, let waiter): return setMicMuted(muted, waiter: waiter)
        case .muteUnconfirmed(let waiter):
            return answerMuteWaiters(where: { $0 == waiter }, with: .failure(MeetingError(code: .network, "the server did not confirm the microphone's state in \(configuration.joinTimeout) s")))
        case .setWebcam(let on): return setWebcam(on)
        case .sendWhileJoined(let message): return phase == .joined ? [.send(message)] : []
        case .microphoneChosen(let choice):
            microphone = choice
            return []
        case .connected(let generation, let url, let serverIndex, let rtpPort):
            return connected(generation, url: url, serverIndex: serverIndex, rtpPort: rtpPort, now: now)
        case .connectFailed(let generation, let serverIndex, let error):
            return connectFailed(generation, serverIndex: serverIndex, error, now: now)
        case .received(let message, let generation):
            guard generation == self.generation else { return [] }
            lastHeard = now
            return received(message, now: now)
        case .undecodable(let error, let generation):
            guard generation == self.generation else { return [] }
            lastHeard = now
            return [.emit(.error(error))]
        case .closed(let generation, let reason):
            return closed(generation, reason: reason, now: now)
        case .published(let purpose, let failure):
            return published(purpose, failure: failure)
        case .joinTimedOut:
            guard phase == .joining else { return [] }
            return failJoin(MeetingError(code: .network, "no answer from \(configuration.server) in \(configuration.joinTimeout) s"))
        case .pingTick(let generation):
            return pingTick(generation, now: now)
        case .reconnectDeadline(let episode):
            guard episode == self.episode else { return [] }
            return giveUp()
        case .attemptTimedOut(let generation, let server, let seconds):
            return abandon(generation, failure: MeetingError(code: .network, "no answer from \(server) in \(seconds) s"), now: now)
        case .attemptDue(let url, let serverIndex, let generation):
            guard phase == .reconnecting, generation == self.generation else { return [] }
            return [.connect(url: url, generation: generation, timeout: attemptSeconds, serverIndex: serverIndex)]
        }
    }

    // MARK: Joining and leaving

    private mutating func join(microphoneListed: Bool) -> [Effect] {
        guard phase == .idle else { return [] }
        phase = .joining
        webcam = configuration.webcamEnabled
        if case .device(nil) = microphone, configuration.micEnabled, !microphoneListed {
            return failJoin(MeetingError(
                code: .noMicrophoneFound,
                "no microphone device found: set MeetingConfiguration.microphone = .none (or micEnabled = false) to join without one"))
        }
        return [
            .after(seconds: configuration.joinTimeout, .joinTimedOut),
            .connect(url: signalURL(of: servers[0]), generation: generation, timeout: configuration.joinTimeout, serverIndex: 0),
        ]
    }

    /// Joining: only once connected; joined or reconnecting: whatever the attempt has reached.
    private mutating func leave() -> [Effect] {
        guard phase == .joined || (phase == .joining && connected) || phase == .reconnecting else { return [] }
        let joining = phase == .joining
        phase = .left
        generation += 1
        return [.send(.leave), .shutDown, .emit(.meetingLeft(reason: .left, error: nil)), .finishEvents]
            + (joining ? [.finishJoin(MeetingError(code: .invalidArgument, "leave() was called before the room answered"))] : [])
    }

    /// A join that failed: the meeting is over before it began (a connection still being made is
    /// discarded as soon as it opens).
    private mutating func failJoin(_ error: MeetingError) -> [Effect] {
        guard phase == .joining else { return [] }
        phase = .left
        generation += 1
        return [.shutDown, .finishEvents, .finishJoin(error)]
    }

    private mutating func connected(_ generation: Int, url: String, serverIndex: Int?, rtpPort: Int?, now: Double) -> [Effect] {
        guard generation == self.generation, phase == .joining || phase == .reconnecting else {
            return [.discardConnection(generation: generation)]
        }
        connected = true
        signalURL = url
        if let serverIndex { self.serverIndex = serverIndex }
        lastHeard = now
        // No microphone: joined with it off (an unmute later says 3059). Reconnecting: as the user left it.
        let wantsMic: Bool
        switch microphone {
        case .none: wantsMic = false
        case .device, .custom: wantsMic = phase == .joining ? configuration.micEnabled : !micMuted
        }
        let join = ClientMessage.join(
            token: configuration.token, mic: wantsMic, webcam: webcam, rtpPort: rtpPort,
            displayName: AccessToken.unverifiedSignedName(of: configuration.token) == nil ? configuration.displayName : nil)
        var effects: [Effect] = [.adoptConnection(generation: generation), .send(join)]
        if phase == .reconnecting {
            effects.append(.after(seconds: attemptSeconds, .attemptTimedOut(generation: generation, server: Self.server(of: url), seconds: attemptSeconds)))
        }
        return effects
    }

    private mutating func connectFailed(_ generation: Int, serverIndex: Int?, _ error: MeetingError, now: Double) -> [Effect] {
        guard generation == self.generation else { return [] }
        switch phase {
        case .joining:
            // A malformed URL or an unreadable certificate authority file is the caller's to fix; a
            // redirect's URL is not retried elsewhere.
            guard let serverIndex, error.code != .invalidArgument else { return failJoin(error) }
            joinFailures.append(error)
            let next = serverIndex + 1
            guard next < servers.count else {
                let combined = joinFailures.count == 1
                    ? joinFailures[0] : MeetingError(code: .network, joinFailures.map(\.message).joined(separator: "; "))
                return failJoin(combined)
            }
            return [.connect(url: signalURL(of: servers[next]), generation: generation, timeout: configuration.joinTimeout, serverIndex: next)]
        case .reconnecting:
            return abandon(generation, failure: error, now: now)
        case .idle, .joined, .left:
            return []
        }
    }

    private mutating func joined(_ room: JoinedRoom) -> [Effect] {
        guard phase == .joining else { return [] }
        phase = .joined
        redirects = 0
        localID = room.participantID
        media = room.media
        speaker = room.speakerID
        for info in room.participants {
            order.append(info.id)
            participants[info.id] = Participant(info, isLocal: info.id == room.participantID, listeners: participantListeners)
            if let ssrc = info.ssrc { owners[ssrc] = info.id }
        }
        micMuted = localParticipant?.micMuted ?? true
        serverMuted = micMuted
        var effects: [Effect] = [.bindMedia(room.media), .startPlayback, .startPings(generation: generation)]
        effects += publishAfterJoining()
        effects.append(.emit(.meetingJoined(participants: everyone)))
        // Those already in the room, as if they had joined now (seed 000 highlights each one it is told of).
        for participant in everyone where !participant.isLocal { effects.append(.emit(.participantJoined(participant))) }
        if let speaker = room.speakerID { effects.append(.emit(.speakerChanged(participantId: speaker))) }
        effects.append(.finishJoin(nil))
        return effects
    }

    /// After `joined` (first or again): the microphone publishing when it is on, else running muted.
    private mutating func publishAfterJoining() -> [Effect] {
        guard media != nil else { return [] }
        switch microphone {
        case .none:
            return []
        case .device, .custom:
            publishing = true
            return micMuted ? [.startPublishing(muted: true, .joinedMuted)] : [.startPublishing(muted: false, .joinedLive)]
        }
    }

    /// The answer to a re-join: the new room replaces the old one. The differences are raised as
    /// they would have been while connected (`participantLeft` or `participantJoined`, each followed
    /// by `participantsChanged`; one `participantsChanged` for those whose state changed), then the
    /// speaker if it changed, then `reconnected`. The microphone is published again to the new
    /// MEDIA (new SSRC, maybe another host and port), muted if it was muted.
    private mutating func rejoined(_ room: JoinedRoom) -> [Effect] {
        phase = .joined
        reconnection = nil
        redirects = 0
        lastFailure = nil
        var events: [MeetingEvent] = []
        let fresh = room.participants.map { Participant($0, isLocal: $0.id == room.participantID, listeners: participantListeners) }
        let freshIDs = Set(fresh.map(\.id))
        for id in order where !freshIDs.contains(id) {
            order.removeAll { $0 == id }
            guard let gone = participants.removeValue(forKey: id), id != localID else { continue }
            events.append(.participantLeft(gone, reason: .left))
            events.append(.participantsChanged(update(removed: [gone])))
        }
        localID = room.participantID
        var changed: [String] = []
        for participant in fresh {
            if let ssrc = participant.ssrc { owners[ssrc] = participant.id }
            if let old = participants[participant.id] {
                participants[participant.id] = participant
                if old != participant { changed.append(participant.id) }
            } else {
                order.append(participant.id)
                participants[participant.id] = participant
                guard !participant.isLocal else { continue }
                events.append(.participantJoined(participant))
                events.append(.participantsChanged(update(added: [participant])))
            }
        }
        if !changed.isEmpty { events.append(.participantsChanged(update(updated: changed))) }
        if speaker != room.speakerID { events.append(.speakerChanged(participantId: room.speakerID)) }
        speaker = room.speakerID
        media = room.media
        micMuted = localParticipant?.micMuted ?? true
        var effects: [Effect] = [.bindMedia(room.media), .startPings(generation: generation)]
        effects += serverSaysMuted(micMuted, by: nil)
        effects += publishAfterJoining()
        effects += events.map { .emit($0) }
        effects.append(.emit(.reconnected(participants: everyone)))
        return effects
    }

    // MARK: Microphone and webcam

    private mutating func mute() -> [Effect] {
        guard phase == .joined || phase == .reconnecting, !micMuted else { return [] }
        setLocalMuted(true)
        return [.setPublisherMuted(true)] + (phase == .joined ? [.send(.muteMic)] : [])
    }

    /// Why the local microphone may not be unmuted now, if it may not.
    private var unmuteRefusal: MeetingError? {
        if let moderator = micMutedBy { return MeetingError(CallError(.notAllowed, "muted by \(moderator): only a moderator can unmute you")) }
        guard let me = localParticipant, me.role.canPublish else {
            return MeetingError(CallError(.notAllowed, "a subscriber's token cannot publish: the microphone stays off"))
        }
        return nil
    }

    private mutating func unmute() -> [Effect] {
        guard phase == .joined else { return [] }
        if let refusal = unmuteRefusal { return [.emit(.error(refusal))] }
        guard micMuted else { return [] }
        setLocalMuted(false)
        if publishing { return [.setPublisherMuted(false), .send(.unmuteMic)] }
        publishing = true
        return [.startPublishing(muted: false, .unmute)]
    }

    private mutating func published(_ purpose: PublishPurpose, failure: MeetingError?) -> [Effect] {
        guard let failure else {
            return purpose == .unmute && phase == .joined && !micMuted ? [.send(.unmuteMic)] : []
        }
        publishing = false
        switch purpose {
        case .joinedMuted:
            return []
        case .joinedLive:
            // The server was told the microphone is on: tell it otherwise.
            return [.emit(.error(failure))] + mute()
        case .unmute:
            setLocalMuted(true)
            return [.emit(.error(failure))] + answerMuteWaiters(where: { _ in true }, with: .failure(failure), wanting: false)
        }
    }

    /// The `async` mute: answered at once when the server already has that state, refused like
    /// `unmute()` (and then also an `error` event), else once the server's `mic-muted` says so.
    private mutating func setMicMuted(_ muted: Bool, waiter: Int) -> [Effect] {
        guard phase == .joined, let me = localParticipant else {
            return [.answerMute(waiter: waiter, .failure(MeetingError(code: .invalidArgument, "the meeting is not joined")))]
        }
        if !muted, let refusal = unmuteRefusal {
            return [.emit(.error(refusal)), .answerMute(waiter: waiter, .failure(refusal))]
        }
        let effects = muted ? mute() : unmute()
        guard serverMuted != muted else { return effects + [.answerMute(waiter: waiter, .success(localParticipant ?? me))] }
        muteWaiters.append((waiter, muted))
        return effects + [.after(seconds: configuration.joinTimeout, .muteUnconfirmed(waiter: waiter))]
    }

    /// Answers (and forgets) the waiters `which` picks, of those wanting `wanting` (nil: any).
    private mutating func answerMuteWaiters(
        where which: (Int) -> Bool, with result: Result<Participant, MeetingError>, wanting: Bool? = nil
    ) -> [Effect] {
        let picked = muteWaiters.filter { which($0.id) && (wanting == nil || $0.muted == wanting) }
        muteWaiters.removeAll { which($0.id) && (wanting == nil || $0.muted == wanting) }
        return picked.map { .answerMute(waiter: $0.id, result) }
    }

    /// The server's word on the local microphone (`joined`, rejoined, or `mic-muted`): confirms the
    /// waiters that wanted it; a moderator's mute refuses those that wanted it on.
    private mutating func serverSaysMuted(_ muted: Bool, by moderator: String?) -> [Effect] {
        serverMuted = muted
        guard let me = localParticipant else { return [] }
        var effects = answerMuteWaiters(where: { _ in true }, with: .success(me), wanting: muted)
        if muted, let moderator {
            effects += answerMuteWaiters(
                where: { _ in true }, with: .failure(MeetingError(CallError(.notAllowed, "muted by \(moderator): only a moderator can unmute you"))), wanting: false)
        }
        return effects
    }

    private mutating func setLocalMuted(_ muted: Bool) {
        micMuted = muted
        if let localID { participants[localID]?.micMuted = muted }
    }

    /// Signals the webcam's state; the local participant's `streamEnabled`/`streamDisabled` (video)
    /// follows at once, as it does for a microphone switch (the server's echo is not repeated).
    private mutating func setWebcam(_ on: Bool) -> [Effect] {
        guard phase == .joined, webcam != on, let localID else { return [] }
        webcam = on
        participants[localID]?.videoEnabled = on
        return [
            .send(on ? .enableStream(.video) : .disableStream(.video)),
            .emit(on ? .streamEnabled(participantId: localID, kind: .video) : .streamDisabled(participantId: localID, kind: .video)),
            .emit(.participantsChanged(update(updated: [localID]))),
        ]
    }

    /// The list update for participants whose state changed (ids still in the room).
    private func update(added: [Participant] = [], removed: [Participant] = [], updated ids: [String] = []) -> ParticipantListUpdate {
        ParticipantListUpdate(added: added, removed: removed, updated: ids.compactMap { participants[$0] }, participants: everyone)
    }

    // MARK: Server messages

    private mutating func received(_ message: ServerMessage, now: Double) -> [Effect] {
        switch message {
        case .joined(let room):
            return phase == .reconnecting ? rejoined(room) : joined(room)
        case .participantJoined(let info):
            let participant = Participant(info, isLocal: false, listeners: participantListeners)
            if let ssrc = info.ssrc { owners[ssrc] = info.id }
            if participants[info.id] == nil { order.append(info.id) }
            participants[info.id] = participant
            return [.emit(.participantJoined(participant)), .emit(.participantsChanged(update(added: [participant])))]
        case .participantLeft(let id, let reason):
            order.removeAll { $0 == id }
            guard let participant = participants.removeValue(forKey: id), id != localID else { return [] }
            return [.emit(.participantLeft(participant, reason: MeetingLeaveReason(reason))), .emit(.participantsChanged(update(removed: [participant])))]
        case .streamEnabled(let id, let kind), .streamDisabled(let id, let kind):
            let enabled: Bool
            if case .streamEnabled = message { enabled = true } else { enabled = false }
            if kind == .audio { participants[id]?.audioEnabled = enabled } else { participants[id]?.videoEnabled = enabled }
            // The local participant's own changes were raised when it made them.
            guard id != localID else { return [] }
            return [
                .emit(enabled ? .streamEnabled(participantId: id, kind: kind) : .streamDisabled(participantId: id, kind: kind)),
                .emit(.participantsChanged(update(updated: [id]))),
            ]
        case .micMuted(let id, let muted, let by):
            participants[id]?.micMuted = muted
            var effects: [Effect] = []
            if id == localID {
                // A moderator's mute applies to the local microphone too, and holds until a moderator lifts it.
                micMutedBy = muted ? by : nil
                micMuted = muted
                effects.append(.setPublisherMuted(muted))
                effects += serverSaysMuted(muted, by: by)
            }
            return effects + [.emit(.micMuted(participantId: id, muted: muted, by: by)), .emit(.participantsChanged(update(updated: [id])))]
        case .speakerChanged(let id, _):
            speaker = id
            return [.emit(.speakerChanged(participantId: id))]
        case .audioLevels(_, let levels, _):
            return [.emit(.audioLevels(levels))]
        case .message(let body, let from, _):
            return [.emit(.message(from: from, body: body))]
        case .error(let error):
            return serverError(MeetingError(error), code: error.code, now: now)
        case .pong, .observing, .answer, .iceCandidate:
            // Answers to `observe` and `offer`, which a Meeting never sends (it publishes plain RTP).
            return []
        case .redirect(let redirect):
            return follow(redirect, now: now)
        }
    }

    private mutating func serverError(_ error: MeetingError, code: CallErrorCode, now: Double) -> [Effect] {
        // 4012: the server heard nothing for its client timeout; with reconnecting on, the close
        // that follows is a lost connection like any other.
        let ending: MeetingLeaveReason? =
            switch code {
            case .removed: .removed
            case .timedOut: configuration.reconnect ? nil : .timedOut
            case .roomClosed: .roomClosed
            default: nil
            }
        switch phase {
        case .reconnecting:
            // The answer to a re-join: try again, or the end (a token error, a removal's ban, …).
            if reconnection?.isRetryable(code, now: now) ?? false { return abandon(generation, failure: error, now: now) }
            return giveUp(error: error, reason: ending ?? .connectionLost)
        case .joining:
            return failJoin(error)
        case .joined:
            // The server closes the connection after these: the close says why it ended.
            if let ending {
                self.ending = (ending, error)
                return []
            }
            return [.emit(.error(error))]
        case .idle, .left:
            return [.emit(.error(error))]
        }
    }

    /// The connection closed (or went silent past the ping timeout). After the server's 4011, 4012 or
    /// 4013 the meeting was left for that reason (removed, timed out, room closed); otherwise the
    /// connection was lost: with `reconnect` on the meeting reconnects, else it ends (3001, also an
    /// error). During a reconnect attempt the attempt failed; while joining, the join did.
    private mutating func closed(_ generation: Int, reason: String, now: Double) -> [Effect] {
        guard generation == self.generation else { return [] }
        switch phase {
        case .joining:
            return failJoin(MeetingError(code: .network, "connection closed by the server \(reason)"))
        case .reconnecting:
            return abandon(generation, failure: MeetingError(code: .network, "connection closed\(reason.isEmpty ? "" : ": " + reason)"), now: now)
        case .joined:
            if let ending {
                phase = .left
                self.generation += 1
                return [.shutDown, .emit(.meetingLeft(reason: ending.reason, error: ending.error)), .finishEvents]
            }
            guard configuration.reconnect else {
                phase = .left
                self.generation += 1
                let error = MeetingError(code: .network, "connection to \(configuration.server) lost\(reason.isEmpty ? "" : ": " + reason)")
                return [.shutDown, .emit(.error(error)), .emit(.meetingLeft(reason: .connectionLost, error: error)), .finishEvents]
            }
            return startReconnecting(now: now)
        case .idle, .left:
            return []
        }
    }

    /// A ping; or, after `pingTimeout` seconds without any message from the server, the connection
    /// counts as lost.
    private mutating func pingTick(_ generation: Int, now: Double) -> [Effect] {
        guard generation == self.generation, phase == .joined else { return [] }
        let silence = now - lastHeard
        if configuration.pingTimeout > 0, silence > max(configuration.pingTimeout, 2 * configuration.pingInterval) {
            return closed(generation, reason: "no message from the server for \(Int(silence)) s", now: now)
        }
        return [.send(.ping)]
    }

    // MARK: Reconnecting and redirects

    /// The connection was lost while joined (or the server redirected the joined meeting): stops the
    /// pings and the microphone, raises `reconnecting`, and starts the attempts (to `redirect` first
    /// when given) and the `reconnectTimeout` deadline. The participants, the socket, the packet
    /// counter and the playback stay.
    private mutating func startReconnecting(redirect: String? = nil, now: Double) -> [Effect] {
        phase = .reconnecting
        generation += 1
        episode += 1
        ending = nil
        lastFailure = nil
        connected = false
        publishing = false
        redirects = redirect == nil ? 0 : 1
        let plan = Reconnection(servers: servers, current: serverIndex, start: now, timeout: configuration.reconnectTimeout)
        reconnection = plan
        var effects: [Effect] = [
            .stopPings, .stopPublishing, .bindMedia(nil), .closeConnection, .emit(.reconnecting),
            .after(seconds: configuration.reconnectTimeout, .reconnectDeadline(episode: episode)),
        ]
        if let redirect {
            attemptSeconds = plan.attemptTimeout(now: now)
            effects.append(.connect(url: redirect, generation: generation, timeout: attemptSeconds, serverIndex: nil))
        } else {
            effects += scheduleAttempt(now: now)
        }
        return effects
    }

    /// The next attempt from the server list, after its backoff; past the deadline, the end.
    private mutating func scheduleAttempt(now: Double) -> [Effect] {
        guard phase == .reconnecting, var plan = reconnection else { return [] }
        defer { reconnection = plan }
        redirects = 0
        guard let attempt = plan.nextAttempt(now: now) else { return giveUp() }
        attemptSeconds = plan.attemptTimeout(now: now + attempt.delay)
        return [.after(seconds: attempt.delay, .attemptDue(url: signalURL(of: attempt.server), serverIndex: attempt.index, generation: generation))]
    }

    /// Gives up the reconnect attempt of `generation` (failed, refused, closed, or unanswered) and
    /// schedules the next. Does nothing once that attempt is no longer the current one.
    private mutating func abandon(_ generation: Int, failure: MeetingError, now: Double) -> [Effect] {
        guard phase == .reconnecting, generation == self.generation else { return [] }
        self.generation += 1
        lastFailure = failure
        let close: [Effect] = connected ? [.closeConnection] : []
        connected = false
        return close + scheduleAttempt(now: now)
    }

    /// A `redirect`: the room lives on another node. Joining or reconnecting: connect to its URL and
    /// join again (at most `Reconnection.maximumRedirects` in a row: then joining fails, and a
    /// reconnect attempt counts as failed). Joined: reconnect, to its URL first.
    private mutating func follow(_ redirect: Redirect, now: Double) -> [Effect] {
        switch phase {
        case .joined:
            return startReconnecting(redirect: redirect.url, now: now)
        case .joining, .reconnecting:
            redirects += 1
            generation += 1
            connected = false
            // The server closes it too; this only asks for it.
            var effects: [Effect] = [.closeConnection]
            guard redirects <= Reconnection.maximumRedirects else {
                let error = MeetingError(
                    code: .network,
                    "too many redirects: more than \(Reconnection.maximumRedirects) in a row for room \(configuration.roomId), the last to \(redirect.url) (node \(redirect.nodeId))")
                if phase == .joining { return effects + failJoin(error) }
                lastFailure = error
                return effects + scheduleAttempt(now: now)
            }
            attemptSeconds = reconnection?.attemptTimeout(now: now) ?? configuration.joinTimeout
            effects.append(.connect(url: redirect.url, generation: generation, timeout: attemptSeconds, serverIndex: nil))
            return effects
        case .idle, .left:
            return []
        }
    }

    /// Ends a reconnecting meeting: its deadline passed, no attempt fits before it any more, or a
    /// re-join was refused for good (`error`). `connectionLost` is also raised as an `error` event
    /// first (3001 unless the server's error).
    private mutating func giveUp(error given: MeetingError? = nil, reason: MeetingLeaveReason = .connectionLost) -> [Effect] {
        guard phase == .reconnecting else { return [] }
        phase = .left
        generation += 1
        let last = lastFailure.map { " (last: \($0.message))" } ?? ""
        let error = given ?? MeetingError(
            code: .network, "connection to \(configuration.server) lost; not reconnected within \(configuration.reconnectTimeout) s\(last)")
        return [.shutDown] + (reason == .connectionLost ? [.emit(.error(error))] : []) + [.emit(.meetingLeft(reason: reason, error: error)), .finishEvents]
    }

    static func isIPv6(_ url: String) -> Bool { url.contains("://[") }

    /// The host of `ws://HOST:PORT/…` (or `wss://`), without brackets.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") { return String(rest[rest.index(after: rest.startIndex)..<close]) }
        return String(rest.prefix { $0 != ":" && $0 != "/" })
    }

    /// `ws://HOST:PORT` of a signalling URL (`ws://HOST:PORT/v1/signal?room=…`).
    static func server(of url: String) -> String {
        guard let scheme = url.range(of: "://"), let slash = url[scheme.upperBound...].firstIndex(of: "/") else { return url }
        return String(url[..<slash])
    }
}

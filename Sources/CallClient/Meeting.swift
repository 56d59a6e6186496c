import CallProtocol
import CallTransport
import Foundation
import SpeakerDevices
import SpeakerIO
import SpeakerRTP
import Synchronization

/// How to join a meeting.
public struct MeetingConfiguration: Sendable {
    /// The room server, `ws://HOST:PORT` (IPv6 as `ws://[::1]:PORT`), or `wss://HOST:PORT` for TLS
    /// (the server's certificate is verified; HOST a name or an IPv4 address).
    public var server: String
    /// For a `wss://` server: a PEM file of the certificate authorities to trust instead of the
    /// system's (a private or test CA); nil: the system's.
    public var certificateAuthorityFile: String?
    public var roomId: String
    /// A token of the room (see `activespeaker token`).
    public var token: String
    /// The name others see, for a token that signs none; nil: the participant id. A name the token signs
    /// (`activespeaker token --name`) is the participant's and wins: the server refuses any other (4006), so
    /// with such a token this is not sent and `localParticipant.displayName` is the token's.
    public var displayName: String?
    /// Whether the microphone is on when joining. When off, a publisher's microphone still runs, muted:
    /// nothing is sent, but the local engine listens so that `speakingWhileMuted` can fire. With
    /// `microphone = .none` the microphone is off whatever this says.
    public var micEnabled = true
    /// Whether the (signalled) video is on when joining.
    public var webcamEnabled = false
    public var microphone: MicrophoneChoice = .device(nil)
    /// Where the others' audio is played (every forwarded stream, decoded and mixed); `.none` by default:
    /// nothing is played.
    public var speaker: SpeakerChoice = .none
    /// Seconds to wait for the server's answer.
    public var joinTimeout: Double = 10
    /// Seconds between keep-alive pings (the server drops silent clients).
    public var pingInterval: Double = 5
    /// Seconds without any message from the server (each ping is answered with a pong) after which
    /// the connection counts as lost, as if it had closed; at least two `pingInterval`s are waited
    /// for. 0: never.
    public var pingTimeout: Double = 15
    /// Other nodes of the same service, `ws://HOST:PORT` or `wss://HOST:PORT` like `server`: joining
    /// tries them in order when `server` cannot be reached, and reconnecting cycles through `server`
    /// and these.
    public var fallbackServers: [String] = []
    /// Whether a lost connection is re-established by itself (`reconnecting`, then `reconnected`);
    /// false: a lost connection ends the meeting (`meetingLeft(reason: .connectionLost, …)`).
    public var reconnect = true
    /// Seconds of reconnecting without success before the meeting ends as `connectionLost` (3001).
    public var reconnectTimeout: Double = 30
    /// Seconds between two reads of the device list while a device listener is set
    /// (`setAudioDeviceChangeListener`): a microphone plugged in or removed is told within this time.
    public var devicePollInterval: Double = 1

    public init(server: String, roomId: String, token: String) {
        self.server = server
        self.roomId = roomId
        self.token = token
    }
}

/// A meeting: join a room, follow its participants and its dominant speaker, publish a microphone.
///
/// Events arrive both on `events` (an `AsyncStream`, for one consumer, read on any task) and on the
/// registered `MeetingEventListener`s (held weakly, called on the main actor), in one order, from one
/// serial queue: whichever thread raised an event (the signalling connection's, the microphone's, or
/// the caller's own when a call reports an error), the queue gives it to the stream and then, through
/// the main queue, to each listener before the next event. Nothing follows `meetingLeft` on either.
/// All methods are thread-safe and may be called from any thread or actor.
///
/// A lost connection is re-established by itself (`reconnecting`, then `reconnected`; see
/// `MeetingConfiguration.reconnect` and docs/call.md, "Reconnecting"); a `redirect` from the server
/// is followed.
///
/// The meeting's own threads and queues hold it only weakly (the signalling handlers, while they run)
/// or not at all (the microphone, the packet counter, the pings, the event queue), so dropping the
/// last reference leaves the room at once (`deinit` calls `leave()`).
public final class Meeting: @unchecked Sendable {
    // @unchecked Sendable: mutable state lives in `state` (a Mutex); `socket`, `client`, `publisher`
    // are replaced only under that lock; `eventQueue` delivers the events (see MeetingEventQueue).

    public let configuration: MeetingConfiguration
    /// Every event, in order; finished after `meetingLeft` (or when `join()` fails).
    public var events: AsyncStream<MeetingEvent> { eventQueue.stream }
    private let eventQueue = MeetingEventQueue()

    private struct State {
        var phase: Phase = .idle
        var localID: String?
        var participants: [String: Participant] = [:]
        var order: [String] = []
        var speaker: String?
        var media: MediaDescription?
        var micMuted = true
        /// The moderator whose mute holds the local microphone (only a moderator can lift it).
        var micMutedBy: String?
        var webcam = false
        var microphone: MicrophoneChoice
        var selectedOutput = AudioDeviceInfo.speaker
        var deviceListener: AudioDeviceChangeListener?
        /// Reads the device list while a device listener is set.
        var devicePoll: (any DispatchSourceTimer)?
        var lastDevices: [AudioDeviceInfo] = []
        /// Why the server is about to close the connection (its 4011, 4012 or 4013 came first).
        var ending: (reason: MeetingLeaveReason, error: MeetingError)?
        var joinWaiter: CheckedContinuation<Result<Void, MeetingError>, Never>?
        var client: WebSocketClient?
        var socket: UDPSocket?
        var sender: RTPAudioSender?
        var publisher: MicrophonePublisher?
        /// Counts forwarded RTP from joining on; kept after leaving, for `receivedPackets`.
        var packetCounter: ForwardedPacketCounter?
        var player: MeetingPlayer?
        /// The keep-alive pings, while joined.
        var pings: (any DispatchSourceTimer)?
        /// Who each SSRC belongs to, kept after they leave, for the packet counts.
        var owners: [UInt32: String] = [:]
        /// Counters of sockets replaced while reconnecting (another address family); still counted.
        var retiredCounters: [ForwardedPacketCounter] = []
        /// Whether `socket` is an IPv6 one.
        var socketIsIPv6 = false
        /// Numbers the connections: a handler of an earlier one (a late message or close) is ignored.
        /// Bumped whenever the current connection is given up (lost, redirected, abandoned, left).
        var generation = 0
        /// The signalling URL connected now (after any redirect): RTP goes to its host unless MEDIA
        /// names another.
        var signalURL: String?
        /// The index in `servers` of the server connected last.
        var serverIndex = 0
        /// `redirect`s followed in a row (reset when joined and at each attempt from the server list).
        var redirects = 0
        /// While reconnecting: which server next, when to give up.
        var reconnection: Reconnection?
        /// Numbers the reconnecting episodes, for their deadline timers.
        var episode = 0
        /// Why the last attempt failed, for the final error.
        var lastFailure: MeetingError?
        /// When the server was last heard from (monotonic seconds), for the ping timeout.
        var lastHeard = 0.0
    }

    /// `reconnecting`: the connection was lost while joined; the participants, the speaker and the
    /// local participant's id stay as they were until the rejoin's `joined` replaces them.
    private enum Phase { case idle, joining, joined, reconnecting, left }

    private let state: Mutex<State>
    private let deviceQueue = DispatchQueue(label: "activespeaker.meeting.devices")
    /// Runs the connection attempts that follow a redirect or a loss, one at a time (each blocks for
    /// at most its connect timeout).
    private let connectQueue = DispatchQueue(label: "activespeaker.meeting.connect")
    /// The microphones there are now (ALSA's, or a test's).
    private let listMicrophones: @Sendable () -> [AudioDeviceInfo]
    /// Tests: called with each signalling message as it arrives, on the WebSocket's thread, before it is
    /// handled (how long an event takes from the socket to a listener).
    let arrivalProbe = Mutex<(@Sendable (String) -> Void)?>(nil)

    public convenience init(configuration: MeetingConfiguration) {
        self.init(configuration: configuration, microphones: DeviceCatalog.microphones)
    }

    /// A meeting whose microphones are listed by `microphones` instead of alsa-lib (tests).
    init(configuration: MeetingConfiguration, microphones: @escaping @Sendable () -> [AudioDeviceInfo]) {
        self.configuration = configuration
        self.listMicrophones = microphones
        state = Mutex(State(microphone: configuration.microphone))
    }

    /// Leaves the room. Runs where the last reference goes: an app thread, the event queue (a listener
    /// that held the meeting), or the signalling connection's service thread (its handlers hold the
    /// meeting while they run). There too it waits for nothing that waits for it: `leave()` stops the
    /// microphone thread (which holds no reference to the meeting) and only asks the connection to
    /// close (`WebSocketClient.close` does not join its own thread).
    deinit {
        state.withLock { $0.devicePoll?.cancel() }  // never waits
        leave()
    }

    // MARK: Participants

    /// This client's participant, once joined.
    public var localParticipant: Participant? {
        state.withLock { s in s.localID.flatMap { s.participants[$0] } }
    }

    /// Everyone in the room, in joining order, the local participant included.
    public var participants: [Participant] {
        state.withLock { s in s.order.compactMap { s.participants[$0] } }
    }

    /// The dominant speaker now; nil when nobody speaks.
    public var speakerId: String? { state.withLock { $0.speaker } }

    /// Forwarded RTP packets received so far, per participant id (participants who left included;
    /// `ssrc-N` for a source the server never announced).
    public var receivedPackets: [String: Int] {
        state.withLock { s in
            var counts = s.packetCounter?.bySSRC ?? [:]
            for retired in s.retiredCounters { counts.merge(retired.bySSRC, uniquingKeysWith: +) }
            return Dictionary(counts.map { (s.owners[$0.key] ?? "ssrc-\($0.key)", $0.value) }, uniquingKeysWith: +)
        }
    }

    /// Adds a listener, held weakly (the meeting never keeps it alive): it hears the events delivered
    /// after this call, on the main actor.
    public func addEventListener(_ listener: any MeetingEventListener) {
        eventQueue.add(listener)
    }

    /// Removes a listener; an event being delivered at that moment may still reach it.
    public func removeEventListener(_ listener: any MeetingEventListener) {
        eventQueue.remove(listener)
    }

    // MARK: Joining and leaving

    /// Connects (to `server`, else to the first of `fallbackServers` that answers; following the
    /// server's redirects, at most 5 in a row), joins the room and starts the microphone (if on).
    /// - Throws: `MeetingError`: see `joinFailure` for invalid token, expired, room not found, room full
    ///   and network.
    public func join() async throws(MeetingError) {
        let ready: Bool = state.withLock { s in
            guard s.phase == .idle else { return false }
            s.phase = .joining
            s.webcam = configuration.webcamEnabled
            return true
        }
        guard ready else { throw MeetingError(code: .invalidArgument, "join() was already called") }
        let result = await withCheckedContinuation { (waiter: CheckedContinuation<Result<Void, MeetingError>, Never>) in
            let generation = state.withLock { s in
                s.joinWaiter = waiter
                return s.generation
            }
            DispatchQueue.global().async { [self] in
                if let error = joinFirstReachable(generation: generation) { finishJoin(.failure(error)) }
            }
            // Weak: a meeting dropped after joining must not live on until the timeout.
            let (server, timeout) = (configuration.server, configuration.joinTimeout)
            DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in
                self?.finishJoin(.failure(MeetingError(code: .network, "no answer from \(server) in \(timeout) s")))
            }
        }
        if case .failure(let error) = result {
            state.withLock { s in
                // A connection still being made is closed as soon as it opens (see `open`).
                s.phase = .left
                s.generation += 1
            }
            shutDown()
            eventQueue.finish()
            throw error
        }
    }

    /// Leaves the room and stops the microphone. Idempotent.
    public func leave() {
        let (proceed, client): (Bool, WebSocketClient?) = state.withLock { s in
            // Joining: only once connected (as before); reconnecting: whatever the attempt has reached.
            guard s.phase == .joined || (s.phase == .joining && s.client != nil) || s.phase == .reconnecting else { return (false, nil) }
            s.phase = .left
            s.generation += 1
            return (true, s.client)
        }
        guard proceed else { return }
        client?.send(ClientMessage.leave.json)
        shutDown()
        emit(.meetingLeft(reason: .left, error: nil))
        eventQueue.finish()
    }

    /// `configuration.server`, then `configuration.fallbackServers`.
    private var servers: [String] { [configuration.server] + configuration.fallbackServers }

    /// The signalling URL of a server (`ws://HOST:PORT`) for the room.
    private func signalURL(_ server: String) -> String {
        (server.hasSuffix("/") ? String(server.dropLast()) : server) + "/v1/signal?room=" + configuration.roomId
    }

    /// Joining: connects to the first server (of `servers`) that answers and sends `join`.
    /// - Returns: The error when none could be reached (nil once `join` is sent).
    private func joinFirstReachable(generation: Int) -> MeetingError? {
        var failures: [MeetingError] = []
        for (index, server) in servers.enumerated() {
            guard let error = open(signalURL(server), generation: generation, timeout: configuration.joinTimeout, serverIndex: index) else {
                return nil
            }
            // A malformed URL or an unreadable certificate authority file is the caller's to fix.
            if error.code == .invalidArgument { return error }
            failures.append(error)
        }
        return failures.count == 1 ? failures[0] : MeetingError(code: .network, failures.map(\.message).joined(separator: "; "))
    }

    /// Connects to the signalling `url` and sends `join` (the microphone as the user left it: on when
    /// it is on now, or on joining as `micEnabled` says). Blocks for at most `timeout` seconds.
    /// A connection that opens after its attempt was given up (`generation` is past) is closed at once.
    /// - Parameter serverIndex: the index in `servers`, nil for a redirect's URL.
    /// - Returns: Why it failed; nil once `join` is sent (or the attempt was given up meanwhile).
    private func open(_ url: String, generation: Int, timeout: Double, serverIndex: Int?) -> MeetingError? {
        let client: WebSocketClient
        do throws(TransportError) {
            client = try WebSocketClient(url: url, certificateAuthorityFile: configuration.certificateAuthorityFile)
            client.setHandler(
                message: { [weak self] text in self?.received(text, generation: generation) },
                closed: { [weak self] code, reason in self?.connectionClosed(code: code, reason: reason, generation: generation) })
            try client.connect(timeout: timeout)
        } catch {
            let code: MeetingError.Code = error.operation == .parse ? .invalidArgument : .network
            return MeetingError(code: code, "cannot connect to \(Self.server(of: url)): \(error)")
        }
        // The socket exists before joining so its port can be announced. One socket serves every
        // connection of the meeting, unless a server of the other address family comes next.
        let ipv6 = Self.isIPv6(url)
        var fresh: UDPSocket?
        if state.withLock({ $0.socket == nil || $0.socketIsIPv6 != ipv6 }) {
            do {
                fresh = try UDPSocket(address: ipv6 ? "[::]:0" : "0.0.0.0:0")
            } catch {
                client.close()
                return MeetingError(code: .network, "cannot open a UDP socket: \(error)")
            }
        }
        let join: ClientMessage? = state.withLock { s in
            guard s.generation == generation, s.phase == .joining || s.phase == .reconnecting else { return nil }
            if let fresh {
                if let counter = s.packetCounter {
                    counter.stop()
                    s.retiredCounters.append(counter)
                    s.packetCounter = nil
                }
                s.socket = fresh
                s.socketIsIPv6 = ipv6
            }
            s.client = client
            s.signalURL = url
            if let serverIndex { s.serverIndex = serverIndex }
            s.lastHeard = Self.now()
            // No microphone: joined with it off (an unmute later says 3059).
            let wantsMic: Bool
            switch s.microphone {
            case .none: wantsMic = false
            case .device, .custom: wantsMic = s.phase == .joining ? configuration.micEnabled : !s.micMuted
            }
            return ClientMessage.join(
                token: configuration.token, mic: wantsMic, webcam: s.webcam, rtpPort: s.socket?.port,
                displayName: AccessToken.unverifiedSignedName(of: configuration.token) == nil ? configuration.displayName : nil)
        }
        guard let join else {
            client.close()
            return nil
        }
        client.send(join.json)
        return nil
    }

    private func finishJoin(_ result: Result<Void, MeetingError>) {
        let waiter = state.withLock { s in
            let waiter = s.joinWaiter
            s.joinWaiter = nil
            return waiter
        }
        waiter?.resume(returning: result)
    }

    /// Stops the pings, the packet counter, the microphone and the connection. Waits for the
    /// microphone's thread only (see `deinit`).
    private func shutDown() {
        let (client, publisher, counter, player) = state.withLock { s in
            let taken = (s.client, s.publisher, s.packetCounter, s.player)
            s.reconnection = nil
            s.client = nil
            s.player = nil
            s.publisher = nil
            s.pings?.cancel()  // never waits
            s.pings = nil
            return taken
        }
        counter?.stop()
        player?.stop()
        publisher?.stop()
        client?.close()
    }

    // MARK: Microphone and webcam

    /// Mutes the microphone. While reconnecting too: the rejoin is then muted. When it returns,
    /// `localParticipant.micMuted` is true; the others see it when the server's `mic-muted` reaches them.
    public func muteMic() {
        let client: WebSocketClient? = state.withLock { s in
            guard s.phase == .joined || s.phase == .reconnecting, !s.micMuted else { return nil }
            s.micMuted = true
            s.publisher?.muted = true
            if let me = s.localID { s.participants[me]?.micMuted = true }
            return s.phase == .joined ? s.client : nil
        }
        client?.send(ClientMessage.muteMic.json)
    }

    /// Unmutes the microphone; when it returns, `localParticipant.micMuted` is false. Unless a moderator
    /// muted it: then an `error` event (4006) says so and the microphone stays muted until a moderator lifts
    /// the mute. A subscriber cannot publish: an `error` event (4006). A microphone that cannot be opened, or
    /// none (`.none`), gives an `error` event (3002, 3059) and stays muted; the server is not told.
    public func unmuteMic() {
        enum Refusal { case mutedBy(String), subscriber }
        let refusal: Refusal? = state.withLock { s in
            guard s.phase == .joined else { return nil }
            if let moderator = s.micMutedBy { return .mutedBy(moderator) }
            if let me = s.localID.flatMap({ s.participants[$0] }), !me.role.canPublish { return .subscriber }
            return nil
        }
        switch refusal {
        case .mutedBy(let moderator):
            return emit(.error(MeetingError(CallError(.notAllowed, "muted by \(moderator): only a moderator can unmute you"))))
        case .subscriber:
            return emit(.error(MeetingError(CallError(.notAllowed, "a subscriber's token cannot publish: the microphone stays off"))))
        case nil:
            break
        }
        let (client, needsStart): (WebSocketClient?, Bool) = state.withLock { s in
            guard s.phase == .joined, s.micMuted, s.localID.flatMap({ s.participants[$0] })?.role.canPublish == true else { return (nil, false) }
            s.micMuted = false
            s.publisher?.muted = false
            if let me = s.localID { s.participants[me]?.micMuted = false }
            return (s.client, s.publisher == nil)
        }
        guard let client else { return }
        if needsStart, let error = startPublishing(muted: false) {
            state.withLock { s in
                s.micMuted = true
                if let me = s.localID { s.participants[me]?.micMuted = true }
            }
            emit(.error(error))
            return
        }
        client.send(ClientMessage.unmuteMic.json)
    }

    public func enableWebcam() { setWebcam(true) }
    public func disableWebcam() { setWebcam(false) }

    /// Signals the webcam's state; the local participant's `streamEnabled`/`streamDisabled` (video)
    /// follows at once, as it does for a microphone switch (the server's echo is not repeated).
    private func setWebcam(_ on: Bool) {
        let (client, update): (WebSocketClient?, ParticipantListUpdate?) = state.withLock { s in
            guard s.phase == .joined, s.webcam != on, let localID = s.localID else { return (nil, nil) }
            s.webcam = on
            s.participants[localID]?.videoEnabled = on
            return (s.client, Self.update(s, updated: [localID]))
        }
        guard let client, let localID = update?.updated.first?.id else { return }
        client.send((on ? ClientMessage.enableStream(.video) : .disableStream(.video)).json)
        emit(on ? .streamEnabled(participantId: localID, kind: .video) : .streamDisabled(participantId: localID, kind: .video))
        if let update { emit(.participantsChanged(update)) }
    }

    /// The list update for participants whose state changed (ids still in the room).
    private static func update(_ s: State, added: [Participant] = [], removed: [Participant] = [], updated ids: [String] = []) -> ParticipantListUpdate {
        ParticipantListUpdate(
            added: added, removed: removed, updated: ids.compactMap { s.participants[$0] },
            participants: s.order.compactMap { s.participants[$0] })
    }

    /// The connection, while joined (not while reconnecting: an attempt's connection has not joined).
    private var joinedClient: WebSocketClient? {
        state.withLock { $0.phase == .joined ? $0.client : nil }
    }

    /// Sends a text or data message to one participant, or to everyone. Dropped while reconnecting.
    public func send(_ body: MessageBody, to participantId: String? = nil) {
        joinedClient?.send(ClientMessage.message(body, to: participantId).json)
    }

    /// Moderators: mutes another participant's microphone.
    public func muteParticipant(_ participantId: String) {
        joinedClient?.send(ClientMessage.muteParticipant(participantId).json)
    }

    /// Moderators: lifts a moderator's mute of another participant (its microphone is live again).
    public func unmuteParticipant(_ participantId: String) {
        joinedClient?.send(ClientMessage.unmuteParticipant(participantId).json)
    }

    /// Moderators: removes a participant from the room. It cannot rejoin for the server's rejoin ban
    /// (`serve --rejoin-ban`) unless with a token issued after the removal.
    public func removeParticipant(_ participantId: String) {
        joinedClient?.send(ClientMessage.removeParticipant(participantId).json)
    }

    /// Opens the chosen microphone and starts publishing. Returns the error instead of throwing, since
    /// callers report it as an event.
    /// - Parameter opened: The source to publish, already opened; nil opens the chosen microphone.
    private func startPublishing(muted: Bool, source opened: (any MicrophoneSource)? = nil) -> MeetingError? {
        let (choice, sender, media, signalURL) = state.withLock { s in (s.microphone, s.sender, s.media, s.signalURL ?? configuration.server) }
        guard let sender else { return nil }
        let source: any MicrophoneSource
        if let opened {
            source = opened
        } else {
            switch Self.openSource(choice, microphones: listMicrophones) {
            case .success(let opened): source = opened
            case .failure(let error): return error
            }
        }
        // MEDIA's host (several nodes), else the host of the signalling connection made last.
        let destination = media.flatMap { SocketAddress(host: $0.host ?? Self.host(of: signalURL), port: $0.rtpPort) }
        do {
            // The microphone's thread reaches the event queue only, never the meeting: it must not be
            // where the meeting is deinitialised (`leave()` there would wait for its own thread).
            let publisher = try MicrophonePublisher(
                source: source, sender: sender, destination: destination, muted: muted,
                onSpeakingWhileMuted: { [eventQueue] in eventQueue.emit(.speakingWhileMuted) },
                onFailure: { [eventQueue] error in eventQueue.emit(.error(error)) })
            try publisher.start()
            state.withLock { $0.publisher = publisher }
            return nil
        } catch {
            return MeetingError(code: .audioDeviceFailed, "\(error)")
        }
    }

    static func openSource(
        _ choice: MicrophoneChoice, microphones: () -> [AudioDeviceInfo]
    ) -> Result<any MicrophoneSource, MeetingError> {
        switch choice {
        case .none:
            return .failure(MeetingError(code: .noMicrophoneFound, "no microphone was chosen"))
        case .custom(let track):
            return .success(track.source)
        case .device(let name):
            guard let device = name ?? microphones().first?.deviceId else {
                return .failure(MeetingError(code: .noMicrophoneFound, "no microphone device found"))
            }
            do {
                return .success(try ALSAMicrophone(device: device))
            } catch {
                return .failure(MeetingError(code: .audioDeviceFailed, "\(error)"))
            }
        }
    }

    // MARK: Audio devices (device-switching guide semantics)

    /// The device listener's type: the selected microphone and every device, on the main actor.
    public typealias AudioDeviceChangeListener = @MainActor @Sendable (AudioDeviceInfo?, [AudioDeviceInfo]) -> Void

    /// The output first (`Speaker`), then every microphone (ALSA's capture devices, without its
    /// `null`, which records nothing).
    public func getMics() -> [AudioDeviceInfo] {
        [AudioDeviceInfo.speaker] + listMicrophones()
    }

    /// The microphone the meeting records from (or would, when it starts): the chosen device, the
    /// default one (the first microphone `getMics()` lists) for `.device(nil)`, an entry with id
    /// `custom` and the track's label for a custom track; nil without a microphone (`.none`, or no
    /// device at all). `changeMic` changes it.
    public func getSelectedAudioDevice() -> AudioDeviceInfo? {
        selectedMicrophone(among: listMicrophones())
    }

    /// The selected device of one kind: the output (`setAudioDevice`) or the microphone
    /// (`getSelectedAudioDevice()`).
    public func getSelectedAudioDevice(kind: AudioDeviceInfo.Kind) -> AudioDeviceInfo? {
        switch kind {
        case .speaker: state.withLock { $0.selectedOutput }
        case .microphone: getSelectedAudioDevice()
        }
    }

    private func selectedMicrophone(among microphones: [AudioDeviceInfo]) -> AudioDeviceInfo? {
        switch state.withLock({ $0.microphone }) {
        case .none: return nil
        case .custom(let track): return AudioDeviceInfo(deviceId: "custom", label: track.label, kind: .microphone)
        case .device(nil): return microphones.first
        case .device(let name?):
            return microphones.first { $0.deviceId == name } ?? AudioDeviceInfo(deviceId: name, label: name, kind: .microphone)
        }
    }

    /// Selects the audio output: one of the outputs `getMics()` lists (the `Speaker` entry).
    /// - Throws: `MeetingError` 3068 for a device that cannot play (a microphone), 3003 for an output
    ///   `getMics()` does not list; either is also an `error` event, and the selection stays as it was.
    public func setAudioDevice(_ device: AudioDeviceInfo) throws(MeetingError) {
        guard device.kind == .speaker else {
            throw reported(MeetingError(code: .actionNotSupported, "\(device.label) cannot play audio"))
        }
        guard device == .speaker else {
            throw reported(MeetingError(code: .invalidArgument, "no audio output \(device.deviceId): getMics() lists \(AudioDeviceInfo.speaker.deviceId)"))
        }
        state.withLock { $0.selectedOutput = device }
        notifyDeviceListener()
    }

    /// Registers the one device listener, called on the main actor (the main queue) with the selected
    /// microphone (`getSelectedAudioDevice()`) and `getMics()`: at once, when a device is plugged in or
    /// removed (the list is read every `devicePollInterval` seconds while a listener is set), after
    /// `changeMic` and `setAudioDevice`. Calls come one at a time, in order. A later call replaces it;
    /// nil removes it and stops the polling.
    public func setAudioDeviceChangeListener(_ listener: AudioDeviceChangeListener?) {
        let interval = configuration.devicePollInterval
        state.withLock { s in
            s.deviceListener = listener
            s.devicePoll?.cancel()
            s.devicePoll = nil
            guard listener != nil, interval > 0 else { return }
            // The timer holds the meeting weakly; `deinit` cancels it.
            let poll = DispatchSource.makeTimerSource(queue: deviceQueue)
            poll.schedule(deadline: .now() + interval, repeating: interval)
            poll.setEventHandler { [weak self] in self?.refreshDevices() }
            poll.resume()
            s.devicePoll = poll
        }
        if listener != nil { notifyDeviceListener() }
    }

    /// Re-reads the device list now and tells the listener if it changed (the listener's polling
    /// does this every `devicePollInterval`).
    public func refreshDevices() {
        let devices = getMics()
        let changed = state.withLock { s in
            defer { s.lastDevices = devices }
            return s.lastDevices != devices
        }
        if changed { notifyDeviceListener(devices: devices) }
    }

    private func notifyDeviceListener(devices: [AudioDeviceInfo]? = nil) {
        let devices = devices ?? getMics()
        let selected = selectedMicrophone(among: Array(devices.dropFirst()))
        let listener = state.withLock { s in
            s.lastDevices = devices
            return s.deviceListener
        }
        guard let listener else { return }
        // The main queue runs its blocks one at a time, in the order they were queued.
        DispatchQueue.main.async { MainActor.assumeIsolated { listener(selected, devices) } }
    }

    /// Switches to another microphone: `deviceId`, or with nil the next one after the current.
    /// A live microphone is stopped and restarted, so its audio stream is disabled then enabled.
    /// - Throws: `MeetingError` 3059 if there is no (such) microphone, 3002 if it cannot be opened; the
    ///   previous microphone then stays, and the error also goes to `onError`.
    public func changeMic(deviceId: String? = nil) async throws(MeetingError) {
        let mics = listMicrophones()
        let current: String? = state.withLock { s in
            if case .device(let name) = s.microphone { return name ?? mics.first?.deviceId }
            return nil
        }
        let target: String
        if let deviceId {
            guard mics.contains(where: { $0.deviceId == deviceId }) else {
                throw reported(MeetingError(code: .noMicrophoneFound, "no microphone device \(deviceId)"))
            }
            target = deviceId
        } else {
            guard !mics.isEmpty else { throw reported(MeetingError(code: .noMicrophoneFound, "no microphone device found")) }
            let index = current.flatMap { name in mics.firstIndex { $0.deviceId == name } }.map { ($0 + 1) % mics.count } ?? 0
            target = mics[index].deviceId
        }
        try switchMicrophone(to: .device(target))
    }

    /// Switches to a custom microphone track (see `changeMic(deviceId:)`).
    public func changeMic(customMicrophoneTrack track: CustomMicrophoneTrack) async throws(MeetingError) {
        try switchMicrophone(to: .custom(track))
    }

    private func switchMicrophone(to choice: MicrophoneChoice) throws(MeetingError) {
        // Open the new source first: on failure the old microphone keeps running.
        let source: any MicrophoneSource
        switch Self.openSource(choice, microphones: listMicrophones) {
        case .success(let opened): source = opened
        case .failure(let error): throw reported(error)
        }
        do {
            try source.start()
        } catch {
            throw reported(MeetingError(code: .audioDeviceFailed, "\(error)"))
        }
        let (old, live, localID, client, muted, previous) = state.withLock { s in
            let previous = s.microphone
            s.microphone = choice
            return (s.publisher, s.publisher != nil && s.phase == .joined, s.localID, s.client, s.micMuted, previous)
        }
        guard live, let old, let localID else {
            source.stop()
            notifyDeviceListener()
            return
        }
        old.stop()
        state.withLock { $0.publisher = nil }
        client?.send(ClientMessage.disableStream(.audio).json)
        emit(.streamDisabled(participantId: localID, kind: .audio))
        // The source opened above is published as it is (not closed and opened again).
        let failure = startPublishing(muted: muted, source: source)
        if failure != nil {
            // It failed after all: the previous microphone comes back.
            source.stop()
            state.withLock { $0.microphone = previous }
            if let error = startPublishing(muted: muted, source: old.source) { emit(.error(error)) }
        }
        client?.send(ClientMessage.enableStream(.audio).json)
        emit(.streamEnabled(participantId: localID, kind: .audio))
        if let failure { throw reported(failure) }
        notifyDeviceListener()
    }

    /// Sends an error to `onError` and returns it for throwing.
    private func reported(_ error: MeetingError) -> MeetingError {
        emit(.error(error))
        return error
    }

    // MARK: Cameras (signalled state only)

    /// The V4L2 devices, if any.
    public func getCameras() -> [CameraDevice] { DeviceCatalog.cameras() }

    /// Selects a webcam.
    /// - Throws: `MeetingError` 3010 "no webcam device found" for an unknown id.
    public func changeCam(deviceId: String) throws(MeetingError) {
        guard getCameras().contains(where: { $0.deviceId == deviceId }) else {
            throw reported(MeetingError(code: .noWebcamFound, "no webcam device found: \(deviceId)"))
        }
    }

    // MARK: Signalling (the WebSocket client's service thread)

    private func received(_ text: String, generation: Int) {
        arrivalProbe.withLock { $0 }?(text)
        let current = state.withLock { s in
            guard s.generation == generation else { return false }
            s.lastHeard = Self.now()
            return true
        }
        // A message of a connection given up (redirected, abandoned, left) changes nothing.
        guard current else { return }
        let message: ServerMessage
        do {
            message = try ServerMessage(json: text)
        } catch {
            emit(.error(MeetingError(error)))
            return
        }
        switch message {
        case .joined(let room):
            if state.withLock({ $0.phase }) == .reconnecting {
                rejoined(room, generation: generation)
            } else {
                joined(room)
            }
        case .participantJoined(let info):
            let (participant, update) = state.withLock { s in
                let participant = Participant(info, isLocal: false, listeners: eventQueue.participantListeners)
                if let ssrc = info.ssrc { s.owners[ssrc] = info.id }
                if s.participants[info.id] == nil { s.order.append(info.id) }
                s.participants[info.id] = participant
                return (participant, Self.update(s, added: [participant]))
            }
            emit(.participantJoined(participant))
            emit(.participantsChanged(update))
        case .participantLeft(let id, let reason):
            let (participant, isLocal, update) = state.withLock { s in
                s.order.removeAll { $0 == id }
                let participant = s.participants.removeValue(forKey: id)
                return (participant, s.localID == id, Self.update(s, removed: participant.map { [$0] } ?? []))
            }
            if let participant, !isLocal {
                emit(.participantLeft(participant, reason: reason))
                emit(.participantsChanged(update))
            }
        case .streamEnabled(let id, let kind), .streamDisabled(let id, let kind):
            let enabled: Bool
            if case .streamEnabled = message { enabled = true } else { enabled = false }
            let (isLocal, update) = state.withLock { s in
                if kind == .audio { s.participants[id]?.audioEnabled = enabled } else { s.participants[id]?.videoEnabled = enabled }
                return (s.localID == id, Self.update(s, updated: [id]))
            }
            // The local participant's own changes were raised when it made them.
            if !isLocal {
                emit(enabled ? .streamEnabled(participantId: id, kind: kind) : .streamDisabled(participantId: id, kind: kind))
                emit(.participantsChanged(update))
            }
        case .micMuted(let id, let muted, let by):
            let update = state.withLock { s in
                s.participants[id]?.micMuted = muted
                if id == s.localID {
                    // A moderator's mute applies to the local microphone too, and holds until a moderator lifts it.
                    s.micMutedBy = muted ? by : nil
                    s.micMuted = muted
                    s.publisher?.muted = muted
                }
                return Self.update(s, updated: [id])
            }
            emit(.micMuted(participantId: id, muted: muted, by: by))
            emit(.participantsChanged(update))
        case .speakerChanged(let id, _):
            state.withLock { $0.speaker = id }
            emit(.speakerChanged(participantId: id))
        case .audioLevels(_, let levels, _):
            emit(.audioLevels(levels))
        case .message(let body, let from, _):
            emit(.message(from: from, body: body))
        case .error(let error):
            // 4012: the server heard nothing for its client timeout; with reconnecting on, the close
            // that follows is a lost connection like any other.
            let ending: MeetingLeaveReason? =
                switch error.code {
                case .removed: .removed
                case .timedOut: configuration.reconnect ? nil : .timedOut
                case .roomClosed: .roomClosed
                default: nil
                }
            let (phase, retry) = state.withLock { s in
                (s.phase, s.reconnection?.isRetryable(error.code, now: Self.now()) ?? false)
            }
            if phase == .reconnecting {
                // The answer to a re-join: try again, or the end (a token error, a removal's ban, …).
                if retry {
                    abandon(generation, failure: MeetingError(error))
                } else {
                    giveUp(error: MeetingError(error), reason: ending ?? .connectionLost)
                }
                return
            }
            state.withLock { s in
                // The server closes the connection after these: the close says why it ended.
                if let ending, s.phase == .joined { s.ending = (ending, MeetingError(error)) }
            }
            if phase == .joining {
                finishJoin(.failure(MeetingError(error)))
            } else if ending == nil || phase != .joined {
                emit(.error(MeetingError(error)))
            }
        case .pong:
            break
        case .observing, .answer, .iceCandidate:
            // Answers to `observe` and `offer`, which a Meeting never sends (it publishes plain RTP).
            break
        case .redirect(let redirect):
            follow(redirect, generation: generation)
        }
    }

    private func joined(_ room: JoinedRoom) {
        let (sender, wantsMic, hasMicrophone, speaker, everyone): (RTPAudioSender?, Bool, Bool, String?, [Participant]) = state.withLock { s in
            guard s.phase == .joining else { return (nil, false, false, nil, []) }
            s.phase = .joined
            s.redirects = 0
            s.localID = room.participantID
            s.media = room.media
            s.speaker = room.speakerID
            for info in room.participants {
                s.order.append(info.id)
                s.participants[info.id] = Participant(info, isLocal: info.id == room.participantID, listeners: eventQueue.participantListeners)
                if let ssrc = info.ssrc { s.owners[ssrc] = info.id }
            }
            let (me, hasMicrophone) = Self.bindMedia(of: room, in: &s)
            return (s.sender, !(me?.micMuted ?? true), hasMicrophone, room.speakerID, s.order.compactMap { s.participants[$0] })
        }
        startPlayback()
        startTimers()
        publish(hasSender: sender != nil, wantsMic: wantsMic, hasMicrophone: hasMicrophone)
        emit(.meetingJoined(participants: everyone))
        // Those already in the room, as if they had joined now (seed 000 highlights each one it is told of).
        for participant in everyone where !participant.isLocal { emit(.participantJoined(participant)) }
        if let speaker { emit(.speakerChanged(participantId: speaker)) }
        finishJoin(.success(()))
    }

    /// Starts the microphone after joining: publishing when it is on, else muted (it runs anyway,
    /// sending nothing, so that the local engine can tell the user they speak while muted; a failure
    /// then is reported when they unmute).
    private func publish(hasSender: Bool, wantsMic: Bool, hasMicrophone: Bool) {
        if hasSender, wantsMic {
            if let error = startPublishing(muted: false) {
                emit(.error(error))
                muteMic()
            }
        } else if hasSender, hasMicrophone {
            _ = startPublishing(muted: true)
        }
    }

    /// The answer to a re-join: the new room replaces the old one. The differences are raised as
    /// they would have been while connected (`participantLeft` or `participantJoined`, each followed
    /// by `participantsChanged`; one `participantsChanged` for those whose state changed), then the
    /// speaker if it changed, then `reconnected`. The microphone is published again to the new
    /// MEDIA (new SSRC, maybe another host and port), muted if it was muted.
    private func rejoined(_ room: JoinedRoom, generation: Int) {
        let outcome: (events: [MeetingEvent], hasSender: Bool, wantsMic: Bool, hasMicrophone: Bool, everyone: [Participant])? =
            state.withLock { s in
                guard s.phase == .reconnecting, s.generation == generation else { return nil }
                s.phase = .joined
                s.reconnection = nil
                s.redirects = 0
                s.lastFailure = nil
                var events: [MeetingEvent] = []
                let fresh = room.participants.map {
                    Participant($0, isLocal: $0.id == room.participantID, listeners: eventQueue.participantListeners)
                }
                let freshIDs = Set(fresh.map(\.id))
                for id in s.order where !freshIDs.contains(id) {
                    s.order.removeAll { $0 == id }
                    guard let gone = s.participants.removeValue(forKey: id), id != s.localID else { continue }
                    events.append(.participantLeft(gone, reason: .left))
                    events.append(.participantsChanged(Self.update(s, removed: [gone])))
                }
                s.localID = room.participantID
                var changed: [String] = []
                for participant in fresh {
                    if let ssrc = participant.ssrc { s.owners[ssrc] = participant.id }
                    if let old = s.participants[participant.id] {
                        s.participants[participant.id] = participant
                        if old != participant { changed.append(participant.id) }
                    } else {
                        s.order.append(participant.id)
                        s.participants[participant.id] = participant
                        guard !participant.isLocal else { continue }
                        events.append(.participantJoined(participant))
                        events.append(.participantsChanged(Self.update(s, added: [participant])))
                    }
                }
                if !changed.isEmpty { events.append(.participantsChanged(Self.update(s, updated: changed))) }
                if s.speaker != room.speakerID { events.append(.speakerChanged(participantId: room.speakerID)) }
                s.speaker = room.speakerID
                s.media = room.media
                let (me, hasMicrophone) = Self.bindMedia(of: room, in: &s)
                return (events, s.sender != nil, !(me?.micMuted ?? true), hasMicrophone, s.order.compactMap { s.participants[$0] })
            }
        guard let outcome else { return }
        startTimers()
        publish(hasSender: outcome.hasSender, wantsMic: outcome.wantsMic, hasMicrophone: outcome.hasMicrophone)
        for event in outcome.events { emit(event) }
        emit(.reconnected(participants: outcome.everyone))
    }

    /// The connection closed (or went silent past the ping timeout). After the server's 4011, 4012 or
    /// 4013 the meeting was left for that reason (removed, timed out, room closed); otherwise the
    /// connection was lost: with `reconnect` on the meeting reconnects, else it ends (3001, also an
    /// error). During a reconnect attempt the attempt failed; while joining, the join did.
    private func connectionClosed(code: UInt16?, reason: String, generation: Int) {
        enum Action { case ignore, failJoin, abandon, end(MeetingLeaveReason, MeetingError), lost, reconnect }
        let action: Action = state.withLock { s in
            guard s.generation == generation else { return .ignore }
            switch s.phase {
            case .joining: return .failJoin
            case .reconnecting: return .abandon
            case .joined:
                if let ending = s.ending {
                    s.phase = .left
                    return .end(ending.reason, ending.error)
                }
                guard configuration.reconnect else {
                    s.phase = .left
                    return .lost
                }
                return .reconnect
            case .idle, .left: return .ignore
            }
        }
        switch action {
        case .ignore:
            return
        case .failJoin:
            finishJoin(.failure(MeetingError(code: .network, "connection closed by the server \(reason)")))
        case .abandon:
            abandon(generation, failure: MeetingError(code: .network, "connection closed\(reason.isEmpty ? "" : ": " + reason)"))
        case .end(let reason, let error):
            shutDown()
            emit(.meetingLeft(reason: reason, error: error))
            eventQueue.finish()
        case .lost:
            shutDown()
            let error = MeetingError(code: .network, "connection to \(configuration.server) lost\(reason.isEmpty ? "" : ": " + reason)")
            emit(.error(error))
            emit(.meetingLeft(reason: .connectionLost, error: error))
            eventQueue.finish()
        case .reconnect:
            startReconnecting(from: generation)
        }
    }

    // MARK: Reconnecting and redirects

    /// Monotonic seconds.
    private static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

    /// The connection of `generation` was lost while joined (or the server redirected the joined
    /// meeting): stops the pings and the microphone, raises `reconnecting`, and starts the attempts
    /// (to `redirect` first when given) and the `reconnectTimeout` deadline. The participants, the
    /// socket, the packet counter and the playback stay.
    private func startReconnecting(from generation: Int, redirect: String? = nil) {
        let taken: (client: WebSocketClient?, publisher: MicrophonePublisher?, generation: Int, episode: Int)? = state.withLock { s in
            guard s.phase == .joined, s.generation == generation else { return nil }
            s.phase = .reconnecting
            s.generation += 1
            s.episode += 1
            s.ending = nil
            s.lastFailure = nil
            s.redirects = redirect == nil ? 0 : 1
            s.reconnection = Reconnection(servers: servers, current: s.serverIndex, start: Self.now(), timeout: configuration.reconnectTimeout)
            s.pings?.cancel()  // never waits
            s.pings = nil
            defer {
                s.client = nil
                s.publisher = nil
                s.sender = nil
            }
            return (s.client, s.publisher, s.generation, s.episode)
        }
        guard let taken else { return }
        taken.publisher?.stop()
        // Only requested when this runs on the connection's own thread (its close handler).
        taken.client?.close()
        emit(.reconnecting)
        let episode = taken.episode
        DispatchQueue.global().asyncAfter(deadline: .now() + configuration.reconnectTimeout) { [weak self] in
            self?.giveUp(episode: episode)
        }
        if let redirect {
            let generation = taken.generation
            connectQueue.async { [weak self] in self?.attempt(redirect, generation: generation, serverIndex: nil) }
        } else {
            scheduleAttempt()
        }
    }

    /// Schedules the next attempt from the server list, after its backoff; past the deadline, gives up.
    private func scheduleAttempt() {
        enum Next { case none, giveUp, attempt(String, Int, Double, Int) }
        let next: Next = state.withLock { s in
            guard s.phase == .reconnecting, var plan = s.reconnection else { return .none }
            defer { s.reconnection = plan }
            s.redirects = 0
            guard let attempt = plan.nextAttempt(now: Self.now()) else { return .giveUp }
            return .attempt(signalURL(attempt.server), attempt.index, attempt.delay, s.generation)
        }
        switch next {
        case .none:
            return
        case .giveUp:
            giveUp()
        case .attempt(let url, let index, let delay, let generation):
            connectQueue.asyncAfter(deadline: .now() + delay) { [weak self] in
                self?.attempt(url, generation: generation, serverIndex: index)
            }
        }
    }

    /// One attempt (on `connectQueue`): connect to `url` and send `join`. While reconnecting, a failure
    /// or no answer within the attempt's timeout gives it up for the next; while joining (a redirect
    /// being followed), a failure fails the join.
    private func attempt(_ url: String, generation: Int, serverIndex: Int?) {
        let (phase, timeout): (Phase?, Double) = state.withLock { s in
            guard s.generation == generation else { return (nil, 0) }
            return (s.phase, s.reconnection?.attemptTimeout(now: Self.now()) ?? configuration.joinTimeout)
        }
        guard let phase, phase == .joining || phase == .reconnecting else { return }
        if let error = open(url, generation: generation, timeout: timeout, serverIndex: serverIndex) {
            if phase == .joining { finishJoin(.failure(error)) } else { abandon(generation, failure: error) }
            return
        }
        guard phase == .reconnecting else { return }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout) { [weak self] in
            self?.abandon(generation, failure: MeetingError(code: .network, "no answer from \(Self.server(of: url)) in \(timeout) s"))
        }
    }

    /// Gives up the reconnect attempt of `generation` (failed, refused, closed, or unanswered) and
    /// schedules the next. Does nothing once that attempt is no longer the current one.
    private func abandon(_ generation: Int, failure: MeetingError) {
        let taken: WebSocketClient?? = state.withLock { s in
            guard s.phase == .reconnecting, s.generation == generation else { return nil }
            s.generation += 1
            s.lastFailure = failure
            defer { s.client = nil }
            return .some(s.client)
        }
        guard let taken else { return }
        taken?.close()
        scheduleAttempt()
    }

    /// A `redirect`: the room lives on another node. Joining or reconnecting: connect to its URL and
    /// join again (at most `Reconnection.maximumRedirects` in a row: then joining fails, and a
    /// reconnect attempt counts as failed). Joined: reconnect, to its URL first.
    private func follow(_ redirect: Redirect, generation: Int) {
        enum Step { case ignore, follow(Int), tooMany(Phase), whileJoined }
        let (step, old): (Step, WebSocketClient?) = state.withLock { s in
            guard s.generation == generation else { return (.ignore, nil) }
            switch s.phase {
            case .joining, .reconnecting:
                s.redirects += 1
                s.generation += 1
                defer { s.client = nil }
                if s.redirects > Reconnection.maximumRedirects { return (.tooMany(s.phase), s.client) }
                return (.follow(s.generation), s.client)
            case .joined:
                return (.whileJoined, nil)
            case .idle, .left:
                return (.ignore, nil)
            }
        }
        // The server closes it too; on this, its own thread, the close is only requested.
        old?.close()
        switch step {
        case .ignore:
            return
        case .whileJoined:
            startReconnecting(from: generation, redirect: redirect.url)
        case .follow(let next):
            connectQueue.async { [weak self] in self?.attempt(redirect.url, generation: next, serverIndex: nil) }
        case .tooMany(let phase):
            let error = MeetingError(
                code: .network,
                "too many redirects: more than \(Reconnection.maximumRedirects) in a row for room \(configuration.roomId), the last to \(redirect.url) (node \(redirect.nodeId))")
            if phase == .joining {
                finishJoin(.failure(error))
            } else {
                state.withLock { $0.lastFailure = error }
                scheduleAttempt()
            }
        }
    }

    /// Ends a reconnecting meeting: its deadline passed (`episode`: the reconnecting episode whose
    /// timer this is), no attempt fits before it any more, or a re-join was refused for good (`error`).
    /// `connectionLost` is also raised as an `error` event first (3001 unless the server's error).
    private func giveUp(episode: Int? = nil, error given: MeetingError? = nil, reason: MeetingLeaveReason = .connectionLost) {
        let error: MeetingError? = state.withLock { s in
            guard s.phase == .reconnecting, episode.map({ $0 == s.episode }) ?? true else { return nil }
            s.phase = .left
            s.generation += 1
            let last = s.lastFailure.map { " (last: \($0.message))" } ?? ""
            return given ?? MeetingError(
                code: .network,
                "connection to \(configuration.server) lost; not reconnected within \(configuration.reconnectTimeout) s\(last)")
        }
        guard let error else { return }
        shutDown()
        if reason == .connectionLost { emit(.error(error)) }
        emit(.meetingLeft(reason: reason, error: error))
        eventQueue.finish()
    }

    /// A ping; or, after `pingTimeout` seconds without any message from the server, the connection
    /// counts as lost.
    private func pingTick(generation: Int) {
        let (client, silence): (WebSocketClient?, Double) = state.withLock { s in
            (s.generation == generation && s.phase == .joined ? s.client : nil, Self.now() - s.lastHeard)
        }
        guard let client else { return }
        if configuration.pingTimeout > 0, silence > max(configuration.pingTimeout, 2 * configuration.pingInterval) {
            connectionClosed(code: nil, reason: "no message from the server for \(Int(silence)) s", generation: generation)
            return
        }
        client.send(ClientMessage.ping.json)
    }

    /// Starts the keep-alive pings (a timer, which also watches the ping timeout) and, once per
    /// socket, the count of forwarded audio (driven by the UDP socket's readiness). Neither has a
    /// thread of its own or holds the meeting.
    private func startTimers() {
        let interval = configuration.pingInterval
        state.withLock { s in
            guard s.phase == .joined, s.client != nil else { return }
            let generation = s.generation
            let pings = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "activespeaker.meeting.pings"))
            pings.schedule(deadline: .now() + interval, repeating: interval)
            pings.setEventHandler { [weak self] in self?.pingTick(generation: generation) }
            pings.resume()
            s.pings?.cancel()
            s.pings = pings
            if s.packetCounter == nil, let socket = s.socket { s.packetCounter = ForwardedPacketCounter(socket: socket, player: s.player) }
        }
    }

    /// Opens the playback device of `configuration.speaker`; a device that cannot be opened is an error
    /// event (3002), and the meeting goes on without playback.
    private func startPlayback() {
        guard case .device(let name, let file) = configuration.speaker else { return }
        do {
            let player = try MeetingPlayer(device: name, alsaConfigurationFile: file)
            state.withLock { $0.player = player }
            let queue = eventQueue
            player.start { error in queue.emit(.error(MeetingError(code: .audioDeviceFailed, "speaker alsa:\(name) failed: \(error)"))) }
        } catch {
            emit(.error(MeetingError(code: .audioDeviceFailed, "speaker alsa:\(name) cannot be opened: \(error)")))
        }
    }

    /// Queues `event` for the stream and the listeners (see `MeetingEventQueue`).
    private func emit(_ event: MeetingEvent) {
        eventQueue.emit(event)
    }

    // MARK: URLs

    /// After `joined` (first or again): the microphone's mute state and the RTP sender for the room's
    /// MEDIA (none without one); returns the local participant and whether a microphone is configured.
    private static func bindMedia(of room: JoinedRoom, in s: inout State) -> (me: Participant?, hasMicrophone: Bool) {
        let me = s.participants[room.participantID]
        s.micMuted = me?.micMuted ?? true
        s.sender = nil
        if let media = room.media, let socket = s.socket {
            s.sender = try? RTPAudioSender(socket: socket, ssrc: media.ssrc, payloadType: UInt8(media.payloadType), audioLevelID: media.audioLevelId)
        }
        let hasMicrophone: Bool
        switch s.microphone {
        case .none: hasMicrophone = false
        case .device, .custom: hasMicrophone = true
        }
        return (me, hasMicrophone)
    }

    static func isIPv6(_ url: String) -> Bool { url.contains("://[") }

    /// `ws://HOST:PORT` of a signalling URL (`ws://HOST:PORT/v1/signal?room=…`).
    static func server(of url: String) -> String {
        guard let scheme = url.range(of: "://"), let slash = url[scheme.upperBound...].firstIndex(of: "/") else { return url }
        return String(url[..<slash])
    }

    /// The host of `ws://HOST:PORT/…` (or `wss://`), without brackets.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if rest.hasPrefix("["), let close = rest.firstIndex(of: "]") { return String(rest[rest.index(after: rest.startIndex)..<close]) }
        return String(rest.prefix { $0 != ":" && $0 != "/" })
    }
}

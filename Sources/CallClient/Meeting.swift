import CallProtocol
import CallTransport
import Foundation
import SpeakerIO
import SpeakerRTP
import Synchronization

/// A meeting: join a room, follow its participants and its dominant speaker, publish a microphone.
///
/// Events leave one serial queue in one order to `events` (an `AsyncStream`), the per-topic sequences
/// and the `MeetingEventListener`s (held weakly, called on the main actor); nothing follows
/// `meetingLeft`. All methods are thread-safe. A lost connection is re-established by itself
/// (`reconnecting`, then `reconnected`; docs/call.md, "Reconnecting"); a server's `redirect` is followed.
///
/// The rules live in `MeetingStateMachine`, a value; this class is its shell: it owns the sockets,
/// timers, devices and threads, feeds the machine what happens and carries out the effects it returns.
/// Its threads and queues hold it only weakly (the signalling handlers, while they run) or not at all
/// (the microphone, the packet counter, the event queue), so dropping the last reference leaves the
/// room at once (`deinit` calls `leave()`).
public final class Meeting: @unchecked Sendable {
    // @unchecked Sendable: mutable state lives in `core` (a Mutex); the event queue delivers the events.

    /// How this meeting joins (as it was given to `init`).
    public let configuration: MeetingConfiguration
    let eventQueue: MeetingEventQueue

    /// The machine and what carries out its effects, under one lock: an effect that installs or takes a
    /// connection does so in the same critical section as the decision.
    struct Core {
        var machine: MeetingStateMachine
        /// The meeting's signalling connection, once the machine adopted it.
        var client: WebSocketClient?
        /// Connections that opened and wait for the machine's word, with the UDP socket made for them.
        var pending: [Int: (client: WebSocketClient, socket: UDPSocket?)] = [:]
        /// One socket serves every connection, unless a server of the other address family comes next.
        var socket: UDPSocket?
        var socketIsIPv6 = false
        var sender: RTPAudioSender?
        var publisher: MicrophonePublisher?
        /// Counts forwarded RTP from joining on; kept after leaving, for `receivedPackets`.
        var packetCounter: ForwardedPacketCounter?
        /// Counters of sockets replaced while reconnecting (another address family); still counted.
        var retiredCounters: [ForwardedPacketCounter] = []
        var player: MeetingPlayer?
        var pings: (any DispatchSourceTimer)?
        var joinWaiter: CheckedContinuation<MeetingError?, Never>?
        /// `setMicMuted` calls waiting for the server, by number.
        var muteWaiters: [Int: CheckedContinuation<Result<Participant, MeetingError>, Never>] = [:]
        var lastMuteWaiter = 0
        var devices = DeviceState()
    }

    let core: Mutex<Core>
    let deviceQueue = DispatchQueue(label: "activespeaker.meeting.devices")
    /// Opens connections one at a time (each blocks for at most its connect timeout).
    private let connectQueue = DispatchQueue(label: "activespeaker.meeting.connect")
    /// The microphones there are now (ALSA's, or a test's).
    let listMicrophones: @Sendable () -> [AudioDeviceInfo]
    /// Tests: called with each signalling message as it arrives, on the WebSocket's thread, before it is
    /// handled (how long an event takes from the socket to a listener).
    let arrivalProbe = Mutex<(@Sendable (String) -> Void)?>(nil)

    /// A meeting that joins as `configuration` says when `join()` is called; its microphones are ALSA's.
    public convenience init(configuration: MeetingConfiguration) {
        self.init(configuration: configuration, microphones: DeviceCatalog.microphones)
    }

    /// A meeting whose microphones are listed by `microphones` instead of alsa-lib (tests).
    init(configuration: MeetingConfiguration, microphones: @escaping @Sendable () -> [AudioDeviceInfo]) {
        self.configuration = configuration
        listMicrophones = microphones
        eventQueue = MeetingEventQueue(capacity: max(1, configuration.eventsBufferSize))
        core = Mutex(Core(machine: MeetingStateMachine(configuration: configuration, participantListeners: eventQueue.participantListeners)))
    }

    /// Leaves the room. Runs where the last reference goes: an app thread, the event queue, or the
    /// signalling connection's service thread (its handlers hold the meeting while they run), where it
    /// waits for nothing that waits for it: `leave()` stops the microphone thread (which holds no
    /// reference to the meeting) and only asks the connection to close (it does not join its thread).
    deinit {
        core.withLock { $0.devices.poll?.cancel() }  // never waits
        leave()
    }

    // MARK: State

    /// This client's participant, once joined.
    public var localParticipant: Participant? { core.withLock { $0.machine.localParticipant } }

    /// Everyone in the room, in joining order, the local participant included.
    public var participants: [Participant] { core.withLock { $0.machine.everyone } }

    /// The dominant speaker now; nil when nobody speaks.
    public var speakerId: String? { core.withLock { $0.machine.speaker } }

    /// Forwarded RTP packets received so far, per participant id (participants who left included;
    /// `ssrc-N` for a source the server never announced).
    public var receivedPackets: [String: Int] {
        core.withLock { c in
            var counts = c.packetCounter?.bySSRC ?? [:]
            for retired in c.retiredCounters { counts.merge(retired.bySSRC, uniquingKeysWith: +) }
            return Dictionary(counts.map { (c.machine.owners[$0.key] ?? "ssrc-\($0.key)", $0.value) }, uniquingKeysWith: +)
        }
    }

    // MARK: Calls

    /// Connects (to `server`, else to the first of `fallbackServers` that answers; following the
    /// server's redirects, at most 5 in a row), joins the room and starts the microphone (if on).
    /// - Throws: `MeetingError`: see `joinFailure` for invalid token, expired, room not found, room full
    ///   and network; 3059 before connecting when the microphone is the default one and on, and there is
    ///   none (`MeetingConfiguration.microphone`).
    public func join() async throws(MeetingError) {
        let error = await withCheckedContinuation { (waiter: CheckedContinuation<MeetingError?, Never>) in
            let fresh = core.withLock { c in
                guard c.machine.phase == .idle else { return false }
                c.joinWaiter = waiter
                return true
            }
            if fresh { handle(.join(microphoneListed: !listMicrophones().isEmpty)) } else { waiter.resume(returning: MeetingError(code: .invalidArgument, "join() was already called")) }
        }
        if let error { throw error }
    }

    /// Leaves the room and stops the microphone. Idempotent.
    public func leave() { handle(.leave) }

    /// Mutes the microphone. While reconnecting too: the rejoin is then muted. When it returns,
    /// `localParticipant.micMuted` is true; the others see it when the server's `mic-muted` reaches them.
    public func muteMic() { handle(.mute) }

    /// Unmutes the microphone; when it returns, `localParticipant.micMuted` is false. Unless a moderator
    /// muted it: then an `error` event (4006) says so and the microphone stays muted until a moderator lifts
    /// the mute. A subscriber cannot publish: an `error` event (4006). A microphone that cannot be opened, or
    /// none (`.none`), gives an `error` event (3002, 3059) and stays muted; the server is not told.
    public func unmuteMic() { handle(.unmute) }

    /// Mutes or unmutes the microphone and returns once the server has confirmed it: the local
    /// participant as the server then knows it (`micMuted` as asked). The `async` form of
    /// `muteMic()`/`unmuteMic()`.
    /// - Throws: `MeetingError` 4006 for a subscriber or a microphone a moderator muted, 3002/3059 for a
    ///   microphone that cannot be opened (these are `error` events too), 3003 when not joined, 3001 when the
    ///   server does not confirm within `joinTimeout` seconds or the meeting ends first.
    @discardableResult
    public func setMicMuted(_ muted: Bool) async throws(MeetingError) -> Participant {
        let result = await withCheckedContinuation { (waiter: CheckedContinuation<Result<Participant, MeetingError>, Never>) in
            let id = core.withLock { c in
                c.lastMuteWaiter += 1
                c.muteWaiters[c.lastMuteWaiter] = waiter
                return c.lastMuteWaiter
            }
            handle(.setMicMuted(muted, waiter: id))
        }
        return try result.get()
    }

    /// Turns the signalled video on (see `disableWebcam()`).
    public func enableWebcam() { handle(.setWebcam(true)) }
    /// Turns the signalled video off; the local participant's `streamDisabled` (video) follows at once.
    public func disableWebcam() { handle(.setWebcam(false)) }

    /// Sends a text or data message to one participant, or to everyone. Dropped while reconnecting.
    public func send(_ body: MessageBody, to participantId: String? = nil) {
        handle(.sendWhileJoined(.message(body, to: participantId)))
    }

    /// Moderators: mutes another participant's microphone.
    public func muteParticipant(_ participantId: String) { handle(.sendWhileJoined(.muteParticipant(participantId))) }

    /// Moderators: lifts a moderator's mute of another participant (its microphone is live again).
    public func unmuteParticipant(_ participantId: String) { handle(.sendWhileJoined(.unmuteParticipant(participantId))) }

    /// Moderators: removes a participant from the room. It cannot rejoin for the server's rejoin ban
    /// (`serve --rejoin-ban`) unless with a token issued after the removal.
    public func removeParticipant(_ participantId: String) { handle(.sendWhileJoined(.removeParticipant(participantId))) }

    // MARK: The effect executor

    /// Gives `input` to the machine and carries out its effects in order: the bookkeeping of each
    /// (which connection, publisher or timer it installs or takes) under the lock, its I/O after.
    func handle(_ input: MeetingStateMachine.Input) {
        let steps = core.withLock { c in
            c.machine.handle(input, now: Self.now()).map { prepare($0, in: &c) }
        }
        for step in steps { step() }
    }

    /// Under the lock: `effect`'s bookkeeping; returns its I/O, which captures what it needs (never the
    /// meeting strongly: this runs in `deinit` too).
    private func prepare(_ effect: MeetingStateMachine.Effect, in c: inout Core) -> () -> Void {
        switch effect {
        case .connect(let url, let generation, let timeout, let serverIndex):
            return { [connectQueue] in
                connectQueue.async { [weak self] in self?.connect(url, generation: generation, timeout: timeout, serverIndex: serverIndex) }
            }
        case .adoptConnection(let generation):
            guard let opened = c.pending.removeValue(forKey: generation) else { return {} }
            if let fresh = opened.socket {
                if let counter = c.packetCounter {
                    counter.stop()
                    c.retiredCounters.append(counter)
                    c.packetCounter = nil
                }
                c.socket = fresh
                c.socketIsIPv6 = MeetingStateMachine.isIPv6(c.machine.signalURL ?? "")
            }
            c.client = opened.client
            return {}
        case .discardConnection(let generation):
            let opened = c.pending.removeValue(forKey: generation)
            return { opened?.client.close() }
        case .closeConnection:
            defer { c.client = nil }
            return { [client = c.client] in client?.close() }
        case .send(let message):
            return { [client = c.client] in client?.send(message.json) }
        case .emit(let event):
            return { [eventQueue] in eventQueue.emit(event) }
        case .finishJoin(let error):
            defer { c.joinWaiter = nil }
            return { [waiter = c.joinWaiter] in waiter?.resume(returning: error) }
        case .answerMute(let id, let result):
            let waiter = c.muteWaiters.removeValue(forKey: id)
            return { waiter?.resume(returning: result) }
        case .finishEvents:
            return { [eventQueue] in eventQueue.finish() }
        case .bindMedia(let media):
            c.sender = nil
            if let media, let socket = c.socket {
                c.sender = try? RTPAudioSender(socket: socket, ssrc: media.ssrc, payloadType: UInt8(media.payloadType), audioLevelID: media.audioLevelId)
            }
            return {}
        case .startPublishing(let muted, let purpose):
            return { [weak self] in
                guard let self else { return }
                handle(.published(purpose, failure: startPublishing(muted: muted)))
            }
        case .stopPublishing:
            defer { c.publisher = nil }
            return { [publisher = c.publisher] in publisher?.stop() }
        case .setPublisherMuted(let muted):
            c.publisher?.muted = muted
            return {}
        case .startPings(let generation):
            startPings(generation: generation, in: &c)
            return {}
        case .stopPings:
            c.pings?.cancel()  // never waits
            c.pings = nil
            return {}
        case .startPlayback:
            return { [weak self, eventQueue] in
                if let error = self?.startPlayback() { eventQueue.emit(.error(error)) }
            }
        case .shutDown:
            let taken = (c.client, c.publisher, c.packetCounter, c.player, c.pending.values.map(\.client))
            (c.client, c.publisher, c.player, c.pending) = (nil, nil, nil, [:])
            c.pings?.cancel()
            c.pings = nil
            return {
                taken.2?.stop()
                taken.3?.stop()
                taken.1?.stop()
                taken.0?.close()
                for client in taken.4 { client.close() }
            }
        case .after(let seconds, let input):
            return { DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [weak self] in self?.handle(input) } }
        }
    }

    // MARK: Connections (the connect queue, then the WebSocket client's service thread)

    /// Opens the signalling connection of `generation` (and a UDP socket of its address family when the
    /// meeting's is of the other, or none yet: its port is announced in `join`), unless that attempt was
    /// given up meanwhile; tells the machine how it went.
    private func connect(_ url: String, generation: Int, timeout: Double, serverIndex: Int?) {
        let (current, socketFits) = core.withLock { c in
            (c.machine.generation == generation, c.socket != nil && c.socketIsIPv6 == MeetingStateMachine.isIPv6(url))
        }
        guard current else { return }
        let client: WebSocketClient
        do throws(TransportError) {
            client = try WebSocketClient(url: url, certificateAuthorityFile: configuration.certificateAuthorityFile)
            client.setHandler(
                message: { [weak self] text in self?.received(text, generation: generation) },
                closed: { [weak self] _, reason in self?.handle(.closed(generation: generation, reason: reason)) })
            try client.connect(timeout: timeout)
        } catch {
            let code: MeetingError.Code = error.operation == .parse ? .invalidArgument : .network
            let failure = MeetingError(code: code, "cannot connect to \(MeetingStateMachine.server(of: url)): \(error)")
            return handle(.connectFailed(generation: generation, serverIndex: serverIndex, failure))
        }
        var fresh: UDPSocket?
        if !socketFits {
            do {
                fresh = try UDPSocket(address: MeetingStateMachine.isIPv6(url) ? "[::]:0" : "0.0.0.0:0")
            } catch {
                client.close()
                let failure = MeetingError(code: .network, "cannot open a UDP socket: \(error)")
                return handle(.connectFailed(generation: generation, serverIndex: serverIndex, failure))
            }
        }
        let port = core.withLock { c in
            c.pending[generation] = (client, fresh)
            return (fresh ?? c.socket)?.port
        }
        handle(.connected(generation: generation, url: url, serverIndex: serverIndex, rtpPort: port))
    }

    private func received(_ text: String, generation: Int) {
        arrivalProbe.withLock { $0 }?(text)
        do {
            handle(.received(try ServerMessage(json: text), generation: generation))
        } catch {
            handle(.undecodable(MeetingError(error), generation: generation))
        }
    }

    // MARK: Media

    /// Opens the chosen microphone (or publishes `opened`) and starts publishing to the room's MEDIA
    /// (its host, else the host of the signalling connection made last). Returns the error instead of
    /// throwing, since callers report it as an event. Without an RTP sender (no MEDIA) it does nothing.
    func startPublishing(muted: Bool, source opened: (any MicrophoneSource)? = nil) -> MeetingError? {
        let (choice, sender, media, signalURL) = core.withLock { c in
            (c.machine.microphone, c.sender, c.machine.media, c.machine.signalURL ?? configuration.server)
        }
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
        let destination = media.flatMap { SocketAddress(host: $0.host ?? MeetingStateMachine.host(of: signalURL), port: $0.rtpPort) }
        do {
            // The microphone's thread reaches the event queue only, never the meeting: it must not be
            // where the meeting is deinitialised (`leave()` there would wait for its own thread).
            let publisher = try MicrophonePublisher(
                source: source, sender: sender, destination: destination, muted: muted,
                onSpeakingWhileMuted: { [eventQueue] in eventQueue.emit(.speakingWhileMuted) },
                onFailure: { [eventQueue] error in eventQueue.emit(.error(error)) })
            try publisher.start()
            // Left or lost meanwhile: the machine no longer wants it.
            let kept = core.withLock { c in
                guard c.machine.publishing, c.machine.phase == .joined || c.machine.phase == .joining else { return false }
                c.publisher = publisher
                return true
            }
            if !kept { publisher.stop() }
            return nil
        } catch {
            return MeetingError(code: .audioDeviceFailed, "\(error)")
        }
    }

    /// The keep-alive pings of `generation` (a timer, which also watches the ping timeout) and, once
    /// per socket, the count of forwarded audio (driven by the UDP socket's readiness). Neither has a
    /// thread of its own or holds the meeting.
    private func startPings(generation: Int, in c: inout Core) {
        let interval = configuration.pingInterval
        let pings = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "activespeaker.meeting.pings"))
        pings.schedule(deadline: .now() + interval, repeating: interval)
        pings.setEventHandler { [weak self] in self?.handle(.pingTick(generation: generation)) }
        pings.resume()
        c.pings?.cancel()
        c.pings = pings
        if c.packetCounter == nil, let socket = c.socket { c.packetCounter = ForwardedPacketCounter(socket: socket, player: c.player) }
    }

    /// Opens the playback device of `output` (by default `configuration.speaker`) and plays what the
    /// meeting hears there. Returns the error of a device that cannot be opened (3002); the meeting goes
    /// on without playback.
    func startPlayback(_ output: SpeakerChoice? = nil) -> MeetingError? {
        guard case .device(let name, let file) = output ?? configuration.speaker else { return nil }
        do {
            let player = try MeetingPlayer(device: name, alsaConfigurationFile: file)
            let counter = core.withLock { c in
                c.player = player
                return c.packetCounter
            }
            counter?.play(to: player)
            player.start { [eventQueue] error in eventQueue.emit(.error(MeetingError(code: .audioDeviceFailed, "speaker alsa:\(name) failed: \(error)"))) }
            return nil
        } catch {
            return MeetingError(code: .audioDeviceFailed, "speaker alsa:\(name) cannot be opened: \(error)")
        }
    }

    /// Monotonic seconds.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

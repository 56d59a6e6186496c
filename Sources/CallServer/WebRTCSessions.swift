import CallProtocol
internal import CallTransport
internal import CallWebRTC
import Dispatch
import SpeakerRTP
import Synchronization

/// What `WebRTCSessions` reports back to the server, which hands it to the registry.
enum WebRTCReport: Sendable {
    /// The offer of `connection` was answered; the relay's socket is at `endpoint`, and takes the mix with
    /// `mixSSRC` only.
    case answered(ConnectionID, answer: String, endpoint: MediaEndpoint, mixSSRC: SSRC)
    /// The offer was refused: a malformed SDP or no Opus audio (4007), or the pipeline failed (5000).
    case refused(ConnectionID, CallError)
    /// A local ICE candidate of the connection's session.
    case localCandidate(ConnectionID, ICECandidate)
    /// A browser's candidate that the session refused (4007).
    case candidateRefused(ConnectionID, CallError)
    /// The peer connection came up (ICE and DTLS) or went down.
    case state(ConnectionID, room: CallRoomID, participant: ParticipantID, connected: Bool)
}

/// The browsers' WebRTC sessions of a room server, one per signalling connection that sent `offer`
/// (docs/call.md, "Browsers").
///
/// Each connection's commands run on a serial queue of its own, in the order the registry decided them:
/// a session is opened (and its offer answered, which waits for webrtcbin) before the browser's
/// candidates are added to it, and closed after. The connections' queues share one concurrent pool
/// (`activespeaker-webrtc`), so one connection's negotiation never delays another's (issue 29: six
/// join/offer/close cycles in one room delayed a browser's answer in another by 8–15 s). A close
/// cancels the connection's opens still waiting for their turn: work for a connection that has gone
/// is not done. Each participant id of a room (what a token names) has at most
/// `maximumOffersInFlight` opens queued or negotiating, across its connections; another offer is
/// refused at once (4015), so one token cannot pile work up. Closing on the connection's queue also
/// keeps `WebRTCPeer.close()` off webrtcbin's callback threads. Results go to `report` from those
/// queues (answers, refusals) or from webrtcbin's threads (candidates, states).
final class WebRTCSessions: Sendable {
    private let configuration: WebRTCConfiguration
    /// Where relays bind (numeric) and where the media loop's RTP socket is reached from there.
    private let relayHost: String
    private let mediaLoop: SocketAddress
    private let report: @Sendable (WebRTCReport) -> Void
    private let pool = DispatchQueue(label: "activespeaker-webrtc", attributes: .concurrent)
    /// Every command queued and not yet done.
    private let running = DispatchGroup()
    private let entries = Mutex<[ConnectionID: Entry]>([:])
    private let stopped = Atomic<Bool>(false)
    /// Opens queued or negotiating, per participant of a room.
    private let inFlight = Mutex<[OfferKey: Int]>([:])

    /// The opens one participant id of a room may have queued or negotiating at once.
    static let maximumOffersInFlight = 2

    /// Whose offers: a participant id in a room, what a token names.
    private struct OfferKey: Hashable {
        let room: CallRoomID
        let participant: ParticipantID
    }

    /// A connection with commands queued or a session open.
    private struct Entry {
        let queue: DispatchQueue
        /// Commands queued and not yet done.
        var pending = 0
        /// Closes queued and not yet done: an open before them has nothing left to do.
        var closes = 0
        var relay: WebRTCRelay?
    }

    /// For tests: called with the room and participant at the start of each open, on the connection's
    /// queue (blocking there holds that connection's work only).
    let openGate = Mutex<(@Sendable (CallRoomID, ParticipantID) -> Void)?>(nil)
    /// Opens carried out (a peer built) and cancelled (closed or stopped before their turn).
    let outcomes = Mutex<(built: Int, cancelled: Int)>((0, 0))

    /// - Parameters:
    ///   - rtp: The media loop's bound RTP address. Relays bind on its host, or on the loopback of its
    ///     family when it is bound to every address.
    init(configuration: WebRTCConfiguration, rtp: SocketAddress, report: @escaping @Sendable (WebRTCReport) -> Void) {
        self.configuration = configuration
        let host = rtp.unmapped.withPort(0)
        let reachable = host.isUnspecified ? SocketAddress(host: host.isIPv6 ? "::1" : "127.0.0.1", port: rtp.port)! : rtp.unmapped
        relayHost = reachable.host
        mediaLoop = reachable
        self.report = report
    }

    /// Open sessions.
    var count: Int { entries.withLock { $0.values.count { $0.relay != nil } } }

    /// The relay sockets of the open sessions (for tests).
    var relayEndpoints: [MediaEndpoint] { entries.withLock { $0.values.compactMap { $0.relay?.endpoint } } }

    /// Carries out a registry command (on the connection's queue; returns at once).
    func perform(_ command: WebRTCCommand) {
        let connection = command.connection
        if case .open(_, let room, let participant, _, _) = command {
            let key = OfferKey(room: room, participant: participant)
            let admitted = inFlight.withLock { inFlight in
                guard inFlight[key, default: 0] < Self.maximumOffersInFlight else { return false }
                inFlight[key, default: 0] += 1
                return true
            }
            guard admitted else {
                let why = "\(participant) has \(Self.maximumOffersInFlight) WebRTC offers being answered already"
                report(.refused(connection, CallError(.rateLimited, why)))
                return
            }
        }
        let queue = entries.withLock { entries in
            var entry = entries[connection] ?? Entry(queue: DispatchQueue(label: "activespeaker-webrtc-\(connection.rawValue)", target: pool))
            entry.pending += 1
            if case .close = command { entry.closes += 1 }
            entries[connection] = entry
            return entry.queue
        }
        running.enter()
        queue.async { [self] in
            switch command {
            case .open(let connection, let room, let participant, let ssrc, let offer):
                open(connection, room: room, participant: participant, ssrc: ssrc, offer: offer)
                let key = OfferKey(room: room, participant: participant)
                inFlight.withLock { inFlight in
                    inFlight[key, default: 1] -= 1
                    if inFlight[key] == 0 { inFlight[key] = nil }
                }
            case .candidate(let connection, let candidate):
                guard let relay = entries.withLock({ $0[connection]?.relay }) else { break }
                do {
                    try relay.peer.addCandidate(candidate.candidate, sdpMLineIndex: candidate.sdpMLineIndex)
                } catch {
                    report(.candidateRefused(connection, CallError(.malformedMessage, "\(error)")))
                }
            case .close(let connection):
                entries.withLock { entries -> WebRTCRelay? in
                    entries[connection]?.closes -= 1
                    defer { entries[connection]?.relay = nil }
                    return entries[connection]?.relay
                }?.close()
            }
            entries.withLock { entries in
                entries[connection]?.pending -= 1
                if let entry = entries[connection], entry.pending == 0, entry.relay == nil { entries[connection] = nil }
            }
            running.leave()
        }
    }

    /// Closes every session and refuses new ones; returns when they are closed.
    func stop() {
        stopped.store(true, ordering: .releasing)
        running.wait()
        let all = entries.withLock { entries in
            defer { entries.removeAll() }
            return entries.values.compactMap(\.relay)
        }
        for relay in all { relay.close() }
    }

    private func open(_ connection: ConnectionID, room: CallRoomID, participant: ParticipantID, ssrc: SSRC?, offer: String) {
        openGate.withLock { $0 }?(room, participant)
        guard !stopped.load(ordering: .acquiring), entries.withLock({ $0[connection]?.closes == 0 }) else {
            outcomes.withLock { $0.cancelled += 1 }
            return
        }
        outcomes.withLock { $0.built += 1 }
        let report = self.report
        var relay: WebRTCRelay?
        do {
            let opened = try WebRTCRelay(
                configuration: configuration, host: relayHost, mediaLoop: mediaLoop, ssrc: ssrc,
                onCandidate: { candidate, index in
                    report(.localCandidate(connection, ICECandidate(candidate: candidate, sdpMLineIndex: index)))
                },
                onState: { connected in report(.state(connection, room: room, participant: participant, connected: connected)) })
            relay = opened
            let answer = try opened.peer.answer(offer: offer)
            // A close queued meanwhile (it runs next on this queue) finds the relay here.
            entries.withLock { $0[connection]?.relay = opened }
            report(.answered(connection, answer: answer, endpoint: opened.endpoint, mixSSRC: opened.mixSSRC))
        } catch {
            relay?.close()
            let code: CallErrorCode = switch error {
            case .malformedSDP, .noAudio, .candidate: .malformedMessage
            case .timeout, .pipeline: .serverError
            }
            report(.refused(connection, CallError(code, error.description)))
        }
    }
}

extension WebRTCCommand {
    /// The connection the command is about.
    var connection: ConnectionID {
        switch self {
        case .open(let connection, _, _, _, _), .candidate(let connection, _), .close(let connection): connection
        }
    }
}

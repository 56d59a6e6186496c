import CallProtocol
import CallTransport
import CallWebRTC
import Dispatch
import SpeakerIO
import Synchronization

/// What `WebRTCSessions` reports back to the server, which hands it to the registry.
enum WebRTCReport: Sendable {
    /// The offer of `connection` was answered; the relay's socket is at `endpoint`.
    case answered(ConnectionID, answer: String, endpoint: MediaEndpoint)
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
/// Every command runs on one serial queue (`activespeaker-webrtc`), in the order the registry
/// decided them: a session is opened (and its offer answered, which waits for webrtcbin) before the
/// browser's candidates are added to it, and closed after. Closing there also keeps
/// `WebRTCPeer.close()` off webrtcbin's callback threads. Results go to `report` from that queue
/// (answers, refusals) or from webrtcbin's threads (candidates, states).
final class WebRTCSessions: Sendable {
    private let configuration: WebRTCConfiguration
    /// Where relays bind (numeric) and where the media loop's RTP socket is reached from there.
    private let relayHost: String
    private let mediaLoop: SocketAddress
    private let report: @Sendable (WebRTCReport) -> Void
    private let queue = DispatchQueue(label: "activespeaker-webrtc")
    private let sessions = Mutex<[ConnectionID: WebRTCRelay]>([:])
    private let stopped = Atomic<Bool>(false)

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
    var count: Int { sessions.withLock { $0.count } }

    /// Carries out a registry command (on the queue; returns at once).
    func perform(_ command: WebRTCCommand) {
        queue.async { [self] in
            switch command {
            case .open(let connection, let room, let participant, let ssrc, let offer):
                open(connection, room: room, participant: participant, ssrc: ssrc, offer: offer)
            case .candidate(let connection, let candidate):
                guard let relay = sessions.withLock({ $0[connection] }) else { return }
                do {
                    try relay.peer.addCandidate(candidate.candidate, sdpMLineIndex: candidate.sdpMLineIndex)
                } catch {
                    report(.candidateRefused(connection, CallError(.malformedMessage, "\(error)")))
                }
            case .close(let connection):
                sessions.withLock { $0.removeValue(forKey: connection) }?.close()
            }
        }
    }

    /// Closes every session and refuses new ones; returns when they are closed.
    func stop() {
        stopped.store(true, ordering: .releasing)
        queue.sync {
            let all = sessions.withLock { sessions in
                defer { sessions.removeAll() }
                return Array(sessions.values)
            }
            for relay in all { relay.close() }
        }
    }

    private func open(_ connection: ConnectionID, room: CallRoomID, participant: ParticipantID, ssrc: SSRC?, offer: String) {
        guard !stopped.load(ordering: .acquiring) else { return }
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
            sessions.withLock { $0[connection] = opened }
            report(.answered(connection, answer: answer, endpoint: opened.endpoint))
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

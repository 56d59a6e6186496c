import CallProtocol
internal import CallTransport
import Foundation
import SpeakerIO

/// One event of the server's log: a JSON line on `serve`'s standard output, and, for a room's events
/// when the room is recorded, a line of its `events.jsonl` with the server time first.
enum ServerEvent: Equatable, Sendable {
    /// `mediaPriority`: what the media loop's thread runs at, and why `realtime` was refused if it was.
    case listening(http: Int, rtp: Int, tls: Bool, mediaPriority: LoopSchedulingOutcome)
    /// An `error` message sent to a connection.
    case error(connection: ConnectionID, code: CallErrorCode)
    case roomOpened(room: CallRoomID)
    case roomClosed(room: CallRoomID)
    /// `ssrc`: null for a participant that does not publish.
    case participantJoined(room: CallRoomID, participant: ParticipantID, ssrc: SSRC?)
    case participantLeft(room: CallRoomID, participant: ParticipantID)
    case micMuted(room: CallRoomID, participant: ParticipantID, muted: Bool)
    /// `participant`: null when nobody speaks; `time`: seconds of room time, written to 10 ms.
    case speakerChanged(room: CallRoomID, participant: ParticipantID?, time: Double)
    /// A browser's WebRTC session: `answered` (its offer), `connected`, `disconnected` (the peer
    /// connection's state).
    case webRTC(room: CallRoomID, participant: ParticipantID, event: String)
    /// Several nodes: this node joined the cluster (its id, Redis with the password hidden, the live nodes).
    case clusterJoined(node: String, redis: String, nodes: [String])
    /// Several nodes: Redis stopped answering (the node keeps serving its rooms), and when it is back.
    case redisLost(reason: String)
    case redisRestored
    /// Several nodes: another node holds the claim of a room this node hosts (after a Redis outage).
    case claimLost(room: CallRoomID)
    /// A webhook attempt failed; the delivery is tried again in `retryIn` seconds.
    case webhookFailed(room: CallRoomID, sequence: Int, attempt: Int, reason: String, retryIn: Double)
    /// A webhook delivery was given up (too old, or its room's queue full).
    case webhookGivenUp(room: CallRoomID, sequence: Int, reason: String)
    /// The server stopped with webhook deliveries still pending.
    case webhookLost(count: Int)

    init(_ report: WebhookSender.Report) {
        switch report {
        case .failed(let room, let sequence, let attempt, let reason, let retryIn):
            self = .webhookFailed(room: room, sequence: sequence, attempt: attempt, reason: reason, retryIn: retryIn)
        case .givenUp(let room, let sequence, let reason): self = .webhookGivenUp(room: room, sequence: sequence, reason: reason)
        }
    }

    /// The room whose recording the event belongs in; nil for the server's own events.
    var room: CallRoomID? {
        switch self {
        case .participantJoined(let room, _, _), .participantLeft(let room, _), .micMuted(let room, _, _),
            .speakerChanged(let room, _, _):
            room
        case .listening, .error, .roomOpened, .roomClosed, .clusterJoined, .redisLost, .redisRestored, .claimLost, .webRTC,
            .webhookFailed, .webhookGivenUp, .webhookLost:
            nil
        }
    }

    /// The room whose channel the event is published on (several nodes): the room's events, and its
    /// opening and closing on this node.
    var channelRoom: CallRoomID? {
        switch self {
        case .roomOpened(let room), .roomClosed(let room): room
        default: room
        }
    }

    /// The event as one JSON object, `type` first and the fields in a fixed order (people read these
    /// lines); with `serverTime` (seconds, to the millisecond) before everything.
    func line(serverTime: Double? = nil) -> String {
        var members: [(String, any Encodable)] = []
        if let serverTime { members.append(("serverTime", (serverTime * 1000).rounded() / 1000)) }
        switch self {
        case .listening(let http, let rtp, let tls, let scheduling):
            members += [("type", "listening"), ("http", http), ("rtp", rtp), ("tls", tls), ("mediaPriority", scheduling.priority.rawValue)]
            if let refusal = scheduling.refusal { members.append(("realtimeRefused", refusal)) }
        case .error(let connection, let code):
            members += [("type", "error"), ("connection", connection.rawValue), ("code", code.rawValue)]
        case .roomOpened(let room): members += [("type", "room-opened"), ("room", room)]
        case .roomClosed(let room): members += [("type", "room-closed"), ("room", room)]
        case .participantJoined(let room, let participant, let ssrc):
            members += [("type", "participant-joined"), ("room", room), ("participant", participant), ("ssrc", ssrc)]
        case .participantLeft(let room, let participant):
            members += [("type", "participant-left"), ("room", room), ("participant", participant)]
        case .micMuted(let room, let participant, let muted):
            members += [("type", "mic-muted"), ("room", room), ("participant", participant), ("muted", muted)]
        case .speakerChanged(let room, let participant, let time):
            members += [("type", "speaker-changed"), ("room", room), ("participant", participant), ("t", (time * 100).rounded() / 100)]
        case .webRTC(let room, let participant, let event):
            members += [("type", "webrtc"), ("room", room), ("participant", participant), ("event", event)]
        case .clusterJoined(let node, let redis, let nodes):
            members += [("type", "cluster-joined"), ("node", node), ("redis", redis), ("nodes", nodes)]
        case .redisLost(let reason): members += [("type", "redis-lost"), ("reason", reason)]
        case .redisRestored: members += [("type", "redis-restored")]
        case .claimLost(let room): members += [("type", "claim-lost"), ("room", room)]
        case .webhookFailed(let room, let sequence, let attempt, let reason, let retryIn):
            members += [
                ("type", "webhook-failed"), ("room", room), ("sequence", sequence), ("attempt", attempt), ("reason", reason),
                ("retryIn", (retryIn * 1000).rounded() / 1000),
            ]
        case .webhookGivenUp(let room, let sequence, let reason):
            members += [("type", "webhook-given-up"), ("room", room), ("sequence", sequence), ("reason", reason)]
        case .webhookLost(let count): members += [("type", "webhook-lost"), ("count", count)]
        }
        let written: [String] = members.map { (key: String, value: any Encodable) -> String in
            JSON.quoted(key) + ":" + JSON.text(value)
        }
        return "{" + written.joined(separator: ",") + "}"
    }
}

/// Writes the server's events: every one as a JSON line to `output`, a room's events also to its
/// recording. Safe from any thread (`output` must be, and the recorder is).
///
/// No caller waits for the output: the media thread reports speaker changes, and `serve` writes its
/// lines to standard output, which a slow reader (a pipe, a terminal) can hold up. So an event leaves
/// through `lines`, one serial queue: the caller hands it over and goes on; the queue formats it and
/// writes it, in the order handed over, and gives the line to `publish` (a cluster's channel, whose
/// publications have their own queue). A room's recording takes the line at once (with the server time
/// of the event; the recorder has its own writer).
struct ServerLog: Sendable {
    let output: @Sendable (String) -> Void
    let recorder: CallRecorder?
    /// Seconds since the server started.
    let clock: @Sendable () -> Double
    /// Where the lines are formatted and written.
    private let lines = DispatchQueue(label: "activespeaker.log")

    init(output: @escaping @Sendable (String) -> Void, recorder: CallRecorder?, clock: @escaping @Sendable () -> Double) {
        self.output = output
        self.recorder = recorder
        self.clock = clock
    }

    /// Hands `event` over: written to `output` and given to `publish` on the log's queue.
    func callAsFunction(_ event: ServerEvent, publish: (@Sendable (String) -> Void)? = nil) {
        lines.async { [output] in
            let line = event.line()
            output(line)
            publish?(line)
        }
        if let room = event.room { record(room: room, event) }
    }

    /// Writes `event` to the recording of `room` only (`room-opened`, which places room time 0 on
    /// the server's clock, is recorded when the media loop opens the room, not when it is asked to).
    func record(room: CallRoomID, _ event: ServerEvent) {
        recorder?.event(room: room, line: event.line(serverTime: clock()))
    }

    /// Returns once every event handed over before the call has been written.
    func flush() {
        lines.sync {}
    }
}

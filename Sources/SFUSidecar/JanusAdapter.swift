public import CallServer
internal import CallProtocol
internal import CallTransport
import Foundation
import Synchronization

/// How the sidecar reaches Janus and how Janus reaches the room server (`serve --janus`, docs/sidecar.md).
public struct JanusAdapterConfiguration: Sendable {
    /// Janus's HTTP API, e.g. `http://127.0.0.1:8088/janus`.
    public var url: String
    public var credentials = JanusCredentials()
    /// Where Janus sends each publisher's audio: the server's RTP address as Janus reaches it.
    public var target: JanusForwarding.Target
    /// The numeric host Janus's forwarded packets come from (bound as each publisher's source).
    public var source: String
    /// Where the event handler posts (its path is `/janus/events`; port 0: any free port); nil: no events,
    /// snapshots only.
    public var events: (host: String, port: Int)?
    /// Seconds between snapshots of Janus (each a `list`, then `listparticipants` and `listforwarders` per room).
    public var interval: Double = 1
    /// The extension id of the publishers' RFC 6464 audio level (Chrome's is 1; Janus forwards it unchanged).
    public var audioLevelID = 1

    public init(url: String, target: JanusForwarding.Target, source: String) {
        self.url = url
        self.target = target
        self.source = source
    }
}

/// Keeps a room server's rooms equal to Janus's VideoRoom rooms (`JanusForwarding` holds the rules): on start,
/// every `interval` seconds, and on each event Janus's event handler posts, it adds each publisher to the
/// room of the same id and has Janus forward its audio (`rtp_forward`) with the SSRC the server gave it;
/// a publisher that leaves is removed at once; forwarders left by an earlier run are stopped. So a restart
/// of Janus or of the sidecar heals within one interval after the other side answers.
///
/// Threads: one thread runs snapshots, events and their actions, in order; the events listener (a
/// `WebServer`) only queues what Janus posts.
public final class JanusAdapter: Sendable {
    /// A line for the server's log (JSON, one object).
    public typealias Log = @Sendable (String) -> Void

    private let configuration: JanusAdapterConfiguration
    private let janus: any JanusVideoRoom
    private let server: RoomServer
    private let log: Log
    private let state = Mutex(State())
    private let wake = NSCondition()
    private let finished = DispatchSemaphore(value: 0)
    private let listener = Mutex<WebServer?>(nil)

    private struct State {
        var events: [JanusEvent] = []
        var stopping = false
        var started = false
        /// Rooms the adapter made, mirroring Janus's.
        var mirrored: Set<String> = []
        /// Whether the last request to Janus failed (logged once per outage).
        var unreachable = false
        var snapshots = 0
    }

    /// - Parameter janus: Janus's VideoRoom API; by default `JanusClient` on `configuration.url`.
    /// - Throws: `SidecarError` when the events address cannot be listened on.
    public init(
        configuration: JanusAdapterConfiguration, server: RoomServer, janus: (any JanusVideoRoom)? = nil, log: @escaping Log
    ) throws(SidecarError) {
        self.configuration = configuration
        self.janus = janus ?? JanusClient(url: configuration.url, credentials: configuration.credentials)
        self.server = server
        self.log = log
        if let events = configuration.events {
            do {
                let web = try WebServer(host: events.host, port: events.port, maximumBodyBytes: 1 << 20, delegate: EventsListener(adapter: self))
                listener.withLock { $0 = web }
            } catch {
                throw SidecarError("janus events", error.description)
            }
        }
    }

    /// The port the events listener is bound to; nil without one.
    public var eventsPort: Int? { listener.withLock { $0?.port } }

    /// Snapshots taken so far (each a full reconciliation).
    public var snapshots: Int { state.withLock { $0.snapshots } }

    /// Starts the listener and the adapter's thread; the first snapshot is taken at once.
    public func start() {
        guard state.withLock({ state in
            defer { state.started = true }
            return !state.started
        }) else { return }
        listener.withLock { $0?.start() }
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "janus-adapter"
        thread.start()
    }

    /// Stops listening and the thread (after the action in progress). The forwarders stay: the next run of
    /// the sidecar stops those it does not use.
    public func stop() {
        let wasRunning = state.withLock { state in
            defer { state.stopping = true }
            return state.started && !state.stopping
        }
        listener.withLock { $0?.stop() }
        guard wasRunning else { return }
        signal()
        finished.wait()
    }

    // MARK: The thread

    private func run() {
        var nextSnapshot = 0.0
        while true {
            let now = Date().timeIntervalSinceReferenceDate
            let (events, stopping) = state.withLock { state in
                defer { state.events.removeAll() }
                return (state.events, state.stopping)
            }
            if stopping { return }
            for event in events { carryOut(JanusForwarding.plan(event: event, ingests: server.ingestPublishers()), because: "event") }
            if now >= nextSnapshot {
                reconcile()
                nextSnapshot = Date().timeIntervalSinceReferenceDate + configuration.interval
                continue
            }
            wake.lock()
            if state.withLock({ $0.events.isEmpty && !$0.stopping }) {
                _ = wake.wait(until: Date(timeIntervalSinceReferenceDate: nextSnapshot))
            }
            wake.unlock()
        }
    }

    /// One full snapshot of Janus and the actions that make the server agree with it.
    private func reconcile() {
        var rooms: [JanusForwarding.Room] = []
        do throws(SidecarError) {
            for room in try janus.rooms() {
                rooms.append(JanusForwarding.Room(id: room, publishers: try janus.publishers(in: room), forwarders: try janus.forwarders(in: room)))
            }
        } catch {
            reachable(false, error)
            return
        }
        reachable(true, nil)
        let mirrored = state.withLock {
            $0.snapshots += 1
            return $0.mirrored
        }
        carryOut(JanusForwarding.plan(janus: rooms, ingests: server.ingestPublishers(), mirrored: mirrored, target: configuration.target), because: "snapshot")
    }

    private func carryOut(_ actions: [JanusForwarding.Action], because cause: String) {
        for action in actions {
            do throws(SidecarError) {
                try perform(action, cause: cause)
            } catch {
                log(Line(type: "janus-action-failed", reason: error.description).json)
                if error.janusCode == nil { reachable(false, error) }
            }
        }
    }

    private func perform(_ action: JanusForwarding.Action, cause: String) throws(SidecarError) {
        switch action {
        case .publish(let room, let publisher):
            let roomID = room.description, participant = publisher.id.description
            let ssrc: UInt32
            do {
                if try server.openRoomIfMissing(roomID) { _ = state.withLock { $0.mirrored.insert(roomID) } }
                ssrc = try server.addIngest(
                    room: roomID, participant: participant, displayName: publisher.display, source: configuration.source,
                    audioLevelID: configuration.audioLevelID)
            } catch {
                throw SidecarError("add publisher \(participant) to room \(roomID)", error.message)
            }
            try janus.forward(room: room, publisher: publisher.id, host: configuration.target.host, port: configuration.target.port, ssrc: ssrc)
            log(Line(type: "janus-forwarding", room: roomID, participant: participant, display: publisher.display, ssrc: ssrc, cause: cause).json)
        case .forward(let room, let publisher, let ssrc):
            try janus.forward(room: room, publisher: publisher, host: configuration.target.host, port: configuration.target.port, ssrc: ssrc)
            log(Line(type: "janus-forwarding", room: room.description, participant: publisher.description, ssrc: ssrc, cause: cause).json)
        case .stopForward(let room, let publisher, let stream):
            try janus.stopForward(room: room, publisher: publisher, stream: stream)
            log(Line(type: "janus-forward-stopped", room: room.description, participant: publisher.description, cause: cause).json)
        case .remove(let room, let participant):
            do {
                try server.removeIngest(room: room, participant: participant)
            } catch where error.code == .noSuchParticipant || error.code == .roomNotFound {
                return
            } catch {
                throw SidecarError("remove publisher \(participant) from room \(room)", error.message)
            }
            log(Line(type: "janus-publisher-gone", room: room, participant: participant, cause: cause).json)
        case .closeRoom(let room):
            guard state.withLock({ $0.mirrored.remove(room) != nil }) else { return }
            server.closeRoomIfPresent(room)
            log(Line(type: "janus-room-gone", room: room, cause: cause).json)
        }
    }

    private func reachable(_ reachable: Bool, _ error: SidecarError?) {
        let changed = state.withLock { state in
            defer { state.unreachable = !reachable }
            return state.unreachable == reachable
        }
        guard changed else { return }
        log(reachable ? Line(type: "janus-reachable").json : Line(type: "janus-unreachable", reason: error?.description).json)
    }

    private func signal() {
        wake.lock()
        wake.broadcast()
        wake.unlock()
    }

    // MARK: The events listener (its service thread)

    fileprivate func answer(_ request: HTTPRequest) -> HTTPResponse {
        guard request.path == "/janus/events" else { return .text(status: 404, "not found\n") }
        guard request.method == "POST" else { return HTTPResponse(status: 405, headers: [("Allow", "POST")]) }
        guard configuration.credentials.allowsEvents(authorization: request.headers["authorization"]) else {
            return HTTPResponse(status: 401, headers: [("WWW-Authenticate", #"Basic realm="activespeaker""#)])
        }
        let events: [JanusEvent]
        do throws(SidecarError) {
            events = try JanusEvent.events(in: request.body)
        } catch {
            return .text(status: 400, "\(error.message)\n")
        }
        if !events.isEmpty {
            state.withLock { $0.events += events }
            signal()
        }
        return .empty(status: 200)
    }

}

/// The events listener's delegate: plain HTTP only (no WebSocket path is open).
private final class EventsListener: WebServerDelegate {
    /// Unowned: the adapter owns the listener and stops it before it goes.
    unowned let adapter: JanusAdapter

    init(adapter: JanusAdapter) { self.adapter = adapter }

    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse { adapter.answer(request) }
    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {}
    func webSocketReceived(_ connection: ConnectionID, text: String) {}
    func webSocketClosed(_ connection: ConnectionID) {}
}

/// One line of the adapter's log.
private struct Line: Encodable {
    var type: String
    var room: String?
    var participant: String?
    var display: String?
    var ssrc: UInt32?
    var cause: String?
    var reason: String?

    var json: String { JSON.text(self) }
}

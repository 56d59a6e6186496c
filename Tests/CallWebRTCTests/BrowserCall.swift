import CallTransport
import CallWebRTC
import Foundation
import Synchronization

/// A test's signalling server and server-side peer for one headless Chromium: serves `page` at `/`, and on
/// the WebSocket `/signal` takes the page's offer and candidates (JSON messages of this test's own shape:
/// `offer`, `candidate`, `stats`) and sends back the answer, the server's candidates and `stats?` requests.
final class BrowserCall: WebServerDelegate, Sendable {
    struct Stats: Equatable {
        var packetsReceived: Int
        var audioLevel: Double
    }

    private struct State {
        var server: WebServer?
        var connection: ConnectionID?
        var peer: WebRTCPeer?
        var packets: [[UInt8]] = []
        var firstPacket: Date?
        var offerAt: Date?
        var offer: String?
        var answer: String?
        var failure: String?
        var stats: Stats?
        var connected = false
        var pendingCandidates: [String] = []
    }

    private let state = Mutex(State())
    private let configuration: WebRTCConfiguration

    init(configuration: WebRTCConfiguration) {
        self.configuration = configuration
    }

    /// Starts serving on 127.0.0.1 and returns the page's URL.
    func start() throws -> String {
        let server = try WebServer(host: "127.0.0.1", port: 0, maximumMessageBytes: 1 << 20, webSocketPaths: ["/signal"], delegate: self)
        state.withLock { $0.server = server }
        server.start()
        return "http://127.0.0.1:\(server.port)/"
    }

    func stop() {
        let (server, peer) = state.withLock { state in
            defer { state.server = nil; state.peer = nil }
            return (state.server, state.peer)
        }
        peer?.close()
        server?.stop()
    }

    var packets: [[UInt8]] { state.withLock { $0.packets } }
    var url: String? { state.withLock { $0.server.map { "http://127.0.0.1:\($0.port)/" } } }
    var packetCount: Int { state.withLock { $0.packets.count } }
    var failure: String? { state.withLock { $0.failure } }
    var connected: Bool { state.withLock { $0.connected } }
    var offer: String? { state.withLock { $0.offer } }
    var answer: String? { state.withLock { $0.answer } }
    var peer: WebRTCPeer? { state.withLock { $0.peer } }
    var stats: Stats? { state.withLock { $0.stats } }
    /// Seconds from the offer's arrival to the first packet from the browser.
    var offerToFirstPacket: Double? {
        state.withLock { state in state.firstPacket.flatMap { first in state.offerAt.map { first.timeIntervalSince($0) } } }
    }

    /// Asks the page for its inbound-rtp statistics; the answer lands in `stats`.
    func requestStats() {
        let (server, connection) = state.withLock { ($0.server, $0.connection) }
        guard let server, let connection else { return }
        server.send(#"{"type":"stats?"}"#, to: connection)
    }

    // MARK: WebServerDelegate

    func handle(_ request: HTTPRequest, from peer: PeerAddress) -> HTTPResponse {
        guard request.path == "/" else { return HTTPResponse(status: 404) }
        return HTTPResponse(status: 200, contentType: "text/html; charset=utf-8", body: Array(Self.page.utf8))
    }

    func webSocketOpened(_ connection: ConnectionID, path: String, query: [String: String], peer: PeerAddress) {
        state.withLock { $0.connection = connection }
    }

    func webSocketReceived(_ connection: ConnectionID, text: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
            let type = object["type"] as? String
        else { return }
        switch type {
        case "offer":
            guard let sdp = object["sdp"] as? String else { return }
            receiveOffer(sdp, connection: connection)
        case "candidate":
            guard let candidate = object["candidate"] as? String, let index = object["index"] as? Int else { return }
            do {
                try state.withLock { $0.peer }?.addCandidate(candidate, sdpMLineIndex: index)
            } catch {
                state.withLock { $0.failure = "addCandidate: \(error)" }
            }
        case "stats":
            let stats = Stats(packetsReceived: object["packetsReceived"] as? Int ?? 0, audioLevel: object["audioLevel"] as? Double ?? 0)
            state.withLock { $0.stats = stats }
        case "error":
            state.withLock { $0.failure = "page: \(object["message"] ?? "")" }
        default:
            break
        }
    }

    func webSocketClosed(_ connection: ConnectionID) {}

    private func receiveOffer(_ sdp: String, connection: ConnectionID) {
        guard let server = state.withLock({ $0.server }) else { return }
        let send: @Sendable (String) -> Void = { [weak server] text in server?.send(text, to: connection) }
        do {
            let peer = try WebRTCPeer(
                configuration: configuration,
                onCandidate: { candidate, index in
                    send(Self.json(["type": "candidate", "candidate": candidate, "index": index]))
                },
                onPacket: { [weak self] rtp in
                    self?.state.withLock { state in
                        if state.firstPacket == nil { state.firstPacket = Date() }
                        state.packets.append(rtp)
                    }
                },
                onState: { [weak self] connected in self?.state.withLock { $0.connected = connected } })
            state.withLock {
                $0.peer = peer
                $0.offer = sdp
                $0.offerAt = Date()
            }
            let answer = try peer.answer(offer: sdp, timeout: 20)
            state.withLock { $0.answer = answer }
            send(Self.json(["type": "answer", "sdp": answer]))
        } catch {
            state.withLock { $0.failure = "answer: \(error)" }
        }
    }

    static func json(_ object: [String: Any]) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    /// The page: microphone → RTCPeerConnection (no STUN) → offer over the WebSocket; the server's answer
    /// and candidates back (candidates held until the answer is set); the received track played; stats on request.
    static let page = #"""
        <!doctype html>
        <html><body><audio id="out" autoplay></audio><script>
        const ws = new WebSocket(`ws://${location.host}/signal`);
        const send = (m) => ws.send(JSON.stringify(m));
        let pc, answered = false, pending = [];
        window.states = [];
        ws.onopen = async () => {
          try {
            const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
            pc = new RTCPeerConnection({ iceServers: [] });
            for (const track of stream.getTracks()) pc.addTrack(track, stream);
            pc.onicecandidate = (e) => { if (e.candidate && e.candidate.candidate) send({ type: 'candidate', candidate: e.candidate.candidate, index: e.candidate.sdpMLineIndex }); };
            pc.ontrack = (e) => { const out = document.getElementById('out'); out.srcObject = new MediaStream([e.track]); out.play().catch(() => {}); };
            pc.onconnectionstatechange = () => window.states.push(pc.connectionState);
            const offer = await pc.createOffer();
            await pc.setLocalDescription(offer);
            send({ type: 'offer', sdp: offer.sdp });
          } catch (e) { send({ type: 'error', message: String(e) }); }
        };
        ws.onmessage = async (event) => {
          const m = JSON.parse(event.data);
          try {
            if (m.type === 'answer') {
              await pc.setRemoteDescription({ type: 'answer', sdp: m.sdp });
              answered = true;
              for (const c of pending) await pc.addIceCandidate(c);
              pending = [];
            } else if (m.type === 'candidate') {
              const c = { candidate: m.candidate, sdpMLineIndex: m.index };
              if (answered) await pc.addIceCandidate(c); else pending.push(c);
            } else if (m.type === 'stats?') {
              const report = await pc.getStats();
              const stats = { type: 'stats', packetsReceived: 0, audioLevel: 0 };
              report.forEach((s) => { if (s.type === 'inbound-rtp' && s.kind === 'audio') { stats.packetsReceived = s.packetsReceived || 0; stats.audioLevel = s.audioLevel || 0; } });
              send(stats);
            }
          } catch (e) { send({ type: 'error', message: m.type + ': ' + String(e) }); }
        };
        </script></body></html>
        """#
}

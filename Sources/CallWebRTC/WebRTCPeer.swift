internal import CGStreamer
import Dispatch
import Glibc
import Synchronization

/// One browser's WebRTC peer connection, terminated on the server by GStreamer's `webrtcbin`: ICE by
/// libnice, DTLS-SRTP by GStreamer's dtls and srtp elements. The browser offers (audio, sendrecv), the
/// server answers; Opus RTP packets come out decrypted (`onPacket`) and go in as plain RTP (`send`).
///
/// Each peer has a pipeline of its own (`webrtcbin`, an `appsrc` for the packets sent, a `fakesink` per
/// stream received) and with it webrtcbin's, libnice's and the streaming threads; its bus is watched on
/// the process's one GStreamer main-loop thread (`activespeaker-gst`).
///
/// Callbacks run on GStreamer's threads (webrtcbin's task thread, libnice's thread, a streaming thread),
/// one at a time per kind but not in one serial order across kinds; they must not block, and must not call
/// `close()` (which waits for those threads; a precondition stops it) or drop the last reference to the peer. Every other method may be called from any thread.
public final class WebRTCPeer: Sendable {
    private let core: PeerCore

    /// Builds the peer's pipeline and starts it; nothing is gathered before `answer(offer:)`.
    /// - Parameters:
    ///   - configuration: STUN server and local address.
    ///   - onCandidate: each of the server's ICE candidates (`candidate:…`, no `a=`) and its m-line
    ///     index, to signal to the browser.
    ///   - onPacket: each RTP packet (Opus, decrypted) the browser sends, header extensions intact.
    ///   - onState: true when the connection (ICE and DTLS) is up, false when it is lost or failed; each
    ///     report differs from the one before.
    /// - Throws: `.pipeline` if GStreamer or one of its elements (webrtcbin, libnice, dtls, srtp) is missing.
    public init(configuration: WebRTCConfiguration,
                onCandidate: @escaping @Sendable (_ candidate: String, _ sdpMLineIndex: Int) -> Void,
                onPacket: @escaping @Sendable (_ rtp: [UInt8]) -> Void,
                onState: @escaping @Sendable (_ connected: Bool) -> Void) throws(WebRTCError) {
        let runtime = try GStreamerRuntime.shared.get()
        core = try PeerCore(runtime: runtime, configuration: configuration,
                            callbacks: PeerCallbacks(candidate: onCandidate, packet: onPacket, state: onState))
    }

    deinit {
        core.close()
    }

    /// Sets the browser's offer and returns the answer SDP, which accepts Opus and, if offered,
    /// `urn:ietf:params:rtp-hdrext:ssrc-audio-level` (with the offer's id) on the offer's audio m-line.
    /// Called once per peer; a refused offer (`.malformedSDP`, `.noAudio`) may be followed by another.
    /// - Parameters:
    ///   - sdp: the offer.
    ///   - timeout: seconds to wait for each of webrtcbin's three steps (set offer, create answer, set answer).
    /// - Returns: the answer SDP.
    /// - Throws: `.malformedSDP` (not SDP, no ICE credentials or DTLS fingerprint, or refused by webrtcbin),
    ///   `.noAudio`, `.timeout` (naming the step), `.pipeline` (closed, answered already, or a GStreamer failure).
    public func answer(offer sdp: String, timeout: Double = 5) throws(WebRTCError) -> String {
        try core.answer(offer: sdp, timeout: timeout)
    }

    /// The remote candidates a peer takes, before and after the answer together. libnice checks each
    /// (STUN requests to the address and port it names), so their number is bounded.
    public static let maximumRemoteCandidates = 32

    /// Adds one of the browser's ICE candidates. Candidates that come before the offer are kept and
    /// added after it; an empty candidate (end of candidates) is ignored, and so is one whose address is
    /// not a numeric IP address (an mDNS `….local` name, any host name): webrtcbin would resolve it
    /// through the system resolver. The browser's checks reach the server's own candidates anyway
    /// (peer-reflexive candidates).
    /// - Parameters:
    ///   - candidate: `candidate:…`, with or without `a=`.
    ///   - sdpMLineIndex: the m-line it belongs to.
    /// - Throws: `.candidate` for a candidate that is not RFC 8839 syntax, an m-line the offer lacks, or
    ///   one past `maximumRemoteCandidates`; `.pipeline` after `close()`.
    public func addCandidate(_ candidate: String, sdpMLineIndex: Int) throws(WebRTCError) {
        try core.addCandidate(candidate, sdpMLineIndex: sdpMLineIndex)
    }

    /// Sends one Opus RTP packet to the browser. Any SSRC, sequence number and timestamp: the peer gives
    /// it its own SSRC, the negotiated payload type, the next sequence number and a timestamp continuing
    /// the stream (`RTPStreamRewriter`), and drops header extensions. Never blocks: before the answer,
    /// after `close()` or while the connection is not up packets are dropped, and when 50 wait to be
    /// sent the oldest is dropped.
    public func send(rtp: [UInt8]) {
        core.send(rtp)
    }

    /// The remote candidates handed to webrtcbin so far (for tests).
    var candidatesAdded: Int { core.candidatesAdded }

    /// Stops the pipeline (its threads end before this returns) and releases it. Idempotent. Not from
    /// within a callback.
    public func close() {
        core.close()
    }
}

struct PeerCallbacks: Sendable {
    let candidate: @Sendable (String, Int) -> Void
    let packet: @Sendable ([UInt8]) -> Void
    let state: @Sendable (Bool) -> Void
}

/// The peer's pipeline and state.
///
/// `@unchecked Sendable`: the GStreamer pointers are set once in `init` and never change; GStreamer's
/// objects are thread-safe for the calls made here, and each call that may race `close()` holds a
/// reference of its own (taken under `state`'s lock while not closed) or is made under that lock
/// (`send`). Everything mutable is in `state`. C callbacks hold a retained reference to this object,
/// released by GLib when their handler or watch is gone (signals, bus watch) or by `close()` (probes).
final class PeerCore: @unchecked Sendable {
    enum Phase {
        case waitingForOffer
        case answering
        case answered(OfferSummary)
        case failed
    }

    struct State {
        var phase = Phase.waitingForOffer
        var closed = false
        var appsrc: GstPointer<GstElement>?
        var rewriter: RTPStreamRewriter?
        var pendingCandidates: [(String, Int)] = []
        var connected = false
        /// A failure was reported (once, even if the connection never came up).
        var failureReported = false
        /// Probes on webrtcbin's source pads, removed by `close()`.
        var probes: [(pad: GstPointer<GstPad>, id: UInt)] = []
        /// Remote candidates taken (added or kept for after the answer).
        var remoteCandidates = 0
        /// Remote candidates handed to webrtcbin.
        var candidatesAdded = 0

        /// Counts one more remote candidate.
        /// - Throws: `.candidate` past `WebRTCPeer.maximumRemoteCandidates`.
        mutating func countRemoteCandidate() throws(WebRTCError) {
            guard remoteCandidates < WebRTCPeer.maximumRemoteCandidates else {
                throw .candidate("more than \(WebRTCPeer.maximumRemoteCandidates) candidates")
            }
            remoteCandidates += 1
        }
    }

    let callbacks: PeerCallbacks
    private let configuration: WebRTCConfiguration
    private let context: OpaquePointer
    private let pipeline: UnsafeMutablePointer<GstElement>
    private let webrtc: UnsafeMutablePointer<GstElement>
    private var busWatch: UInt32 = 0
    private let state = Mutex(State())
    /// The SSRC of the packets sent to the browser.
    let ssrc = UInt32.random(in: 1...UInt32.max)

    init(runtime: GStreamerRuntime, configuration: WebRTCConfiguration, callbacks: PeerCallbacks) throws(WebRTCError) {
        precondition((0...1000).contains(configuration.receiveLatency), "receiveLatency is 0…1000 ms")
        self.callbacks = callbacks
        self.configuration = configuration
        context = runtime.context
        guard let pipeline = gst_pipeline_new(nil) else { throw .pipeline("gst_pipeline_new failed") }
        guard let webrtc = gst_element_factory_make("webrtcbin", nil) else {
            gst_object_unref(pipeline)
            throw .pipeline("cannot make webrtcbin")
        }
        self.pipeline = pipeline
        self.webrtc = webrtc
        gst_bin_add(Self.bin(pipeline), webrtc)
        cgst_set_enum(webrtc, "bundle-policy", Int32(GST_WEBRTC_BUNDLE_POLICY_MAX_BUNDLE.rawValue))
        cgst_set_uint(webrtc, "latency", UInt32(configuration.receiveLatency))
        if let stun = configuration.stunServer { cgst_set_string(webrtc, "stun-server", stun) }
        if let host = configuration.iceHost {
            guard let ice = cgst_get_object(webrtc, "ice-agent") else {
                gst_object_unref(pipeline)
                throw .pipeline("webrtcbin has no ICE agent")
            }
            let added = cgst_ice_add_local_ip_address(ice, host)
            g_object_unref(ice)
            guard added != 0 else {
                gst_object_unref(pipeline)
                throw .pipeline("libnice refused the local address \(host)")
            }
        }

        let retained = { Unmanaged.passRetained(self).toOpaque() }
        cgst_connect_ice_candidate(webrtc, onIceCandidate, retained(), releaseClosureData)
        cgst_connect_pad_added(webrtc, onPadAdded, retained(), releaseClosureData)
        cgst_connect_notify(webrtc, "notify::connection-state", onConnectionState, retained(), releaseClosureData)
        let bus = gst_pipeline_get_bus(UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstPipeline.self))
        busWatch = cgst_bus_watch(bus, context, onBusMessage, retained(), releaseData)
        gst_object_unref(bus)

        guard gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE else {
            close()
            throw .pipeline("webrtcbin did not start")
        }
    }

    static func bin(_ element: UnsafeMutablePointer<GstElement>) -> UnsafeMutablePointer<GstBin> {
        UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstBin.self)
    }

    /// webrtcbin with a reference of the caller's own, unless closed.
    private func referencedWebRTC() -> UnsafeMutablePointer<GstElement>? {
        state.withLock { $0.closed ? nil : webrtc }.map { gst_object_ref($0); return $0 }
    }

    // MARK: Negotiation

    func answer(offer sdp: String, timeout: Double) throws(WebRTCError) -> String {
        try state.withLock { state throws(WebRTCError) in
            guard !state.closed else { throw .pipeline("the peer is closed") }
            guard case .waitingForOffer = state.phase else { throw .pipeline("answer(offer:) was called already") }
            state.phase = .answering
        }
        // Refusals before the pipeline changes leave the peer waiting for an offer.
        let message: UnsafeMutablePointer<GstSDPMessage>
        let summary: OfferSummary
        do throws(WebRTCError) {
            message = try OfferSummary.parse(sdp)
            do { summary = try OfferSummary(message) } catch {
                gst_sdp_message_free(message)
                throw error
            }
        } catch {
            state.withLock { $0.phase = .waitingForOffer }
            throw error
        }
        guard let webrtc = referencedWebRTC() else {
            gst_sdp_message_free(message)
            throw .pipeline("the peer is closed")
        }
        defer { gst_object_unref(webrtc) }
        do throws(WebRTCError) {
            let answer = try negotiate(webrtc: webrtc, offer: message, summary: summary, timeout: timeout)
            let pending = state.withLock { state in
                state.phase = .answered(summary)
                defer { state.pendingCandidates = [] }
                return state.pendingCandidates
            }
            for (candidate, index) in pending { try? add(candidate, sdpMLineIndex: index, counted: true) }
            return answer
        } catch {
            state.withLock { $0.phase = .failed }
            throw error
        }
    }

    /// Links the sending `appsrc` to a transceiver that prefers Opus (and the offer's level extension),
    /// then runs webrtcbin's three steps. Consumes `offer`.
    private func negotiate(webrtc: UnsafeMutablePointer<GstElement>, offer: UnsafeMutablePointer<GstSDPMessage>,
                           summary: OfferSummary, timeout: Double) throws(WebRTCError) -> String {
        guard let offerDescription = gst_webrtc_session_description_new(GST_WEBRTC_SDP_TYPE_OFFER, offer) else {
            gst_sdp_message_free(offer)
            throw .pipeline("cannot make a session description")
        }
        defer { gst_webrtc_session_description_free(offerDescription) }

        var capsText = "application/x-rtp,media=audio,encoding-name=OPUS,payload=\(summary.opusPayloadType),clock-rate=48000,encoding-params=(string)2"
        if let id = summary.audioLevelID { capsText += ",extmap-\(id)=(string)\(OfferSummary.audioLevelURI)" }
        try addSender(webrtc: webrtc, capsText: capsText)

        try waitForPromise("setting the offer", timeout: timeout) { cgst_webrtc_set_remote_description(webrtc, offerDescription, $0) } onReply: { reply throws(WebRTCError) in
            if let error = cgst_reply_error(reply) {
                defer { g_free(error) }
                throw .malformedSDP("webrtcbin refused it: \(String(cString: error))")
            }
        }
        var answer: UnsafeMutablePointer<GstWebRTCSessionDescription>?
        try waitForPromise("creating the answer", timeout: timeout) { cgst_webrtc_create_answer(webrtc, $0) } onReply: { reply throws(WebRTCError) in
            if let error = cgst_reply_error(reply) {
                defer { g_free(error) }
                throw .pipeline("webrtcbin cannot answer: \(String(cString: error))")
            }
            answer = cgst_reply_description(reply, "answer")
        }
        guard let answer else { throw .pipeline("webrtcbin gave no answer") }
        defer { gst_webrtc_session_description_free(answer) }
        try waitForPromise("setting the answer", timeout: timeout) { cgst_webrtc_set_local_description(webrtc, answer, $0) } onReply: { reply throws(WebRTCError) in
            if let error = cgst_reply_error(reply) {
                defer { g_free(error) }
                throw .pipeline("webrtcbin refused its own answer: \(String(cString: error))")
            }
        }
        guard let text = gst_sdp_message_as_text(answer.pointee.sdp) else { throw .pipeline("cannot write the answer") }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// appsrc (live, leaky, 50 packets) → webrtcbin's `sink_%u`, whose transceiver is sendrecv and
    /// prefers `capsText`.
    private func addSender(webrtc: UnsafeMutablePointer<GstElement>, capsText: String) throws(WebRTCError) {
        guard let preferences = gst_caps_from_string(capsText), let sourceCaps = gst_caps_from_string(capsText + ",ssrc=(uint)\(ssrc)") else {
            throw .pipeline("bad caps \(capsText)")
        }
        defer {
            gst_caps_unref(preferences)
            gst_caps_unref(sourceCaps)
        }
        guard let appsrc = gst_element_factory_make("appsrc", nil) else { throw .pipeline("cannot make appsrc") }
        cgst_set_caps(appsrc, "caps", sourceCaps)
        cgst_set_bool(appsrc, "is-live", 1)
        cgst_set_bool(appsrc, "do-timestamp", 1)
        cgst_set_enum(appsrc, "format", Int32(GST_FORMAT_TIME.rawValue))
        cgst_set_uint64(appsrc, "max-buffers", 50)
        cgst_set_enum(appsrc, "leaky-type", Int32(GST_APP_LEAKY_TYPE_DOWNSTREAM.rawValue))
        gst_bin_add(Self.bin(pipeline), appsrc)

        guard let sink = gst_element_request_pad_simple(webrtc, "sink_%u") else { throw .pipeline("webrtcbin gave no sink pad") }
        defer { gst_object_unref(sink) }
        if let transceiver = cgst_get_object(sink, "transceiver") {
            cgst_set_caps(transceiver, "codec-preferences", preferences)
            cgst_set_enum(transceiver, "direction", Int32(GST_WEBRTC_RTP_TRANSCEIVER_DIRECTION_SENDRECV.rawValue))
            g_object_unref(transceiver)
        }
        let source = gst_element_get_static_pad(appsrc, "src")
        defer { gst_object_unref(source) }
        guard gst_pad_link(source, sink) == GST_PAD_LINK_OK else { throw .pipeline("cannot link appsrc to webrtcbin") }
        guard gst_element_sync_state_with_parent(appsrc) != 0 else { throw .pipeline("appsrc did not start") }
        state.withLock { state in
            state.appsrc = GstPointer(appsrc)
            state.rewriter = RTPStreamRewriter(ssrc: ssrc, payloadType: UInt8(truncatingIfNeeded: Int(capsText.payloadType)),
                                               sequenceNumber: .random(in: 0...UInt16.max), timestamp: .random(in: 0...UInt32.max))
        }
    }

    /// Emits one of webrtcbin's promise-taking signals and waits at most `timeout` s for the reply.
    private func waitForPromise(_ step: String, timeout: Double, emit: (UnsafeMutablePointer<GstPromise>) -> Void,
                                onReply: (UnsafePointer<GstStructure>?) throws(WebRTCError) -> Void) throws(WebRTCError) {
        let waiter = PromiseWaiter()
        let promise = gst_promise_new_with_change_func(promiseChanged, Unmanaged.passRetained(waiter).toOpaque(), releaseData)!
        defer { gst_promise_unref(promise) }
        emit(promise)
        guard waiter.semaphore.wait(timeout: .now() + timeout) == .success else {
            gst_promise_interrupt(promise)
            throw .timeout(step)
        }
        switch gst_promise_wait(promise) {
        case GST_PROMISE_RESULT_REPLIED: try onReply(gst_promise_get_reply(promise))
        default: throw .pipeline("webrtcbin dropped the promise of \(step)")
        }
    }

    // MARK: Candidates and packets

    func addCandidate(_ candidate: String, sdpMLineIndex: Int) throws(WebRTCError) {
        let attribute = try ICECandidateSyntax.check(candidate).get()
        guard sdpMLineIndex >= 0 else { throw .candidate("negative m-line index \(sdpMLineIndex)") }
        // The end of candidates, and a name (mDNS or other) that webrtcbin would resolve: nothing to add.
        guard !attribute.text.isEmpty, attribute.hasIPAddress else { return }
        try add(attribute.text, sdpMLineIndex: sdpMLineIndex)
    }

    /// Adds (or, before the answer, keeps) a checked candidate with a numeric address, counting it.
    private func add(_ attribute: String, sdpMLineIndex: Int, counted: Bool = false) throws(WebRTCError) {
        let ready = try state.withLock { state throws(WebRTCError) -> Bool in
            guard !state.closed else { throw .pipeline("the peer is closed") }
            switch state.phase {
            case .answered(let summary):
                guard sdpMLineIndex < summary.mediaCount else {
                    throw .candidate("m-line index \(sdpMLineIndex), but the offer has \(summary.mediaCount) m-lines")
                }
                if !counted { try state.countRemoteCandidate() }
                state.candidatesAdded += 1
                return true
            case .waitingForOffer, .answering:
                try state.countRemoteCandidate()
                state.pendingCandidates.append((attribute, sdpMLineIndex))
                return false
            case .failed:
                throw .pipeline("negotiation failed")
            }
        }
        guard ready, let webrtc = referencedWebRTC() else { return }
        defer { gst_object_unref(webrtc) }
        cgst_webrtc_add_ice_candidate(webrtc, UInt32(sdpMLineIndex), attribute)
    }

    var candidatesAdded: Int { state.withLock { $0.candidatesAdded } }

    func send(_ rtp: [UInt8]) {
        state.withLock { state in
            guard !state.closed, state.connected, let appsrc = state.appsrc?.pointer, let packet = state.rewriter?.rewrite(rtp) else { return }
            guard let buffer = gst_buffer_new_allocate(nil, gsize(packet.count), nil) else { return }
            _ = packet.withUnsafeBytes { gst_buffer_fill(buffer, 0, $0.baseAddress, gsize($0.count)) }
            _ = gst_app_src_push_buffer(UnsafeMutableRawPointer(appsrc).assumingMemoryBound(to: GstAppSrc.self), buffer)
        }
    }

    /// A source pad of webrtcbin (one per stream received): a fakesink drains it, a probe copies its packets.
    fileprivate func attachReceiver(_ pad: UnsafeMutablePointer<GstPad>) {
        guard state.withLock({ !$0.closed }), let sink = gst_element_factory_make("fakesink", nil) else { return }
        cgst_set_bool(sink, "sync", 0)
        cgst_set_bool(sink, "async", 0)
        gst_bin_add(Self.bin(pipeline), sink)
        gst_element_sync_state_with_parent(sink)
        let sinkPad = gst_element_get_static_pad(sink, "sink")
        gst_pad_link(pad, sinkPad)
        gst_object_unref(sinkPad)
        let types = GstPadProbeType(rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_BUFFER_LIST.rawValue)
        let id = gst_pad_add_probe(pad, types, onBuffer, Unmanaged.passRetained(self).toOpaque(), releaseData)
        gst_object_ref(pad)
        state.withLock { $0.probes.append((GstPointer(pad), UInt(id))) }
    }

    fileprivate func connectionStateChanged() {
        let value = UInt32(bitPattern: cgst_get_enum(webrtc, "connection-state"))
        let connected: Bool
        switch value {
        case GST_WEBRTC_PEER_CONNECTION_STATE_CONNECTED.rawValue: connected = true
        case GST_WEBRTC_PEER_CONNECTION_STATE_DISCONNECTED.rawValue, GST_WEBRTC_PEER_CONNECTION_STATE_FAILED.rawValue,
            GST_WEBRTC_PEER_CONNECTION_STATE_CLOSED.rawValue:
            connected = false
        default: return
        }
        report(connected: connected, failed: value == GST_WEBRTC_PEER_CONNECTION_STATE_FAILED.rawValue)
    }

    /// Reports a change of the connection; a failure is reported even if the connection never came up.
    fileprivate func report(connected: Bool, failed: Bool) {
        let changed = state.withLock { state -> Bool in
            guard !state.closed, state.connected != connected || failed && !state.failureReported else { return false }
            state.connected = connected
            if failed { state.failureReported = true }
            return true
        }
        if changed { CallbackThread.run { callbacks.state(connected) } }
    }

    // MARK: Closing

    func close() {
        precondition(!CallbackThread.isCurrent, "WebRTCPeer.close() from one of its callbacks would wait for its own thread")
        let probes = state.withLock { state -> [(pad: GstPointer<GstPad>, id: UInt)]? in
            guard !state.closed else { return nil }
            state.closed = true
            state.appsrc = nil
            defer { state.probes = [] }
            return state.probes
        }
        guard let probes else { return }
        g_signal_handlers_disconnect_matched(webrtc, G_SIGNAL_MATCH_DATA, 0, 0, nil, nil, Unmanaged.passUnretained(self).toOpaque())
        cgst_remove_source(context, busWatch)
        gst_element_set_state(pipeline, GST_STATE_NULL)
        // With the probes added by a pad-added that raced the lock above.
        let late = state.withLock { state -> [(pad: GstPointer<GstPad>, id: UInt)] in
            defer { state.probes = [] }
            return state.probes
        }
        for probe in probes + late {
            gst_pad_remove_probe(probe.pad.pointer, gulong(probe.id))
            gst_object_unref(probe.pad.pointer)
        }
        gst_object_unref(pipeline)
    }
}

/// A pointer to a GStreamer object kept in `PeerCore.State`. `@unchecked Sendable`: GStreamer objects are
/// thread-safe for the calls made on them here, and the state's lock orders their use against `close()`.
struct GstPointer<Pointee>: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<Pointee>
    init(_ pointer: UnsafeMutablePointer<Pointee>) { self.pointer = pointer }
}

/// Marks the threads running a peer's callbacks, so that `close()` from one (which would wait for that
/// thread) stops with a clear message instead of hanging.
enum CallbackThread {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func run<T>(_ body: () -> T) -> T {
        let outer = pthread_getspecific(key)
        pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1))
        defer { pthread_setspecific(key, outer) }
        return body()
    }

    static var isCurrent: Bool { pthread_getspecific(key) != nil }
}

final class PromiseWaiter: Sendable {
    let semaphore = DispatchSemaphore(value: 0)
}

extension String {
    /// The `payload=` field of a caps string.
    fileprivate var payloadType: Int {
        guard let range = range(of: "payload=") else { return 0 }
        return Int(self[range.upperBound...].prefix(while: \.isNumber)) ?? 0
    }
}

// MARK: C callbacks (user data: a retained PeerCore or PromiseWaiter)

private func peer(_ data: UnsafeMutableRawPointer?) -> PeerCore {
    Unmanaged<PeerCore>.fromOpaque(data!).takeUnretainedValue()
}

private let releaseClosureData: GClosureNotify = { data, _ in
    Unmanaged<AnyObject>.fromOpaque(data!).release()
}

private let releaseData: GDestroyNotify = { data in
    Unmanaged<AnyObject>.fromOpaque(data!).release()
}

private let promiseChanged: GstPromiseChangeFunc = { _, data in
    Unmanaged<PromiseWaiter>.fromOpaque(data!).takeUnretainedValue().semaphore.signal()
}

private let onIceCandidate: cgst_ice_candidate_callback = { _, mline, candidate, data in
    guard let candidate else { return }
    let callbacks = peer(data).callbacks
    CallbackThread.run { callbacks.candidate(String(cString: candidate), Int(mline)) }
}

private let onPadAdded: cgst_pad_callback = { _, pad, data in
    guard let pad, gst_pad_get_direction(pad) == GST_PAD_SRC else { return }
    peer(data).attachReceiver(pad)
}

private let onConnectionState: cgst_notify_callback = { _, _, data in
    peer(data).connectionStateChanged()
}

private let onBuffer: GstPadProbeCallback = { _, info, data in
    guard let info else { return GST_PAD_PROBE_OK }
    let callbacks = peer(data).callbacks
    CallbackThread.run {
        if let buffer = cgst_probe_buffer(info) {
            callbacks.packet(bytes(of: buffer))
        } else if let list = cgst_probe_buffer_list(info) {
            for index in 0..<gst_buffer_list_length(list) {
                if let buffer = gst_buffer_list_get(list, index) { callbacks.packet(bytes(of: buffer)) }
            }
        }
    }
    return GST_PAD_PROBE_OK
}

private func bytes(of buffer: UnsafeMutablePointer<GstBuffer>) -> [UInt8] {
    let size = Int(gst_buffer_get_size(buffer))
    return [UInt8](unsafeUninitializedCapacity: size) { bytes, count in
        count = Int(gst_buffer_extract(buffer, 0, bytes.baseAddress, gsize(size)))
    }
}

private let onBusMessage: GstBusFunc = { _, message, data in
    guard let message, cgst_message_type(message) == GST_MESSAGE_ERROR else { return 1 }
    peer(data).report(connected: false, failed: true)
    return 1
}

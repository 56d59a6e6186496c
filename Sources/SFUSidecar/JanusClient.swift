internal import CallTransport
import Foundation
import Synchronization

/// A publisher of a VideoRoom room, as `listparticipants` lists it.
public struct JanusPublisher: Sendable, Hashable {
    public var id: JanusID
    public var display: String?
}

/// A forwarder of a publisher's stream (`rtp_forward`), as `listforwarders` lists it.
public struct JanusForwarder: Sendable, Hashable {
    public var publisher: JanusID
    public var stream: UInt64
    public var host: String
    public var port: Int
    public var ssrc: UInt32?
    /// `audio`, `video` or `data`.
    public var type: String
}

/// What the sidecar asks of Janus's VideoRoom plugin: the seam the adapter is tested through.
public protocol JanusVideoRoom: Sendable {
    func rooms() throws(SidecarError) -> [JanusID]
    func publishers(in room: JanusID) throws(SidecarError) -> [JanusPublisher]
    func forwarders(in room: JanusID) throws(SidecarError) -> [JanusForwarder]
    /// Forwards the publisher's audio to `host:port` with `ssrc`.
    func forward(room: JanusID, publisher: JanusID, host: String, port: Int, ssrc: UInt32) throws(SidecarError)
    func stopForward(room: JanusID, publisher: JanusID, stream: UInt64) throws(SidecarError)
}

/// Janus's HTTP API (the `janus.transport.http` plugin, `http://HOST:8088/janus`) for the VideoRoom plugin: one
/// session with one handle, made on first use and made again when Janus has forgotten them (a restart, or
/// the session's timeout), each request synchronous.
///
/// Secrets (`apisecret`, the rooms' `secret`, `admin_key`) go into requests only; errors and logs never carry
/// them.
public final class JanusClient: JanusVideoRoom {
    private let url: String
    private let credentials: JanusCredentials
    private let http: HTTPClient
    /// The session and handle, once made.
    private let attachment = Mutex<(session: UInt64, handle: UInt64)?>(nil)

    /// - Parameters:
    ///   - url: Janus's HTTP API, e.g. `http://127.0.0.1:8088/janus`.
    ///   - timeout: Seconds one request may take.
    public init(url: String, credentials: JanusCredentials, timeout: Double = 5) {
        self.url = url.hasSuffix("/") ? String(url.dropLast()) : url
        self.credentials = credentials
        http = HTTPClient(timeout: timeout)
    }

    public func rooms() throws(SidecarError) -> [JanusID] {
        try request("list", VideoRoomRequest(request: "list")).list?.map(\.room) ?? []
    }

    public func publishers(in room: JanusID) throws(SidecarError) -> [JanusPublisher] {
        let reply = try request("listparticipants room \(room)", VideoRoomRequest(request: "listparticipants", room: room))
        return (reply.participants ?? []).filter { $0.publisher == true }.map { JanusPublisher(id: $0.id, display: $0.display) }
    }

    public func forwarders(in room: JanusID) throws(SidecarError) -> [JanusForwarder] {
        var body = VideoRoomRequest(request: "listforwarders", room: room)
        body.secret = credentials.secret(of: room)
        let reply = try request("listforwarders room \(room)", body)
        return (reply.publishers ?? []).flatMap { publisher in
            (publisher.forwarders ?? []).map {
                JanusForwarder(publisher: publisher.publisher_id, stream: $0.stream_id, host: $0.host, port: $0.port, ssrc: $0.ssrc, type: $0.type ?? "audio")
            }
        }
    }

    public func forward(room: JanusID, publisher: JanusID, host: String, port: Int, ssrc: UInt32) throws(SidecarError) {
        var body = VideoRoomRequest(request: "rtp_forward", room: room)
        body.publisher_id = publisher
        body.host = host
        body.host_family = host.contains(":") ? "ipv6" : "ipv4"
        // The publisher's first audio stream (Janus 1.x keeps these fields for it).
        body.audio_port = port
        body.audio_ssrc = ssrc
        body.secret = credentials.secret(of: room)
        body.admin_key = credentials.adminKey
        _ = try request("rtp_forward room \(room) publisher \(publisher)", body)
    }

    public func stopForward(room: JanusID, publisher: JanusID, stream: UInt64) throws(SidecarError) {
        var body = VideoRoomRequest(request: "stop_rtp_forward", room: room)
        body.publisher_id = publisher
        body.stream_id = stream
        body.secret = credentials.secret(of: room)
        body.admin_key = credentials.adminKey
        _ = try request("stop_rtp_forward room \(room) publisher \(publisher)", body)
    }

    // MARK: Requests

    /// Sends `body` to the VideoRoom plugin on the handle; when Janus no longer knows the session or handle,
    /// attaches anew and sends it once more.
    private func request(_ what: String, _ body: VideoRoomRequest) throws(SidecarError) -> VideoRoomReply {
        do {
            return try send(what, body)
        } catch where error.janusCode == 458 || error.janusCode == 459 {
            attachment.withLock { $0 = nil }
            return try send(what, body)
        }
    }

    private func send(_ what: String, _ body: VideoRoomRequest) throws(SidecarError) -> VideoRoomReply {
        let (session, handle) = try attached()
        let reply: JanusReply<VideoRoomReply> = try post(
            "\(url)/\(session)/\(handle)", JanusMessage(janus: "message", transaction: Self.transaction(), apisecret: credentials.apiSecret, body: body),
            what: "janus \(what)")
        guard let data = reply.plugindata?.data else { throw SidecarError("janus \(what)", "no plugin data in Janus's answer") }
        if let code = data.error_code { throw SidecarError("janus \(what)", data.error ?? "error", janusCode: code) }
        return data
    }

    /// The session and handle, made now if there are none.
    private func attached() throws(SidecarError) -> (UInt64, UInt64) {
        if let existing = attachment.withLock({ $0 }) { return existing }
        let created: JanusReply<VideoRoomReply> = try post(
            url, JanusMessage(janus: "create", transaction: Self.transaction(), apisecret: credentials.apiSecret), what: "janus create")
        guard let session = created.data?.id else { throw SidecarError("janus create", "no session id in Janus's answer") }
        var attach = JanusMessage(janus: "attach", transaction: Self.transaction(), apisecret: credentials.apiSecret)
        attach.plugin = "janus.plugin.videoroom"
        let attachedReply: JanusReply<VideoRoomReply> = try post("\(url)/\(session)", attach, what: "janus attach")
        guard let handle = attachedReply.data?.id else { throw SidecarError("janus attach", "no handle id in Janus's answer") }
        attachment.withLock { $0 = (session, handle) }
        return (session, handle)
    }

    private func post<Reply: Decodable>(_ target: String, _ message: JanusMessage, what: String) throws(SidecarError) -> JanusReply<Reply> {
        let body: Data
        do {
            body = try JSONEncoder().encode(message)
        } catch {
            preconditionFailure("a Janus request always encodes: \(error)")
        }
        let answer: HTTPClient.Answer
        do {
            answer = try http.send("POST", target, headers: [("Content-Type", "application/json")], body: Array(body))
        } catch {
            // The transport's error names the URL, never the body with its secrets.
            throw SidecarError(what, error.description)
        }
        guard (200..<300).contains(answer.status) else { throw SidecarError(what, "HTTP \(answer.status)") }
        let reply: JanusReply<Reply>
        do {
            reply = try JSONDecoder().decode(JanusReply<Reply>.self, from: Data(answer.body))
        } catch {
            throw SidecarError(what, "Janus's answer is not what its API documents: \(error)")
        }
        if reply.janus == "error" {
            throw SidecarError(what, reply.error?.reason ?? "error", janusCode: reply.error?.code)
        }
        return reply
    }

    private static func transaction() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}

// MARK: Janus's JSON (field names are Janus's)

private struct JanusMessage: Encodable {
    var janus: String
    var transaction: String
    var apisecret: String?
    var plugin: String?
    var body: VideoRoomRequest?

    init(janus: String, transaction: String, apisecret: String?, body: VideoRoomRequest? = nil) {
        self.janus = janus
        self.transaction = transaction
        self.apisecret = apisecret
        self.body = body
    }
}

private struct VideoRoomRequest: Encodable {
    var request: String
    var room: JanusID?
    var publisher_id: JanusID?
    var stream_id: UInt64?
    var host: String?
    var host_family: String?
    var audio_port: Int?
    var audio_ssrc: UInt32?
    var secret: String?
    var admin_key: String?
}

private struct JanusReply<PluginReply: Decodable>: Decodable {
    struct Created: Decodable { var id: UInt64 }
    struct Failure: Decodable {
        var code: Int
        var reason: String?
    }
    struct PluginData: Decodable { var data: PluginReply }

    var janus: String
    var data: Created?
    var error: Failure?
    var plugindata: PluginData?
}

private struct VideoRoomReply: Decodable {
    struct Room: Decodable { var room: JanusID }
    struct Participant: Decodable {
        var id: JanusID
        var display: String?
        var publisher: Bool?
    }
    struct Forwarder: Decodable {
        var stream_id: UInt64
        var host: String
        var port: Int
        var ssrc: UInt32?
        var type: String?
    }
    struct Publisher: Decodable {
        var publisher_id: JanusID
        var forwarders: [Forwarder]?
    }

    var error_code: Int?
    var error: String?
    var list: [Room]?
    var participants: [Participant]?
    var publishers: [Publisher]?
}

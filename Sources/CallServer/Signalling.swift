import CallProtocol
import SpeakerIO
internal import CallTransport
import SpeakerRTP

/// Something the registry asks the transport or the media loop to do.
enum Effect: Equatable, Sendable {
    /// Send a message on a connection.
    case send(ConnectionID, ServerMessage)
    /// Close a connection (after what was sent before) with a WebSocket close code: 1000 normal,
    /// 1008 policy violation (a client over its message budget).
    case close(ConnectionID, code: UInt16 = 1000)
    /// Change the media plane.
    case media(MediaCommand)
    /// Several nodes: the room of a `join` or `observe` is not on this node; ask the cluster where it
    /// lives, then redirect the client there, or open it here and handle the message again.
    case locate(ConnectionID, CallRoomID, ClientMessage)
    /// Open, feed or close a browser's WebRTC session (`WebRTCSessions`).
    case webRTC(WebRTCCommand)
}

/// What the registry asks of a connection's WebRTC session.
enum WebRTCCommand: Equatable, Sendable {
    /// Answer the connection's offer with a new session; the participant publishes with `ssrc` (nil:
    /// a subscriber, which only receives). The answer comes back through `RoomRegistry.webRTCAnswered`
    /// or `webRTCRefused`.
    case open(ConnectionID, room: CallRoomID, participant: ParticipantID, ssrc: SSRC?, offer: String)
    /// A browser's candidate for the connection's session.
    case candidate(ConnectionID, ICECandidate)
    /// End the session (the participant left, was removed, or its connection closed).
    case close(ConnectionID)
}

/// What the media loop must know of the rooms: who may send, from where, and who receives.
enum MediaCommand: Equatable, Sendable {
    /// A room appears: the engine gets a room for it. `levelsOnly`: its publishers' RFC 6464 levels are what
    /// the engine hears, and nothing of it is decoded (as in every room of `serve --levels-only`).
    case openRoom(room: CallRoomID, levelsOnly: Bool = false)
    /// A room goes: its streams and members go with it.
    case closeRoom(room: CallRoomID)
    /// A member that receives forwarded audio on `receiver` (nil: receives none), and, when
    /// `sender` is set, publishes with `ssrc` from that address.
    case addMember(room: CallRoomID, participant: ParticipantID, ssrc: SSRC?, sender: MediaSource?, receiver: MediaEndpoint?)
    /// A member whose audio arrives as raw PCM over a WebSocket (`/v1/pcm`, LiveKit's track egress), not RTP:
    /// the engine hears its source; nothing of it is forwarded.
    case addStreamed(room: CallRoomID, participant: ParticipantID, input: StreamedInput)
    case removeMember(room: CallRoomID, participant: ParticipantID)
    /// A member's media addresses change: a WebRTC session's relay socket now sends (`sender`, for a
    /// publisher) and receives the mix of the others (`receiver`), with `mixSSRC`, the only SSRC the
    /// relay passes on. The receiver is the member's alone: another member that named it loses it. Its
    /// mute state stays.
    case bind(room: CallRoomID, participant: ParticipantID, sender: MediaSource?, receiver: MediaEndpoint?, mixSSRC: SSRC?)
    /// A publisher's packets are dropped while muted (its audio stream disabled counts as muted).
    case setMuted(room: CallRoomID, participant: ParticipantID, muted: Bool)
}

/// A streamed publisher's audio: the source its WebSocket fills and the media loop pulls (compared by identity).
struct StreamedInput: Equatable, Sendable {
    let source: PCMHopSource

    static func == (a: StreamedInput, b: StreamedInput) -> Bool { a.source === b.source }
}

/// Where a publisher's RTP must come from: a host, and a port unless any port of the host is accepted
/// (plain-RTP ingest without a port).
struct MediaSource: Hashable, Sendable {
    var host: String
    var port: Int?
    /// The RFC 8285 extension id of the publisher's RFC 6464 audio level (its SDP's `a=extmap` of
    /// `ssrc-audio-level`): senders number their extensions themselves and SFUs forward them unchanged.
    var audioLevelID = 1
}

extension MediaSource {
    /// An ingest's `source`: `HOST`, `HOST:PORT` or `[V6]:PORT` with a numeric host (a name would be
    /// resolved, blocking, on the signalling thread), that can send to the RTP socket: of its address
    /// family, and not the unspecified address (`0.0.0.0`, `::`), which no datagram comes from.
    /// - Throws: `.malformedMessage` saying which rule the text breaks.
    init(ingest text: String, rtp: UDPSocket.OwnAddresses, audioLevelID: Int = 1) throws(CallError) {
        guard (1...255).contains(audioLevelID) else { throw CallError(.malformedMessage, "audioLevelId must be 1-255") }
        let address: SocketAddress
        let anyPort: Bool
        if let withPort = SocketAddress(numeric: text) {
            (address, anyPort) = (withPort, false)
        } else if let hostOnly = SocketAddress(numericHost: text, port: 0) {
            (address, anyPort) = (hostOnly, true)
        } else {
            throw CallError(
                .malformedMessage, "source \(text): expected a numeric HOST, HOST:PORT or [IPV6]:PORT (host names are not resolved)")
        }
        guard !address.isUnspecified else {
            throw CallError(.malformedMessage, "source \(text): the unspecified address sends nothing; give the sender's own address")
        }
        guard address.isIPv6 == rtp.host.isIPv6 else {
            let family = { (ipv6: Bool) in ipv6 ? "IPv6" : "IPv4" }
            throw CallError(
                .malformedMessage,
                "source \(text) is \(family(address.isIPv6)), but the RTP socket is \(family(rtp.host.isIPv6)): its packets could never arrive")
        }
        self.init(host: address.host, port: anyPort ? nil : address.port, audioLevelID: audioLevelID)
    }
}

/// Where forwarded RTP is sent.
struct MediaEndpoint: Hashable, Sendable {
    var host: String
    var port: Int
}

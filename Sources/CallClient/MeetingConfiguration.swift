/// How to join a meeting.
public struct MeetingConfiguration: Sendable {
    /// The room server, `ws://HOST:PORT` (IPv6 as `ws://[::1]:PORT`), or `wss://HOST:PORT` for TLS
    /// (the server's certificate is verified; HOST a name or an IPv4 address).
    public var server: String
    /// For a `wss://` server: a PEM file of the certificate authorities to trust instead of the
    /// system's (a private or test CA); nil: the system's.
    public var certificateAuthorityFile: String?
    /// The room to join (`activespeaker serve --room`, or `POST /v1/rooms`).
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
    /// The microphone: the default one (`.device(nil)`: the first `getMics()` lists), a named device, a
    /// custom track, or `.none` to join without one. Joining with the default one and `micEnabled` while
    /// there is no microphone at all fails (3059) before connecting: `.none` (or `micEnabled = false`)
    /// joins without one.
    public var microphone: MicrophoneChoice = .device(nil)
    /// Where the others' audio is played (every forwarded stream, decoded and mixed): by default the
    /// system's default output (ALSA `default`). An output that cannot be opened (a machine without a
    /// sound card) is an `error` event (3002) once joined, and the meeting goes on without playback;
    /// `.none` plays nothing (a bot, a recorder, a test).
    public var speaker: SpeakerChoice = .device("default")
    /// The most events `Meeting.events` keeps for a reader that falls behind (the newest; older ones are
    /// dropped): nobody reading the stream costs at most this many events' memory.
    public var eventsBufferSize = 1024
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

    /// A configuration for `roomId` on `server` with `token`; every other setting has its default.
    public init(server: String, roomId: String, token: String) {
        self.server = server
        self.roomId = roomId
        self.token = token
    }
}

import CallClient
import CallProtocol
import Foundation
import SpeakerDevices
import Synchronization

/// `activespeaker join`: a client of the room server that prints the meeting's events.
struct JoinCommand: Command {
    static let name = "join"
    static let summary = "Join a room of 'serve' with a microphone and print its events."
    static let synopsis = "join --server URL --room ID --token TOKEN [--mic FILE|alsa:NAME|none] [options]"
    static let overview = """
        A client built on the CallClient SDK: joins the room, publishes the
        microphone as Opus/RTP, receives the others' audio, and prints every
        meeting event as a JSON line.
        """
    static let options: [OptionSpec] = [
        .value("server", "URL", repeatable: true, help: """
            The server, ws://127.0.0.1:8080 (IPv6: ws://[::1]:8080), or
            wss://HOST:PORT for TLS (the certificate is verified).
            Repeat it to name other nodes of the same service:
            joining tries them in order when the first is down,
            reconnecting cycles through them all.
            """),
        .value("ca", "FILE", help: """
            For wss: trust the certificate authorities in this PEM file
            instead of the system's (a private or test CA).
            """),
        .value("room", "ID", help: "The room id."),
        .value("token", "TOKEN", help: "A token of the room (activespeaker token)."),
        .value("mic", "FILE|alsa:NAME|none", help: """
            Microphone: an audio file played in real time, an
            ALSA device (alsa:default, alsa:hw:0), or none.
            Default: the first ALSA microphone.
            """),
        .value("speaker", "alsa:NAME|none", help: """
            Play the others' audio (decoded, mixed) on this ALSA
            device (alsa:default, alsa:plughw:0); default none.
            """),
        .value("name", "TEXT", help: "Display name (default: the token's)."),
        .flag("loop", help: "Repeat the --mic file."),
        .value("silence-after", "SECONDS", help: "Silence after the --mic file (default 0)."),
        .value("start-at", "UNIX_TIME", help: """
            Play the --mic file from this wall-clock time
            (seconds since 1970, e.g. $(($(date +%s)+5))),
            so several clients play their files in step.
            """),
        .flag("muted", help: "Join with the microphone muted."),
        .flag("webcam", help: "Join with the (signalled) video on."),
        .flag("no-reconnect", help: """
            End when the connection is lost (a meeting-left
            line, then exit 0) instead of reconnecting (for up
            to 30 s, following the server's redirects).
            """),
        .value("duration", "SECONDS", help: "Leave after this long (default: at the file's end, or Ctrl-C)."),
        .value("levels", "MS", help: """
            Every MS milliseconds (a multiple of 10), print the
            audio levels: the server sends them every 200 ms,
            so MS under 200 prints each one.
            """),
    ]
    static let epilogue = """
        OUTPUT (JSON Lines; t = seconds since joining):
          {"t":0.012,"type":"joined","participant":"alice",
            "participants":["alice","bob"]}
          {"t":1.310,"type":"speaker-changed","participant":"bob"}   (null: nobody)
          {"t":…,"type":"participant-joined","participant":"carol","name":"Carol"}
          {"t":…,"type":"participant-left","participant":"carol","reason":"left"}
            (also removed, timed-out, room-closed)
          {"t":…,"type":"mic-muted","participant":"bob","muted":true}
          {"t":…,"type":"stream-enabled"|"stream-disabled","participant":…,
            "kind":"audio"}
          {"t":…,"type":"speaking-while-muted"}
          {"t":…,"type":"message","from":…,"text":…}
          {"t":…,"type":"audio-levels","levels":{"alice":-23.0,"bob":-61.5}}
          {"t":…,"type":"error","code":4004,"message":"room demo is full"}
          {"t":…,"type":"reconnecting"}   (connection lost: connecting again)
          {"t":…,"type":"reconnected","participants":["alice","bob"]}
          {"t":…,"type":"meeting-left","reason":"connection-lost","code":3001,
            "message":…}   (also removed 4011, room-closed 4013)
          {"t":…,"type":"left","packets":{"bob":512}}
            (forwarded RTP packets received per participant)

        EXIT STATUS: 0 after leaving (--duration, the file's end, Ctrl-C, or the
        meeting ending by itself: removed, room closed, reconnecting given up,
        said by a meeting-left line); 1 if joining fails (the error line says why:
        invalid token 4001, expired 4002, room not found 4003, room full 4004,
        network 3001) or the microphone cannot be opened (no microphone 3059,
        device failed 3002; nothing is joined); 64 command-line error.
        """

    let configuration: MeetingConfiguration
    let duration: Double?
    /// Seconds between printed audio-levels lines, or nil to print none.
    let levelInterval: Double?

    init(_ options: ParsedOptions) throws(CommandError) {
        let servers = options.all("server")
        guard let server = servers.first else { throw .usage("missing --server ws://HOST:PORT") }
        for server in servers {
            guard server.lowercased().hasPrefix("wss://") || server.lowercased().hasPrefix("ws://") else {
                throw .usage("--server \(server): expected ws://HOST:PORT or wss://HOST:PORT")
            }
        }
        let secure = servers.contains { $0.lowercased().hasPrefix("wss://") }
        if options.value("ca") != nil && !secure { throw .usage("--ca is for a wss:// server") }
        guard let room = options.value("room") else { throw .usage("missing --room") }
        guard let token = options.value("token") else { throw .usage("missing --token") }
        var configuration = MeetingConfiguration(server: server, roomId: room, token: token)
        configuration.fallbackServers = Array(servers.dropFirst())
        configuration.reconnect = !options.has("no-reconnect")
        configuration.certificateAuthorityFile = options.value("ca")
        configuration.micEnabled = !options.has("muted")
        if let name = options.value("name") {
            guard !name.isEmpty, name.count <= 128 else { throw .usage("--name: 1-128 characters") }
            configuration.displayName = name
        }
        configuration.webcamEnabled = options.has("webcam")
        let silence = try options.value("silence-after").map { text throws(CommandError) in
            guard let value = Double(text), value >= 0 else { throw .usage("--silence-after \(text): expected seconds ≥ 0") }
            return value
        } ?? 0
        let startAt = try options.value("start-at").map { text throws(CommandError) in
            guard let value = Double(text), value > 1_000_000_000 else { throw .usage("--start-at \(text): expected seconds since 1970") }
            return Date(timeIntervalSince1970: value)
        }
        if startAt != nil, ["none", nil].contains(options.value("mic")) || options.value("mic")!.hasPrefix("alsa:") {
            throw .usage("--start-at plays a --mic FILE; give one")
        }
        switch options.value("speaker") {
        case nil, "none"?: configuration.speaker = .none
        case let text? where text.hasPrefix("alsa:") && text.count > 5: configuration.speaker = .device(String(text.dropFirst(5)))
        case let text?: throw .usage("--speaker \(text): expected alsa:NAME or none")
        }
        var fileLength: Double?
        switch options.value("mic") {
        case nil: configuration.microphone = .device(nil)
        case "none"?: configuration.microphone = .none
        case let text? where text.hasPrefix("alsa:"): configuration.microphone = .device(String(text.dropFirst(5)))
        case let path?:
            do {
                let track = try CustomMicrophoneTrack.file(path, loop: options.has("loop"), silenceAfter: silence, startAt: startAt)
                configuration.microphone = .custom(track)
                if !options.has("loop"), let length = track.duration {
                    fileLength = length + max(0, startAt?.timeIntervalSinceNow ?? 0)
                }
            } catch {
                throw .failure(error.message)
            }
        }
        self.configuration = configuration
        duration = try options.value("duration").map { text throws(CommandError) in
            guard let value = Double(text), value > 0 else { throw .usage("--duration \(text): expected seconds > 0") }
            return value
        } ?? fileLength
        levelInterval = try LiveOptions.levelTicks(options.value("levels")).map { Double($0) / 100 }
        if !options.positionals.isEmpty { throw .usage("unexpected argument \(options.positionals[0])") }
    }

    func run() throws(CommandError) {
        let output = LineOutput(command: Self.name)
        let start = Date()
        var configuration = self.configuration
        if case .device(let name) = configuration.microphone {
            do throws(MeetingError) {
                configuration.microphone = .device(try Self.checkMicrophone(name))
            } catch {
                throw Self.failed(error, time: Date().timeIntervalSince(start), output: output)
            }
        }
        let meeting = Meeting(configuration: configuration)
        let levelInterval = self.levelInterval
        // Set when the events end: the meeting was left (removed, room closed, connection lost).
        let ended = DispatchSemaphore(value: 0)
        let printer = Thread {
            let semaphore = DispatchSemaphore(value: 0)
            Task {
                var lastLevels = -Double.infinity
                for await event in meeting.events {
                    let time = Date().timeIntervalSince(start)
                    var levels = false
                    if case .audioLevels = event, let levelInterval {
                        // The server's 200 ms arrive with jitter: half a period of slack.
                        levels = time - lastLevels >= levelInterval - Self.levelPeriod / 2
                        if levels { lastLevels = time }
                    }
                    if let line = Self.line(for: event, time: time, levels: levels) {
                        output.write(line)
                    }
                }
                ended.signal()
                semaphore.signal()
            }
            semaphore.wait()
        }
        printer.start()
        let joined = DispatchSemaphore(value: 0)
        let failure = Mutex<MeetingError?>(nil)
        Task {
            do throws(MeetingError) {
                try await meeting.join()
            } catch {
                failure.withLock { $0 = error }
            }
            joined.signal()
        }
        joined.wait()
        if let error = failure.withLock({ $0 }) {
            throw Self.failed(error, time: Date().timeIntervalSince(start), output: output)
        }
        StopRequest.install()
        while !StopRequest.isRequested, meeting.localParticipant != nil, ended.wait(timeout: .now()) == .timedOut {
            if let duration, Date().timeIntervalSince(start) >= duration { break }
            usleep(20_000)
        }
        let packets = meeting.receivedPackets
        meeting.leave()
        var counts = JSONLine()
        for (id, count) in packets.sorted(by: { $0.key < $1.key }) { counts.add(id, count) }
        var line = JSONLine()
        line.add("t", Date().timeIntervalSince(start), decimals: 3)
        line.add("type", "left")
        line.add("packets", counts)
        output.write(line.rendered)
    }

    /// How often the server sends audio levels, in seconds.
    static let levelPeriod = 0.2

    /// Opens the ALSA microphone `name` (nil: the first one alsa-lib lists) and closes it again, so
    /// that one that cannot be opened stops `join` before it joins rather than leaving it in the room
    /// without a microphone.
    /// - Returns: The device's name.
    /// - Throws: `MeetingError` 3059 when there is no microphone, 3002 when it cannot be opened.
    /// A join that cannot go on: the error as an event line (as `line(for: .error)` writes it), then the
    /// failure that ends the command.
    static func failed(_ error: MeetingError, time: Double, output: LineOutput) -> CommandError {
        if let line = line(for: .error(error), time: time, levels: false) { output.write(line) }
        return .failure("join: \(error)")
    }

    static func checkMicrophone(_ name: String?) throws(MeetingError) -> String {
        // ALSA's `null` captures nothing but silence: never the default (the SDK's rule too).
        guard let device = name ?? AudioDevices.list().first(where: { $0.canCapture && $0.name != "null" })?.name else {
            throw MeetingError(code: .noMicrophoneFound, "no microphone device found; give --mic FILE, alsa:NAME or none")
        }
        do {
            _ = try ALSAMicrophone(device: device)
        } catch {
            throw MeetingError(code: .audioDeviceFailed, "microphone alsa:\(device) cannot be opened: \(error)")
        }
        return device
    }

    static func line(for event: MeetingEvent, time: Double, levels: Bool) -> String? {
        var line = JSONLine()
        line.add("t", time, decimals: 3)
        switch event {
        case .meetingJoined(let participants):
            line.add("type", "joined")
            line.add("participant", participants.first(where: \.isLocal)?.id)
            line.add("participants", participants.map(\.id))
        case .meetingLeft(let reason, let error):
            guard let error else { return nil }
            line.add("type", "meeting-left")
            line.add("reason", reason.rawValue)
            line.add("code", error.code.rawValue)
            line.add("message", error.message)
        case .participantJoined(let participant):
            line.add("type", "participant-joined")
            line.add("participant", participant.id)
            line.add("name", participant.displayName)
        case .participantLeft(let participant, let reason):
            line.add("type", "participant-left")
            line.add("participant", participant.id)
            line.add("reason", reason.rawValue)
        case .participantsChanged:
            return nil  // the events above say each change
        case .speakerChanged(let id):
            line.add("type", "speaker-changed")
            line.add("participant", id)
        case .streamEnabled(let id, let kind), .streamDisabled(let id, let kind):
            if case .streamEnabled = event { line.add("type", "stream-enabled") } else { line.add("type", "stream-disabled") }
            line.add("participant", id)
            line.add("kind", kind.rawValue)
        case .micMuted(let id, let muted, let by):
            line.add("type", "mic-muted")
            line.add("participant", id)
            line.add("muted", muted)
            if let by { line.add("by", by) }
        case .audioLevels(let values):
            guard levels else { return nil }
            line.add("type", "audio-levels")
            var object = JSONLine()
            for (id, level) in values.sorted(by: { $0.key < $1.key }) { object.add(id, level, decimals: 1) }
            line.add("levels", object)
        case .message(let from, let body):
            line.add("type", "message")
            line.add("from", from)
            switch body {
            case .text(let text): line.add("text", text)
            case .data(let bytes): line.add("bytes", bytes.count)
            }
        case .speakingWhileMuted:
            line.add("type", "speaking-while-muted")
        case .error(let error):
            line.add("type", "error")
            line.add("code", error.code.rawValue)
            line.add("message", error.message)
        case .reconnecting:
            line.add("type", "reconnecting")
        case .reconnected(let participants):
            line.add("type", "reconnected")
            line.add("participants", participants.map(\.id))
        }
        return line.rendered
    }
}

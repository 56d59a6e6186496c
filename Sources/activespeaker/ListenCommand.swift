import Foundation
import SpeakerCore
import SpeakerEval
import SpeakerIO
import SpeakerMedia
import SpeakerRTP

/// `activespeaker listen`: who is speaking now, from RTP/Opus streams on UDP.
struct ListenCommand: Command {
    static let name = "listen"
    static let summary = "Follow who is speaking, live, from RTP/Opus streams on UDP."
    static let synopsis = "listen --udp HOST:PORT [--mode decode|levels] [options]"

    static let overview = """
        Receives RTP (RFC 3550) with Opus payloads (RFC 7587) on one or more UDP
        addresses, IPv4 or IPv6, and treats every SSRC as one stream of one room.
        Each stream passes a jitter buffer (reordering, duplicates, sequence
        wrap-around, timestamp jumps; a lost packet is decoded from the next
        packet's in-band FEC where it has one, else concealed by libopus; no
        packets, as in DTX, is silence). The buffers share one playout clock:
        streams play by capture time - from RTCP sender reports where senders
        send them, else from their fastest recent packets - plus one delay for
        all, which grows while packets come later. Every 10 ms of wall-clock
        time the engine decides, so t is seconds since the start.
        decode: Opus is decoded and the engine's VAD hears the audio.
        levels: nothing is decoded; the RFC 6464 audio levels in the RTP header
        extension (the one-byte or two-byte form of RFC 8285) drive a level-based
        detector with the engine's turn-taking rules, for servers that cannot
        decode (see docs/live.md).
        Malformed packets are counted and dropped. A stream that has had no packet
        accepted for --stream-timeout seconds is removed (its utterance ends; if it
        held the floor, nobody holds it); its SSRC sending again adds it again.
        """

    static let options: [OptionSpec] = [
        .value("udp", short: "u", "HOST:PORT", repeatable: true, help: """
            Receive on this address: 127.0.0.1:5004,
            [::1]:5004, 0.0.0.0:5004. Repeatable.
            """),
        .value("mode", "decode|levels", help: "decode (default) or levels."),
        .value("extmap-audio-level", "ID", help: """
            The header-extension id of the RFC 6464 audio
            level (SDP a=extmap:ID urn:ietf:params:rtp-
            hdrext:ssrc-audio-level), 1-255. Needed by
            --mode levels.
            """),
        .value("ssrc", "ID=SSRC", repeatable: true, help: """
            Name the stream of an SSRC (decimal or 0x hex),
            e.g. alice=0x1234abcd. Others are ssrc-<hex>.
            """),
        .value("payload-type", "PT", help: "Accept only this payload type (default: any)."),
        .value("jitter", "MS", help: """
            Smallest playout delay after capture (default 60);
            the room's delay grows above it while packets come
            later, up to --max-jitter.
            """),
        .value("max-jitter", "MS", help: "Largest playout delay (default 500)."),
        .value("stream-timeout", "SECONDS", help: """
            Remove a stream after this long without an
            accepted packet (default 30; longer than
            --jitter).
            """),
        .value("duration", "SECONDS", help: "Stop after this long (default: until Ctrl-C)."),
        .value("levels", "MS", help: "Every MS milliseconds, write the levels."),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: """
            Engine settings, as for detect. In levels mode the
            keys that act on levels apply (vad.levelSNR,
            vad.minimumLevel, vad.onset*, vad.hangover,
            leakage.*, selection.*); see docs/live.md.
            """),
        .value("priority", "realtime|normal", help: """
            How the receiving loop's thread is scheduled
            (default realtime: SCHED_RR 10, so a busy machine
            cannot make its 10 ms clock fall behind; needs
            root, CAP_SYS_NICE or ulimit -r 10, else it runs
            normal and says why on standard error).
            """),
        .flag("json", help: "Write JSON Lines even on a terminal."),
        .flag("stats", help: """
            End with a stats line: packets, malformed
            packets by reason, loss, CPU time.
            """),
    ]

    static let epilogue = """
        OUTPUT: the lines of detect (speech, dominant, levels), and when a new SSRC
        appears:
          {"t":0.420,"type":"stream","event":"added","stream":"alice",
            "ssrc":"0x1234abcd"}
        and when a stream is removed after --stream-timeout, with the time of its
        last accepted packet:
          {"t":41.730,"type":"stream","event":"removed","stream":"alice",
            "ssrc":"0x1234abcd","lastPacket":11.730}
        and with --stats, last:
          {"type":"stats","duration":30.000,"packets":3000,"malformed":{"tooShort":0,
            "badVersion":0,...},"ignored":0,"streams":{"alice":{"packets":1500,"lost":2,
            "concealed":1,"recovered":1,"silenced":0,"late":0,"duplicates":1,...,
            "senderReports":30,"removed":0}},"timing":{"alice":"rtcp"},
            "playoutDelay":0.070,"cpuSeconds":0.412}
        A stream's stats add up all the times its SSRC was a stream; "removed" counts
        its removals after --stream-timeout. "lost" = "concealed" (libopus PLC) +
        "recovered" (in-band FEC) + "silenced" (nothing to conceal from); "timing"
        says whether each present stream is placed by its sender reports ("rtcp")
        or by its arrivals ("arrival"); "playoutDelay" is the room's delay at
        the end.
        In levels mode, levels lines give each stream's last RFC 6464 level. Standard
        error says once where RTP is received, with the bound ports (HOST:0 binds
        any free port):
          activespeaker: receiving RTP on 127.0.0.1:40123, [::1]:40124

        DELAY: a packet plays the room's playout delay (--jitter ms at least) after
        its capture, so events come that much later than with live capture, plus
        the engine's decision delay (t - since).

        EXIT STATUS: 0 after Ctrl-C or --duration; 1 if an address cannot be bound;
        64 command-line error.
        """

    let addresses: [String]
    let mode: RTPStreamReceiver.Mode
    let audioLevelID: Int?
    let names: [UInt32: String]
    let payloadType: UInt8?
    let jitter: JitterBufferConfiguration
    /// Ticks without an accepted packet after which a stream is removed.
    let streamTimeoutTicks: Int
    let durationTicks: Int?
    let levelTicks: Int?
    let configuration: EngineConfiguration
    let json: Bool
    let stats: Bool
    let priority: LoopPriority

    init(_ options: ParsedOptions) throws(CommandError) {
        addresses = options.all("udp")
        if addresses.isEmpty { throw .usage("no address given (--udp HOST:PORT)") }
        for address in addresses { try Self.checkSyntax(address) }
        let modeText = options.value("mode") ?? "decode"
        guard let mode = RTPStreamReceiver.Mode(rawValue: modeText) else { throw .usage("--mode \(modeText): expected decode or levels") }
        self.mode = mode
        let priorityText = options.value("priority") ?? LoopPriority.realtime.rawValue
        guard let priority = LoopPriority(rawValue: priorityText) else { throw .usage("--priority \(priorityText): expected realtime or normal") }
        self.priority = priority
        audioLevelID = try options.value("extmap-audio-level").map { text throws(CommandError) in
            guard let id = Int(text), (1...255).contains(id) else { throw .usage("--extmap-audio-level \(text): expected an id 1-255") }
            return id
        }
        if mode == .levels && audioLevelID == nil {
            throw .usage("--mode levels needs --extmap-audio-level ID (the a=extmap id of ssrc-audio-level)")
        }
        var names: [UInt32: String] = [:]
        for argument in options.all("ssrc") {
            guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else { throw .usage("--ssrc \(argument): expected ID=SSRC") }
            let text = argument[argument.index(after: equals)...].lowercased()
            let value = text.hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
            guard let ssrc = value else { throw .usage("--ssrc \(argument): the SSRC is a 32-bit number (decimal or 0x hex)") }
            let id = String(argument[..<equals])
            guard !names.values.contains(id), names[ssrc] == nil else { throw .usage("--ssrc \(argument): given twice") }
            names[ssrc] = id
        }
        self.names = names
        payloadType = try options.value("payload-type").map { text throws(CommandError) in
            guard let value = UInt8(text), value < 128 else { throw .usage("--payload-type \(text): expected 0-127") }
            return value
        }
        var jitter = JitterBufferConfiguration()
        if let text = options.value("jitter") {
            guard let milliseconds = Int(text), (0...1000).contains(milliseconds) else { throw .usage("--jitter \(text): expected 0-1000 ms") }
            jitter.delay = Double(milliseconds) / 1000
        }
        if let text = options.value("max-jitter") {
            guard let milliseconds = Int(text), (0...1000).contains(milliseconds) else { throw .usage("--max-jitter \(text): expected 0-1000 ms") }
            jitter.maximumDelay = Double(milliseconds) / 1000
        }
        jitter.maximumDelay = max(jitter.maximumDelay, jitter.delay)
        self.jitter = jitter
        streamTimeoutTicks = try Self.streamTimeoutTicks(options.value("stream-timeout"), jitter: jitter)
        durationTicks = try LiveOptions.durationTicks(options.value("duration"))
        levelTicks = try LiveOptions.levelTicks(options.value("levels"))
        configuration = try options.engineConfiguration()
        json = options.has("json")
        stats = options.has("stats")
        if !options.positionals.isEmpty { throw .usage("unexpected argument \(options.positionals[0])") }
    }

    func run() throws(CommandError) {
        var sockets: [UDPSocket] = []
        for address in addresses {
            do {
                sockets.append(try UDPSocket(address: address))
            } catch let error as SpeakerIOError {
                throw .failure(error.description)
            } catch {
                throw .failure("\(address): \(error)")
            }
        }
        // Once, on standard error: where RTP is received (the bound ports, for `HOST:0`). Senders may
        // start from this line on.
        Console.error("receiving RTP on " + sockets.map(\.localAddress.description).joined(separator: ", "))
        let session: ListenSession
        do {
            session = try ListenSession(
                mode: mode, configuration: configuration, jitter: jitter, streamTimeoutTicks: streamTimeoutTicks,
                output: LiveOutput(view: LiveOptions.view(json: json), levelTicks: levelTicks))
        } catch {
            throw .usage("\(error)")
        }
        // This thread runs the 10 ms loop and the engine (docs/call.md, Threads: why realtime).
        let scheduling = LoopScheduling.apply(priority)
        if let refusal = scheduling.refusal { Console.error("the loop runs at normal priority: \(refusal)") }
        StopRequest.install()
        let cpuAtStart = Self.cpuSeconds()
        var malformed: [RTPMalformation: Int] = [:]
        var packets = 0, ignored = 0, senderReports = 0
        // The first error writing the output stops the loop, and is thrown after it.
        var failure: CommandError?
        session.runner.start()
        session.runner.run(
            on: sockets,
            until: { failure != nil || StopRequest.isRequested || durationTicks.map { session.ticks >= $0 } ?? false },
            beforeTick: {},
            receive: { bytes, _ in
                if RTPPacket.isRTCP(bytes) {
                    if let report = RTCPSenderReport.parse(bytes), session.runner.receive(report) {
                        senderReports += 1
                    } else {
                        ignored += 1
                    }
                    return
                }
                switch RTPPacket.parse(bytes, audioLevelID: audioLevelID) {
                case .malformed(let reason):
                    malformed[reason, default: 0] += 1
                case .packet(let packet):
                    if let payloadType, packet.payloadType != payloadType {
                        ignored += 1
                        return
                    }
                    packets += 1
                    let name = names[packet.ssrc] ?? "ssrc-" + Self.hex(packet.ssrc)
                    do throws(CommandError) {
                        if try session.receive(packet, datagram: bytes, name: name) == .invalidPayload {
                            malformed[.invalidOpus, default: 0] += 1
                        }
                    } catch {
                        failure = error
                    }
                }
            },
            hears: { false }, hearing: { _, _ in },
            ticked: { _, _ in
                do throws(CommandError) {
                    try session.ticked()
                } catch {
                    failure = error
                }
            })
        if let failure { throw failure }
        try session.finish()
        if stats {
            var reasons = JSONLine()
            for reason in RTPMalformation.allCases { reasons.add(reason.rawValue, malformed[reason] ?? 0) }
            var streams = JSONLine(), timing = JSONLine()
            for (name, statistics, removals) in session.streamStatistics {
                timing.add(name, session.usesSenderReports(name) ? "rtcp" : "arrival")
                var entry = JSONLine()
                entry.add("packets", statistics.packets)
                entry.add("played", statistics.played)
                entry.add("lost", statistics.lost)
                entry.add("concealed", statistics.concealed)
                entry.add("recovered", statistics.recovered)
                entry.add("silenced", statistics.silenced)
                entry.add("late", statistics.late)
                entry.add("duplicates", statistics.duplicates)
                entry.add("overflowed", statistics.overflowed)
                entry.add("restarts", statistics.restarts)
                entry.add("jumps", statistics.jumps)
                entry.add("spurts", statistics.spurts)
                entry.add("realignments", statistics.realignments)
                entry.add("senderReports", statistics.senderReports)
                entry.add("removed", removals)
                streams.add(name, entry)
            }
            var line = JSONLine()
            line.add("type", "stats")
            line.add("duration", Double(session.ticks) / 100, decimals: 3)
            line.add("packets", packets)
            line.add("malformed", reasons)
            line.add("ignored", ignored)
            line.add("senderReports", senderReports)
            line.add("streams", streams)
            line.add("timing", timing)
            line.add("playoutDelay", Double(session.clock.delay) / Double(AnalysisFormat.sampleRate), decimals: 3)
            line.add("cpuSeconds", Self.cpuSeconds() - cpuAtStart, decimals: 3)
            let lost = session.streamStatistics.reduce(0) { $0 + $1.statistics.lost }
            let cpu = JSONLine.fixed(Self.cpuSeconds() - cpuAtStart, decimals: 3)
            try session.output.writeLine(
                line, note: "stats: \(packets) packets, \(malformed.values.reduce(0, +)) malformed, \(lost) lost, CPU \(cpu) s")
        }
        try session.output.finish()
    }

    /// `--stream-timeout SECONDS` as ticks (default 30 s): a positive number of seconds, a whole number of
    /// ticks after rounding, longer than the jitter delay (a shorter one would remove a stream while its
    /// last packets still wait in the jitter buffer).
    static func streamTimeoutTicks(_ text: String?, jitter: JitterBufferConfiguration) throws(CommandError) -> Int {
        guard let text else { return 3000 }
        guard let seconds = Double(text), seconds > 0, seconds <= 1e7 else {
            throw .usage("--stream-timeout \(text): expected a positive number of seconds")
        }
        let ticks = Int((seconds * 100).rounded())
        guard Double(ticks) / 100 > jitter.delay else {
            throw .usage("--stream-timeout \(text): must be longer than the jitter delay (\(Int((jitter.delay * 1000).rounded())) ms)")
        }
        return ticks
    }

    /// Refuses an `--udp` value that is not `HOST:PORT` / `[IPV6]:PORT` with a port 0-65535, as a
    /// command-line mistake. Whether the host exists is found out when binding.
    static func checkSyntax(_ address: String) throws(CommandError) {
        let expected = "expected HOST:PORT (IPv6 as [ADDRESS]:PORT)"
        let port: Substring
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]"), address[close...].hasPrefix("]:") else {
                throw .usage("--udp \(address): \(expected)")
            }
            port = address[address.index(close, offsetBy: 2)...]
        } else {
            guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
                address[..<colon].firstIndex(of: ":") == nil
            else { throw .usage("--udp \(address): \(expected)") }
            port = address[address.index(after: colon)...]
        }
        guard !port.isEmpty, port.allSatisfy(\.isASCII), port.allSatisfy(\.isNumber), let number = Int(port), number <= 65535 else {
            throw .usage("--udp \(address): the port must be a number 0-65535")
        }
    }

    static func hex(_ ssrc: UInt32) -> String {
        let digits = String(ssrc, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }

    /// User plus system CPU time of the process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// The streams of `listen`, one room of an `RTPRoomRunner`: each SSRC is a stream, decoded (decode mode)
/// or heard by its RFC 6464 levels (level-only mode); this adds what `listen` alone does: streams added on
/// their first packet and removed when they stop sending, counters per name, and the output.
///
/// A stream is removed once it has had no packet accepted for the timeout; its SSRC sending again makes
/// it a new stream, with a fresh jitter buffer and the same name.
final class ListenSession {
    let output: LiveOutput
    /// The room and its streams, by the output's stream index.
    let runner: RTPRoomRunner<String, Int>
    private static let room = "listen"
    private var streams: ListenStreams
    /// Per stream name, in the order the names first appeared: the counters of its removed receivers (a
    /// present receiver's are added when asked) and how many times it was removed.
    private var pastTotals: [(name: String, statistics: RTPStreamStatistics, removals: Int)] = []
    /// The position of each name in `pastTotals`.
    private var positionOfName: [String: Int] = [:]
    /// The indexes of the streams whose receivers are in the runner, ascending.
    private var receiving: [Int] = []

    /// - Parameters:
    ///   - streamTimeoutTicks: Ticks without an accepted packet after which a stream is removed; at least 1.
    init(
        mode: RTPStreamReceiver.Mode, configuration: EngineConfiguration, jitter: JitterBufferConfiguration,
        streamTimeoutTicks: Int, output: LiveOutput
    ) throws {
        self.output = output
        streams = ListenStreams(timeout: streamTimeoutTicks)
        runner = try RTPRoomRunner(configuration: configuration, policies: .withBaselines)
        runner.addRoom(Self.room, mode: mode == .levels ? .levels : .decode, jitter: jitter)
    }

    /// Ticks done.
    var ticks: Int { runner.ticks }

    /// The playout clock the streams share.
    var clock: PlayoutClock { runner.clock(of: Self.room)! }

    /// Statistics per stream name, in the order the names first appeared: the RTP counters summed over
    /// every time its SSRC was a stream, and how many times it was removed for silence.
    var streamStatistics: [(name: String, statistics: RTPStreamStatistics, removals: Int)] {
        var totals = pastTotals
        for index in receiving {
            totals[positionOfName[output.names[index]]!].statistics.add(runner.receiver(of: index)!.statistics)
        }
        return totals
    }

    /// Whether the present stream of `name` is placed by its sender reports.
    func usesSenderReports(_ name: String) -> Bool {
        receiving.contains { output.names[$0] == name && runner.receiver(of: $0)!.usesSenderReports }
    }

    /// Takes a packet in, adding its stream on its first packet (or its first since its removal).
    func receive(_ packet: RTPPacket, datagram: UnsafeRawBufferPointer, name: String) throws(CommandError) -> RTPStreamReceiver.Insertion {
        let index: Int
        if let known = runner.stream(ofSSRC: packet.ssrc) {
            index = known
        } else {
            index = output.addStream(name)
            do {
                try runner.addStream(index, ssrc: packet.ssrc, in: Self.room, name: name)
            } catch {
                throw .failure("\(error)")
            }
            receiving.append(index)
            streams.add(ssrc: packet.ssrc, index: index, tick: ticks)
            if positionOfName[name] == nil {
                positionOfName[name] = pastTotals.count
                pastTotals.append((name, RTPStreamStatistics(), 0))
            }
            try output.streamAdded(
                time: Double(ticks) / 100, stream: index, details: [("ssrc", .text("0x" + ListenCommand.hex(packet.ssrc)))])
        }
        let insertion = runner.insert(packet, datagram: datagram, into: index)!
        if insertion == .accepted { streams.accepted(ssrc: packet.ssrc, tick: ticks) }
        return insertion
    }

    /// After each tick: its events, the removal of the streams that have timed out, the levels. A stream
    /// with nothing to play in a tick got nothing, which the engine treats as silence.
    func ticked() throws(CommandError) {
        try writeEvents()
        try removeTimedOutStreams()
        try output.endTick(time: Double(ticks) / 100) { index in
            guard let level = self.runner.rooms.level(of: index) else { preconditionFailure("the output lists only present streams") }
            return level
        }
    }

    /// Ends open utterances and the floor, and writes their events.
    func finish() throws(CommandError) {
        runner.finish()
        try writeEvents()
    }

    /// Removes every stream whose last accepted packet is the timeout or more before now: a `removed`
    /// line for each, then the events of the removals (its utterance ending, the floor to nobody).
    private func removeTimedOutStreams() throws(CommandError) {
        let timedOut = streams.removeTimedOut(at: ticks)
        guard !timedOut.isEmpty else { return }
        for stream in timedOut {
            let position = positionOfName[output.names[stream.index]]!
            pastTotals[position].statistics.add(runner.removeStream(stream.index)!)
            pastTotals[position].removals += 1
            receiving.removeAll { $0 == stream.index }
            try output.streamRemoved(
                time: Double(ticks) / 100, stream: stream.index,
                details: [
                    ("ssrc", .text("0x" + ListenCommand.hex(stream.ssrc))),
                    ("lastPacket", .number(Double(stream.lastPacket) / 100, decimals: 3)),
                ])
        }
        try writeEvents()
    }

    private func writeEvents() throws(CommandError) { try output.writeEvents(of: runner) }
}

/// The SSRCs that are streams of `listen`'s room now, and the tick each last had a packet accepted in:
/// says which have been silent for the timeout. A value; `ListenSession` performs the removals it names.
struct ListenStreams {
    /// A stream of the room now.
    struct Stream: Equatable {
        /// Its synchronisation source.
        let ssrc: UInt32
        /// Its source index in the room's `RoomRunner` (and `LiveOutput`).
        let index: Int
        /// The tick its last packet was accepted in; before its first, the tick it was added in.
        var lastPacket: Int
    }

    /// Ticks without an accepted packet after which a stream times out.
    let timeout: Int
    private var streams: [UInt32: Stream] = [:]

    /// - Parameter timeout: Ticks without an accepted packet after which a stream times out; at least 1.
    init(timeout: Int) {
        precondition(timeout >= 1, "a stream times out after one tick or more")
        self.timeout = timeout
    }

    /// The source index of the stream of `ssrc`, or nil if `ssrc` is not a stream now.
    func index(of ssrc: UInt32) -> Int? { streams[ssrc]?.index }

    /// Notes a new stream, added in tick `tick`.
    /// - Precondition: `ssrc` is not a stream now.
    mutating func add(ssrc: UInt32, index: Int, tick: Int) {
        precondition(streams[ssrc] == nil, "an SSRC is one stream at a time")
        streams[ssrc] = Stream(ssrc: ssrc, index: index, lastPacket: tick)
    }

    /// Notes a packet of the stream of `ssrc` accepted in tick `tick`.
    mutating func accepted(ssrc: UInt32, tick: Int) {
        streams[ssrc]?.lastPacket = tick
    }

    /// Forgets the streams whose last accepted packet is `timeout` ticks or more before tick `tick`.
    /// - Returns: Those streams, in the order they were added.
    /// - Complexity: O(streams). Allocates only when a stream times out.
    mutating func removeTimedOut(at tick: Int) -> [Stream] {
        var timedOut: [Stream] = []
        for stream in streams.values where tick - stream.lastPacket >= timeout { timedOut.append(stream) }
        guard !timedOut.isEmpty else { return [] }
        for stream in timedOut { streams[stream.ssrc] = nil }
        return timedOut.sorted { $0.index < $1.index }
    }
}

extension RTPStreamStatistics {
    /// Adds every counter of `other`: the counters of one stream over several receivers.
    fileprivate mutating func add(_ other: RTPStreamStatistics) {
        packets += other.packets
        played += other.played
        lost += other.lost
        concealed += other.concealed
        recovered += other.recovered
        silenced += other.silenced
        realignments += other.realignments
        senderReports += other.senderReports
        duplicates += other.duplicates
        late += other.late
        overflowed += other.overflowed
        invalidPayloads += other.invalidPayloads
        restarts += other.restarts
        jumps += other.jumps
        spurts += other.spurts
    }
}

import Foundation
import SpeakerCore
import SpeakerIO

/// `activespeaker listen`: who is speaking now, from RTP/Opus streams on UDP.
struct ListenCommand: Command {
    static let name = "listen"
    static let summary = "Follow who is speaking, live, from RTP/Opus streams on UDP."
    static let synopsis = "listen --udp HOST:PORT [--mode decode|levels] [options]"

    static let overview = """
        Receives RTP (RFC 3550) with Opus payloads (RFC 7587) on one or more UDP
        addresses, IPv4 or IPv6, and treats every SSRC as one stream of one room.
        Each stream passes a jitter buffer (reordering, duplicates, sequence
        wrap-around, timestamp jumps; lost packets are concealed by libopus;
        no packets, as in DTX, is silence). Every 10 ms of wall-clock time the
        engine decides, so t is seconds since the start.
        decode: Opus is decoded and the engine's VAD hears the audio.
        levels: nothing is decoded; the RFC 6464 audio levels in the RTP header
        extension (the one-byte or two-byte form of RFC 8285) drive a level-based
        detector with the engine's turn-taking rules, for servers that cannot
        decode (see docs/live.md).
        Malformed packets are counted and dropped.
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
        .value("jitter", "MS", help: "Jitter-buffer delay (default 60)."),
        .value("duration", "SECONDS", help: "Stop after this long (default: until Ctrl-C)."),
        .value("levels", "MS", help: "Every MS milliseconds, write the levels."),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: """
            Engine settings, as for detect. In levels mode the
            keys that act on levels apply (vad.levelSNR,
            vad.minimumLevel, vad.onset*, vad.hangover,
            leakage.*, selection.*); see docs/live.md.
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
        and with --stats, last:
          {"type":"stats","duration":30.000,"packets":3000,"malformed":{"tooShort":0,
            "badVersion":0,...},"ignored":0,"streams":{"alice":{"packets":1500,"lost":2,
            "late":0,"duplicates":1,...}},"cpuSeconds":0.412}
        In levels mode, levels lines give each stream's last RFC 6464 level. Standard
        error says once where RTP is received, with the bound ports (HOST:0 binds
        any free port):
          activespeaker: receiving RTP on 127.0.0.1:40123, [::1]:40124

        DELAY: a packet plays --jitter ms after a talk spurt's first packet arrives,
        so events come that much later than with live capture, plus the engine's
        decision delay (t - since).

        EXIT STATUS: 0 after Ctrl-C or --duration; 1 if an address cannot be bound;
        64 command-line error.
        """

    let addresses: [String]
    let mode: RTPStreamReceiver.Mode
    let audioLevelID: Int?
    let names: [UInt32: String]
    let payloadType: UInt8?
    let jitter: JitterBufferConfiguration
    let durationTicks: Int?
    let levelTicks: Int?
    let configuration: EngineConfiguration
    let json: Bool
    let stats: Bool

    init(_ options: ParsedOptions) throws(CommandError) {
        addresses = options.all("udp")
        if addresses.isEmpty { throw .usage("no address given (--udp HOST:PORT)") }
        for address in addresses { try Self.checkSyntax(address) }
        let modeText = options.value("mode") ?? "decode"
        guard let mode = RTPStreamReceiver.Mode(rawValue: modeText) else { throw .usage("--mode \(modeText): expected decode or levels") }
        self.mode = mode
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
        self.jitter = jitter
        durationTicks = try LiveOptions.durationTicks(options.value("duration"))
        levelTicks = try LiveOptions.levelTicks(options.value("levels"))
        configuration = try DetectCommand.configuration(from: options.all("config"))
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
        let room: ListenRoom
        do {
            room = try ListenRoom(
                mode: mode, configuration: configuration, jitter: jitter,
                output: LiveOutput(view: LiveOptions.view(json: json), levelTicks: levelTicks))
        } catch {
            throw .usage("\(error)")
        }
        StopRequest.install()
        let cpuAtStart = Self.cpuSeconds()
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { datagram.deallocate() }
        var malformed: [RTPMalformation: Int] = [:]
        var packets = 0, ignored = 0
        var ticker = PacedTicker()
        ticker.start()

        /// Takes in every datagram that has arrived; false once a stop is requested.
        func drain() throws(CommandError) -> Bool {
            for socket in sockets {
                while let count = socket.receive(into: datagram) {
                    let bytes = UnsafeRawBufferPointer(rebasing: datagram[..<count])
                    if RTPPacket.isRTCP(bytes) {
                        ignored += 1
                        continue
                    }
                    switch RTPPacket.parse(bytes, audioLevelID: audioLevelID) {
                    case .malformed(let reason):
                        malformed[reason, default: 0] += 1
                    case .packet(let packet):
                        if let payloadType, packet.payloadType != payloadType {
                            ignored += 1
                            continue
                        }
                        packets += 1
                        let name = names[packet.ssrc] ?? "ssrc-" + Self.hex(packet.ssrc)
                        if try room.receive(packet, datagram: bytes, name: name) == .invalidPayload {
                            malformed[.invalidOpus, default: 0] += 1
                        }
                    }
                }
            }
            return !StopRequest.isRequested
        }
        func waitForDatagrams(seconds: Double) throws(CommandError) {
            _ = UDPSocket.wait(sockets, timeout: seconds)
        }

        while !StopRequest.isRequested, durationTicks.map({ room.ticks < $0 }) ?? true {
            // Receive until the end of the current tick's 10 ms, then decide it.
            try ticker.waitUntilDue(drain: drain, sleep: waitForDatagrams)
            try room.tick()
            ticker.advance()
        }
        try room.finish()
        if stats {
            var reasons = JSONLine()
            for reason in RTPMalformation.allCases { reasons.add(reason.rawValue, malformed[reason] ?? 0) }
            var streams = JSONLine()
            for (name, statistics) in room.streamStatistics {
                var entry = JSONLine()
                entry.add("packets", statistics.packets)
                entry.add("played", statistics.played)
                entry.add("lost", statistics.lost)
                entry.add("late", statistics.late)
                entry.add("duplicates", statistics.duplicates)
                entry.add("overflowed", statistics.overflowed)
                entry.add("restarts", statistics.restarts)
                entry.add("jumps", statistics.jumps)
                entry.add("spurts", statistics.spurts)
                streams.add(name, entry)
            }
            var line = JSONLine()
            line.add("type", "stats")
            line.add("duration", Double(room.ticks) / 100, decimals: 3)
            line.add("packets", packets)
            line.add("malformed", reasons)
            line.add("ignored", ignored)
            line.add("streams", streams)
            line.add("cpuSeconds", Self.cpuSeconds() - cpuAtStart, decimals: 3)
            let lost = room.streamStatistics.reduce(0) { $0 + $1.1.lost }
            let cpu = JSONLine.fixed(Self.cpuSeconds() - cpuAtStart, decimals: 3)
            try room.output.writeLine(
                line, note: "stats: \(packets) packets, \(malformed.values.reduce(0, +)) malformed, \(lost) lost, CPU \(cpu) s")
        }
        try room.output.finish()
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

/// The streams of `listen` and the room that decides for them: each SSRC's jitter buffer is a source of a
/// `RoomRunner`, decoded audio (decode mode) or the packets' RFC 6464 levels as level streams (level-only
/// mode); this adds the SSRC bookkeeping and the output.
final class ListenRoom {
    let output: LiveOutput
    private let mode: RTPStreamReceiver.Mode
    private let jitter: JitterBufferConfiguration
    private let runner: RoomRunner
    /// By source index of the runner.
    private var receivers: [RTPStreamReceiver] = []
    private var indexOfSSRC: [UInt32: Int] = [:]

    init(mode: RTPStreamReceiver.Mode, configuration: EngineConfiguration, jitter: JitterBufferConfiguration, output: LiveOutput) throws {
        self.mode = mode
        self.jitter = jitter
        self.output = output
        runner = try RoomRunner(configuration: configuration, roomName: "listen")
    }

    /// Ticks done.
    var ticks: Int { runner.ticks }

    /// Statistics per stream, in the order the streams appeared.
    var streamStatistics: [(String, RTPStreamStatistics)] {
        receivers.indices.map { (output.names[$0], receivers[$0].statistics) }
    }

    /// Takes a packet in, adding its stream on its first packet.
    func receive(_ packet: RTPPacket, datagram: UnsafeRawBufferPointer, name: String) throws(CommandError) -> RTPStreamReceiver.Insertion {
        let index: Int
        if let known = indexOfSSRC[packet.ssrc] {
            index = known
        } else {
            let receiver: RTPStreamReceiver
            do {
                receiver = try RTPStreamReceiver(ssrc: packet.ssrc, mode: mode, configuration: jitter, startTick: ticks)
            } catch {
                throw .failure("\(error)")
            }
            receivers.append(receiver)
            index = runner.add(receiver, name: name, levels: mode == .levels)
            let line = output.addStream(name)
            precondition(line == index, "the output lists the streams in the runner's order")
            indexOfSSRC[packet.ssrc] = index
            try output.streamAdded(
                time: Double(ticks) / 100, stream: index, details: [("ssrc", .text("0x" + ListenCommand.hex(packet.ssrc)))])
        }
        return receivers[index].insert(packet, datagram: datagram)
    }

    /// Plays one tick of every stream and decides it. A stream with nothing to play this tick gets
    /// nothing, which the engine treats as silence.
    func tick() throws(CommandError) {
        runner.tick()
        try writeEvents()
        try output.endTick(time: Double(ticks) / 100) { index in self.runner.level(of: index)! }
    }

    /// Ends open utterances and the floor, and writes their events.
    func finish() throws(CommandError) {
        runner.finish()
        try writeEvents()
    }

    private func writeEvents() throws(CommandError) { try output.writeEvents(of: runner) }
}

import Foundation
import SpeakerCore
import SpeakerDevices
import SpeakerEval
import SpeakerIO
import Synchronization

/// `activespeaker live`: who is speaking now, from sound devices.
struct LiveCommand: Command {
    static let name = "live"
    static let summary = "Follow who is speaking, live, from ALSA capture devices."
    static let synopsis = "live --device NAME [--channels LIST | --id ID=[DEVICE:]CHANNEL...] [options]\n       activespeaker live --list-devices"

    static let overview = """
        Records from one or more ALSA devices (any PCM name: default, hw:1,0,
        plughw:1, a name from an asoundrc) and runs the engine as the audio comes,
        10 ms at a time. Each channel is one stream of one room: ch1, ch2, ... for
        one device, <device>-ch<N> for several; --id names them. The device runs at
        16 kHz if it can, else 48 kHz (or its nearest rate), resampled to 16 kHz,
        with periods of 10 ms. On a terminal a live view is redrawn in place; into
        a pipe or file, events are written as JSON Lines (the detect schema; t is
        seconds of audio since the start). Ctrl-C stops and writes the last events.
        """

    static let options: [OptionSpec] = [
        .value("device", short: "d", "NAME", repeatable: true, help: "Record from this ALSA device. Repeatable."),
        .value("channels", "LIST", help: """
            Device channels to use, from 1: 1,2 or 1-4
            (default: every channel the device has).
            """),
        .value("id", "ID=[DEVICE:]CHANNEL", repeatable: true, help: """
            Name a stream: the channel of DEVICE (or of the
            one --device), e.g. alice=hw:1,0:1 or bob=2.
            With --id, only the named channels are used.
            """),
        .value("rate", "HZ", help: "Insist on this device rate (default: negotiate)."),
        .value("alsa-config", "FILE", help: """
            Load this alsa-lib configuration file over the
            system's to open the devices (PCMs defined in it
            can be named with --device).
            """),
        .value("duration", "SECONDS", help: """
            Stop after this much audio (default: run
            until Ctrl-C).
            """),
        .value("levels", "MS", help: "Every MS milliseconds, write the levels."),
        .value("config", "FILE.json|KEY=VALUE", repeatable: true, help: "Engine settings, as for detect."),
        .value("device-poll", "MS", help: """
            List devices every MS milliseconds and report
            devices that appear or disappear (default 1000;
            0: off).
            """),
        .flag("list-devices", short: "l", help: "List capture and playback devices and exit."),
        .flag("json", help: "Write JSON Lines even on a terminal."),
        .flag("stats", help: """
            End with a stats line (frames, overruns,
            dropped hops).
            """),
    ]

    static let epilogue = """
        OUTPUT: the lines of detect (speech, dominant, levels), and:
          {"t":0.000,"type":"device","event":"opened","device":"hw:1,0","rate":48000,
            "channels":2,"format":"S16_LE","period":0.010}
          {"t":5.120,"type":"device","event":"added","device":"hw:2,0",
            "description":"USB Mic: USB Audio"}
          {"t":9.870,"type":"device","event":"removed","device":"hw:2,0",
            "description":"USB Mic: USB Audio"}
          {"t":12.000,"type":"device","event":"failed","device":"hw:1,0",
            "error":"device hw:1,0: device disconnected"}
          {"type":"stats","duration":12.000,"devices":{"hw:1,0":{"frames":576000,
            "overruns":0,"droppedHops":0}}}
        When a device fails or disappears, open utterances end and the floor goes to
        nobody at the failure time, the failed line is written, and live exits with
        status 1 and the error on standard error.

        DELAY: an event is decided at the end of the 10 ms hop that completes its
        evidence (t); it is written one capture period (10 ms) after that audio was
        spoken, plus 10-20 ms of resampler delivery when the device does not run at
        16 kHz; processing adds under a millisecond. The engine's own decision
        delay is t - since (30-40 ms for a speech start). See docs/live.md.

        EXIT STATUS: 0 after Ctrl-C, --duration, or the end of the input; 1 when a
        device cannot be opened or fails; 64 command-line error.
        """

    let devices: [String]
    /// Per device: (channel, stream id) in stream order; nil channel list means all channels.
    let streams: [(device: String, channel: Int, id: String)]?
    let channels: [Int]?
    let rate: Int?
    let alsaConfiguration: String?
    let durationTicks: Int?
    let levelTicks: Int?
    let configuration: EngineConfiguration
    let pollInterval: Double?
    let listDevices: Bool
    let json: Bool
    let stats: Bool

    init(_ options: ParsedOptions) throws(CommandError) {
        listDevices = options.has("list-devices")
        json = options.has("json")
        stats = options.has("stats")
        channels = try options.value("channels").map { text throws(CommandError) in try Self.channelList(text) }
        var devices = options.all("device")
        var named: [(String, Int, String)] = []
        for argument in options.all("id") {
            guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
                throw .usage("--id \(argument): expected ID=[DEVICE:]CHANNEL")
            }
            let id = String(argument[..<equals]), target = argument[argument.index(after: equals)...]
            let device: String, channelText: Substring
            if let colon = target.lastIndex(of: ":") {
                device = String(target[..<colon])
                channelText = target[target.index(after: colon)...]
            } else {
                guard devices.count == 1 else {
                    throw .usage("--id \(argument): name the device (ID=DEVICE:CHANNEL) unless exactly one --device is given")
                }
                device = devices[0]
                channelText = target
            }
            guard let channel = Int(channelText), channel >= 1 else {
                throw .usage("--id \(argument): the channel is a number from 1")
            }
            guard !named.contains(where: { $0.2 == id }) else { throw .usage("--id \(argument): stream id \(id) given twice") }
            named.append((device, channel, id))
            if !devices.contains(device) { devices.append(device) }
        }
        if !named.isEmpty && channels != nil { throw .usage("use either --channels or --id") }
        self.devices = devices
        streams = named.isEmpty ? nil : named.map { (device: $0.0, channel: $0.1, id: $0.2) }
        rate = try options.value("rate").map { text throws(CommandError) in
            guard let rate = Int(text), (1000...768_000).contains(rate) else { throw .usage("--rate \(text): expected Hz, 1000…768000") }
            return rate
        }
        alsaConfiguration = options.value("alsa-config")
        durationTicks = try LiveOptions.durationTicks(options.value("duration"))
        levelTicks = try LiveOptions.levelTicks(options.value("levels"))
        configuration = try options.engineConfiguration()
        let poll = options.value("device-poll") ?? "1000"
        guard let milliseconds = Int(poll), milliseconds >= 0 else { throw .usage("--device-poll \(poll): expected milliseconds (0: off)") }
        pollInterval = milliseconds == 0 ? nil : Double(milliseconds) / 1000
        if !listDevices && devices.isEmpty { throw .usage("no device given (--device NAME; see --list-devices)") }
        if !options.positionals.isEmpty { throw .usage("unexpected argument \(options.positionals[0])") }
    }

    /// `1,2`, `1-4`, `1,3-4` → channel numbers from 1, in order, without repeats.
    static func channelList(_ text: String) throws(CommandError) -> [Int] {
        var result: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let bounds = part.split(separator: "-", omittingEmptySubsequences: false).map { Int($0) }
            guard (1...2).contains(bounds.count), let low = bounds.first!, let high = bounds.last!, low >= 1, low <= high, high <= 1024 else {
                throw .usage("--channels \(text): expected channel numbers from 1, like 1,2 or 1-4")
            }
            for channel in low...high where !result.contains(channel) { result.append(channel) }
        }
        return result
    }

    func run() throws(CommandError) {
        if listDevices {
            try printDevices()
            return
        }
        // Open every device before writing anything: a bad name gives only an error.
        var captures: [AudioCapture] = []
        var rows: [[(row: Int, id: String)]] = []
        for device in devices {
            let wanted = streams?.filter { $0.device == device }
            let capture: AudioCapture
            do {
                capture = try AudioCapture(
                    device: device, channels: wanted.map { $0.map(\.channel) } ?? channels, sampleRate: rate,
                    configurationFile: alsaConfiguration)
            } catch let error as SpeakerIOError {
                throw .failure(error.description)
            } catch {
                throw .failure("\(device): \(error)")
            }
            captures.append(capture)
            if let wanted {
                rows.append(wanted.enumerated().map { (row: $0.offset, id: $0.element.id) })
            } else {
                rows.append(capture.channels.enumerated().map { index, channel in
                    (row: index, id: devices.count == 1 ? "ch\(channel)" : "\(device)-ch\(channel)")
                })
            }
        }
        let runner: RoomRunner
        do {
            runner = try RoomRunner(configuration: configuration, roomName: "live", policies: .withBaselines)
        } catch {
            throw .usage(error.description)
        }
        let output = LiveOutput(view: LiveOptions.view(json: json), levelTicks: levelTicks)
        // Each device's hop blocks, and each channel of them as one source of the room.
        let blocks = captures.map(CaptureHops.init)
        for (device, deviceRows) in rows.enumerated() {
            for row in deviceRows {
                let index = runner.add(blocks[device].channel(row.row), name: row.id)
                let line = output.addStream(row.id)
                precondition(line == index, "the output lists the streams in the runner's order")
            }
        }
        for capture in captures {
            let format = capture.format
            try output.device(
                time: 0, event: "opened", device: format.device,
                details: [
                    ("rate", .integer(format.sampleRate)), ("channels", .integer(format.channelCount)),
                    ("format", .text(format.sampleFormat)), ("period", .number(format.periodDuration, decimals: 3)),
                ])
        }

        let changes = Mutex<[DeviceChange]>([])
        let watcher = pollInterval.map { interval in
            DeviceWatcher(interval: interval) { change in changes.withLock { $0.append(change) } }
        }
        StopRequest.install()
        for capture in captures { capture.start() }
        watcher?.start()
        defer {
            watcher?.stop()
            for capture in captures { capture.stop() }
        }

        var failure: (device: String, error: SpeakerIOError)?
        var stopping = false

        func writeEvents() throws(CommandError) { try output.writeEvents(of: runner) }
        func reportDeviceChanges() throws(CommandError) {
            let pending = changes.withLock { list in
                defer { list.removeAll() }
                return list
            }
            for change in pending {
                switch change {
                case .added(let device):
                    try output.device(time: runner.time, event: "added", device: device.name, details: [("description", .text(device.description))])
                case .removed(let device):
                    try output.device(time: runner.time, event: "removed", device: device.name, details: [("description", .text(device.description))])
                }
            }
        }

        ticking: while durationTicks.map({ runner.ticks < $0 }) ?? true {
            // One hop from every device, then one tick.
            for (index, capture) in captures.enumerated() {
                var status = AudioCapture.HopStatus.timedOut
                while true {
                    if StopRequest.isRequested && !stopping {
                        // Stop recording; the hops already queued still play.
                        stopping = true
                        for capture in captures { capture.stop() }
                    }
                    status = blocks[index].next(timeout: 0.1)
                    if status != .timedOut { break }
                    try reportDeviceChanges()
                }
                if status == .finished {
                    if let error = capture.failure { failure = (capture.format.device, error) }
                    break ticking
                }
            }
            runner.tick()
            try writeEvents()
            try reportDeviceChanges()
            try output.endTick(time: runner.time) { runner.level(of: $0)! }
        }

        // The run is over: end open utterances and the floor at the last tick, then report.
        runner.finish()
        try writeEvents()
        if let failure {
            try output.device(time: runner.time, event: "failed", device: failure.device, details: [("error", .text(failure.error.description))])
        }
        if stats {
            var devicesLine = JSONLine()
            for capture in captures {
                var entry = JSONLine()
                entry.add("frames", capture.framesRead)
                entry.add("overruns", capture.overruns)
                entry.add("droppedHops", capture.droppedHops)
                devicesLine.add(capture.format.device, entry)
            }
            var line = JSONLine()
            line.add("type", "stats")
            line.add("duration", runner.time, decimals: 3)
            line.add("devices", devicesLine)
            let perDevice = captures.map {
                "\($0.format.device) \($0.framesRead) frames, \($0.overruns) overruns, \($0.droppedHops) dropped hops"
            }
            try output.writeLine(line, note: "stats: \(JSONLine.fixed(runner.time, decimals: 3)) s; " + perDevice.joined(separator: "; "))
        }
        try output.finish()
        if let failure { throw .failure(failure.error.description) }
    }

    private func printDevices() throws(CommandError) {
        let devices = AudioDevices.list(probe: true)
        let out = BufferedOutput()
        if !Console.outputIsTerminal || json {
            for device in devices {
                var line = JSONLine()
                line.add("device", device.name)
                line.add("description", device.description)
                if let card = device.card { line.add("card", card) } else { line.add("card", nil as String?) }
                line.add("capture", device.canCapture)
                line.add("playback", device.canPlay)
                line.add("captureChannels", device.captureChannels.map { "\($0.lowerBound)-\($0.upperBound)" })
                line.add("playbackChannels", device.playbackChannels.map { "\($0.lowerBound)-\($0.upperBound)" })
                line.add("captureRates", device.captureRates.map { "\($0.lowerBound)-\($0.upperBound)" })
                try out.write(line.rendered + "\n")
            }
        } else {
            if devices.isEmpty { try out.write("no sound devices\n") }
            for device in devices {
                var text = device.listingLine
                if let channels = device.captureChannels { text += "  capture \(channels.lowerBound)-\(channels.upperBound) ch" }
                if let rates = device.captureRates { text += " \(rates.lowerBound)-\(rates.upperBound) Hz" }
                try out.write(text + "\n")
            }
        }
        try out.flush()
    }
}

internal import CALSA

#if canImport(Glibc)
import Glibc
#endif

/// A sound device as alsa-lib knows it: a hardware PCM (`hw:1,0`) or a PCM defined in a configuration
/// (`default`, `null`, a name from an asoundrc).
public struct AudioDevice: Sendable, Hashable {
    /// The name to open, e.g. `hw:1,0`, `default`, `sysdefault:CARD=PCH`.
    public var name: String
    /// What alsa-lib says about it, one line, e.g. `HDA Intel PCH: ALC892 Analog`.
    public var description: String
    /// The card index of a hardware device, nil for a PCM defined only in a configuration.
    public var card: Int?
    /// The device index on its card, nil for a PCM defined only in a configuration.
    public var device: Int?
    /// True if the device can record.
    public var canCapture: Bool
    /// True if the device can play.
    public var canPlay: Bool
    /// Channels a capture stream may have, if probed and the device could be opened.
    public var captureChannels: ClosedRange<Int>?
    /// Channels a playback stream may have, if probed and the device could be opened.
    public var playbackChannels: ClosedRange<Int>?
    /// Capture sample rates in Hz, if probed (without alsa-lib's own resampling).
    public var captureRates: ClosedRange<Int>?

    public init(
        name: String, description: String, card: Int? = nil, device: Int? = nil, canCapture: Bool, canPlay: Bool,
        captureChannels: ClosedRange<Int>? = nil, playbackChannels: ClosedRange<Int>? = nil,
        captureRates: ClosedRange<Int>? = nil
    ) {
        self.name = name
        self.description = description
        self.card = card
        self.device = device
        self.canCapture = canCapture
        self.canPlay = canPlay
        self.captureChannels = captureChannels
        self.playbackChannels = playbackChannels
        self.captureRates = captureRates
    }

    /// One line for a listing: `name: description (capture, playback)`.
    public var listingLine: String {
        let directions = [canCapture ? "capture" : nil, canPlay ? "playback" : nil].compactMap { $0 }
        return "\(name): \(description) (\(directions.joined(separator: ", ")))"
    }
}

/// Lists the sound devices through alsa-lib (never by parsing `aplay -l`).
///
/// Hardware devices come from the control interface: every card (`snd_card_next`), every PCM device on
/// it (`snd_ctl_pcm_next_device`) and the directions it supports (`snd_ctl_pcm_info`); they are named
/// `hw:CARD,DEVICE`. PCMs defined in configuration files (`default`, `null`, `dmix`, names from
/// `~/.asoundrc` or `$XDG_CONFIG_HOME/alsa/asoundrc`) come from the name hints
/// (`snd_device_name_hint`); hints that repeat a hardware device (`hw:…`) are left out. alsa-lib
/// re-reads its configuration when a file in it changes, so a PCM added to an asoundrc appears on the
/// next call.
public enum AudioDevices {
    /// Every device, hardware first (by card, then device), then configured PCMs in alsa-lib's order.
    ///
    /// - Parameter probe: Also open each device for a moment (non-blocking) to read its channel and rate
    ///   ranges. A device that is busy or cannot be opened keeps nil ranges. Probing a hardware device
    ///   that another program records from fails harmlessly; do not probe in a polling loop.
    /// - Returns: The devices; empty on a machine without sound cards and without configured PCMs.
    /// - Complexity: One control open per card; with `probe`, one PCM open per device and direction.
    public static func list(probe: Bool = false) -> [AudioDevice] {
        ALSAStatus.silenceLibraryMessages()
        var devices = hardwareDevices() + configuredDevices()
        if probe {
            for index in devices.indices {
                if devices[index].canCapture {
                    let ranges = probeRanges(devices[index].name, stream: SND_PCM_STREAM_CAPTURE)
                    devices[index].captureChannels = ranges?.channels
                    devices[index].captureRates = ranges?.rates
                }
                if devices[index].canPlay {
                    devices[index].playbackChannels = probeRanges(devices[index].name, stream: SND_PCM_STREAM_PLAYBACK)?.channels
                }
            }
        }
        return devices
    }

    /// The hardware PCMs of every card.
    static func hardwareDevices() -> [AudioDevice] {
        var devices: [AudioDevice] = []
        var card: Int32 = -1
        while snd_card_next(&card) == 0, card >= 0 {
            var control: OpaquePointer?
            guard snd_ctl_open(&control, "hw:\(card)", 0) == 0, let control else { continue }
            defer { snd_ctl_close(control) }
            var cardInfo: OpaquePointer?
            guard snd_ctl_card_info_malloc(&cardInfo) == 0, let cardInfo else { continue }
            defer { snd_ctl_card_info_free(cardInfo) }
            guard snd_ctl_card_info(control, cardInfo) == 0 else { continue }
            let cardName = String(cString: snd_ctl_card_info_get_name(cardInfo))
            var pcmInfo: OpaquePointer?
            guard snd_pcm_info_malloc(&pcmInfo) == 0, let pcmInfo else { continue }
            defer { snd_pcm_info_free(pcmInfo) }
            var device: Int32 = -1
            while snd_ctl_pcm_next_device(control, &device) == 0, device >= 0 {
                var supports: [Bool] = []
                var pcmName = ""
                for stream in [SND_PCM_STREAM_CAPTURE, SND_PCM_STREAM_PLAYBACK] {
                    snd_pcm_info_set_device(pcmInfo, UInt32(device))
                    snd_pcm_info_set_subdevice(pcmInfo, 0)
                    snd_pcm_info_set_stream(pcmInfo, stream)
                    let supported = snd_ctl_pcm_info(control, pcmInfo) == 0
                    if supported, pcmName.isEmpty { pcmName = String(cString: snd_pcm_info_get_name(pcmInfo)) }
                    supports.append(supported)
                }
                devices.append(
                    AudioDevice(
                        name: "hw:\(card),\(device)", description: "\(cardName): \(pcmName)",
                        card: Int(card), device: Int(device), canCapture: supports[0], canPlay: supports[1]))
            }
        }
        return devices
    }

    /// PCMs from the configuration's name hints, without the `hw:` ones.
    static func configuredDevices() -> [AudioDevice] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var devices: [AudioDevice] = []
        var seen: Set<String> = []
        var index = 0
        while let hint = hints[index] {
            index += 1
            guard let name = takeHint(hint, "NAME"), !name.hasPrefix("hw:"), seen.insert(name).inserted else { continue }
            let description = (takeHint(hint, "DESC") ?? "")
                .split(whereSeparator: \.isNewline).joined(separator: ", ")
            // IOID is "Input", "Output", or absent for both directions.
            let direction = takeHint(hint, "IOID")
            devices.append(
                AudioDevice(
                    name: name, description: description, canCapture: direction != "Output",
                    canPlay: direction != "Input"))
        }
        return devices
    }

    /// A hint field as a Swift string; alsa-lib allocates it with `malloc`, so it is freed here.
    private static func takeHint(_ hint: UnsafeMutableRawPointer, _ field: String) -> String? {
        guard let value = snd_device_name_get_hint(hint, field) else { return nil }
        defer { free(value) }
        return String(cString: value)
    }

    /// Opens `name` non-blocking for a moment and reads its channel and rate ranges.
    static func probeRanges(_ name: String, stream: snd_pcm_stream_t) -> (channels: ClosedRange<Int>, rates: ClosedRange<Int>)? {
        var pcm: OpaquePointer?
        guard snd_pcm_open(&pcm, name, stream, SND_PCM_NONBLOCK) == 0, let pcm else { return nil }
        defer { snd_pcm_close(pcm) }
        var params: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&params) == 0, let params else { return nil }
        defer { snd_pcm_hw_params_free(params) }
        guard snd_pcm_hw_params_any(pcm, params) >= 0 else { return nil }
        _ = snd_pcm_hw_params_set_rate_resample(pcm, params, 0)
        var minimum: UInt32 = 0, maximum: UInt32 = 0
        var direction: Int32 = 0
        guard snd_pcm_hw_params_get_channels_min(params, &minimum) == 0,
            snd_pcm_hw_params_get_channels_max(params, &maximum) == 0, minimum <= maximum
        else { return nil }
        let channels = Int(minimum)...Int(maximum)
        guard snd_pcm_hw_params_get_rate_min(params, &minimum, &direction) == 0,
            snd_pcm_hw_params_get_rate_max(params, &maximum, &direction) == 0, minimum <= maximum
        else { return nil }
        return (channels, Int(minimum)...Int(maximum))
    }
}

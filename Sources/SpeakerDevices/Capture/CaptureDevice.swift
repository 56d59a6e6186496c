internal import CALSA

#if canImport(Glibc)
import Glibc
#endif
import SpeakerIO

/// What a capture device was opened with.
public struct CaptureFormat: Sendable, Equatable {
    /// The ALSA name the device was opened by.
    public var device: String
    /// Frames per second the device delivers (before resampling).
    public var sampleRate: Int
    /// Channels the device was opened with (every one is read; the selected ones are used).
    public var channelCount: Int
    /// The ALSA sample format, e.g. `S16_LE`.
    public var sampleFormat: String
    /// Frames per period: the device wakes the reader once per period.
    public var periodFrames: Int
    /// Frames the device buffers before it overruns.
    public var bufferFrames: Int

    /// Seconds per period: the delay capture adds before a sample can be read.
    public var periodDuration: Double { Double(periodFrames) / Double(sampleRate) }
}

/// Sample formats read from devices, in order of preference: 16-bit first, the native format of most
/// devices (and what a `type file` PCM's raw infile is usually written in); wider formats after.
enum CaptureSampleFormat: CaseIterable {
    case s16, s32, float32, s24, s24packed

    var alsa: snd_pcm_format_t {
        switch self {
        case .s16: SND_PCM_FORMAT_S16_LE
        case .s32: SND_PCM_FORMAT_S32_LE
        case .float32: SND_PCM_FORMAT_FLOAT_LE
        case .s24: SND_PCM_FORMAT_S24_LE
        case .s24packed: SND_PCM_FORMAT_S24_3LE
        }
    }

    /// Bytes per sample in the interleaved buffer.
    var bytes: Int {
        switch self {
        case .s16: 2
        case .s32, .float32, .s24: 4
        case .s24packed: 3
        }
    }

    var name: String { String(cString: snd_pcm_format_name(alsa)) }

    /// Converts sample `index` of `raw` (interleaved, little-endian) to a float in [-1, 1).
    @inline(__always)
    func sample(_ raw: UnsafeRawPointer, _ index: Int) -> Float {
        switch self {
        case .s16:
            return Float(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: 2 * index, as: Int16.self))) * (1 / 32768)
        case .s32:
            return Float(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * index, as: Int32.self))) * (1 / 2_147_483_648)
        case .float32:
            return Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * index, as: UInt32.self)))
        case .s24:
            // 24 significant bits in the low three bytes of 32: shift up to sign-extend.
            let word = Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * index, as: Int32.self))
            return Float((word << 8) >> 8) * (1 / 8_388_608)
        case .s24packed:
            let bytes = raw + 3 * index
            let value = Int32(bytes.load(as: UInt8.self)) | Int32(bytes.load(fromByteOffset: 1, as: UInt8.self)) << 8
                | Int32(bytes.load(fromByteOffset: 2, as: Int8.self)) << 16
            return Float(value) * (1 / 8_388_608)
        }
    }
}

/// One open ALSA capture PCM (`snd_pcm_t`), negotiated for short periods. Closed in `deinit`.
///
/// Opened non-blocking, so the reader can wait with a timeout (`snd_pcm_wait`) and never hangs on a
/// device that stopped delivering. Used by one thread at a time.
final class CaptureDevice {
    let format: CaptureFormat
    let sampleFormat: CaptureSampleFormat
    let handle: OpaquePointer

    /// Opens and configures `name`.
    ///
    /// - Parameters:
    ///   - name: Any ALSA PCM name.
    ///   - channelCount: Channels to open; nil takes the device's own count when it has a fixed small
    ///     range (≤ 32 channels, as hardware does) and its minimum otherwise (converting PCMs such as
    ///     `plug`, `default` or `type file` accept any count).
    ///   - minimumChannels: At least this many channels are needed (the highest selected channel).
    ///   - sampleRate: A rate to insist on; nil prefers 16000 Hz (no resampling), then 48000 Hz, then the
    ///     device's nearest rate. alsa-lib's own resampling is switched off, so the rate is one the
    ///     device really runs at.
    ///   - periodDuration: The wanted period in seconds (default 10 ms); the device's nearest is used.
    ///   - configurationFile: An alsa-lib configuration file loaded over the system's for this open
    ///     (see `ALSAConfigurationFile`), or nil.
    /// - Throws: `SpeakerIOError` with subject `.device(name)`: `.noSuchDevice`, `.deviceBusy`,
    ///   `.noSuchChannel`, `.unsupportedDeviceFormat`, `.deviceFailed`.
    init(
        name: String, channelCount: Int? = nil, minimumChannels: Int = 1, sampleRate: Int? = nil,
        periodDuration: Double = 0.01, configurationFile: String? = nil
    ) throws {
        ALSAStatus.silenceLibraryMessages()
        let pcm = try ALSAConfigurationFile.openPCM(
            name, stream: SND_PCM_STREAM_CAPTURE, mode: SND_PCM_NONBLOCK, configurationFile: configurationFile)
        do {
            (format, sampleFormat) = try Self.configure(
                pcm, name: name, channelCount: channelCount, minimumChannels: minimumChannels,
                sampleRate: sampleRate, periodDuration: periodDuration)
        } catch {
            snd_pcm_close(pcm)
            throw error
        }
        handle = pcm
    }

    deinit {
        snd_pcm_close(handle)
    }

    private static func configure(
        _ pcm: OpaquePointer, name: String, channelCount: Int?, minimumChannels: Int, sampleRate: Int?,
        periodDuration: Double
    ) throws -> (CaptureFormat, CaptureSampleFormat) {
        var params: OpaquePointer?
        try ALSAStatus.check(snd_pcm_hw_params_malloc(&params), "snd_pcm_hw_params_malloc", device: name)
        defer { snd_pcm_hw_params_free(params) }
        try ALSAStatus.check(snd_pcm_hw_params_any(pcm, params), "snd_pcm_hw_params_any", device: name)
        _ = snd_pcm_hw_params_set_rate_resample(pcm, params, 0)
        guard snd_pcm_hw_params_set_access(pcm, params, SND_PCM_ACCESS_RW_INTERLEAVED) == 0 else {
            throw SpeakerIOError(.device(name), .unsupportedDeviceFormat("no interleaved read access"))
        }
        guard let sampleFormat = CaptureSampleFormat.allCases.first(where: { snd_pcm_hw_params_test_format(pcm, params, $0.alsa) == 0 })
        else {
            throw SpeakerIOError(.device(name), .unsupportedDeviceFormat("none of S16_LE, S32_LE, FLOAT_LE, S24_LE, S24_3LE"))
        }
        try ALSAStatus.check(snd_pcm_hw_params_set_format(pcm, params, sampleFormat.alsa), "snd_pcm_hw_params_set_format", device: name)

        // Channels.
        var minimum: UInt32 = 0, maximum: UInt32 = 0
        snd_pcm_hw_params_get_channels_min(params, &minimum)
        snd_pcm_hw_params_get_channels_max(params, &maximum)
        let wanted = channelCount ?? max(maximum <= 32 ? Int(maximum) : Int(minimum), minimumChannels)
        guard wanted >= minimumChannels, wanted <= Int(maximum) else {
            throw SpeakerIOError(.device(name), .noSuchChannel(channel: minimumChannels, channelCount: Int(maximum)))
        }
        try ALSAStatus.check(
            snd_pcm_hw_params_set_channels(pcm, params, UInt32(max(wanted, Int(minimum)))), "snd_pcm_hw_params_set_channels",
            device: name)

        // Rate: insist on the one asked for, else prefer 16 kHz, then 48 kHz, then the nearest to 48 kHz.
        var rate: UInt32
        if let sampleRate {
            rate = UInt32(sampleRate)
            guard snd_pcm_hw_params_set_rate(pcm, params, rate, 0) == 0 else {
                throw SpeakerIOError(.device(name), .unsupportedDeviceFormat("the device does not run at \(sampleRate) Hz"))
            }
        } else if snd_pcm_hw_params_test_rate(pcm, params, 16000, 0) == 0 {
            rate = 16000
            try ALSAStatus.check(snd_pcm_hw_params_set_rate(pcm, params, rate, 0), "snd_pcm_hw_params_set_rate", device: name)
        } else {
            rate = 48000
            var direction: Int32 = 0
            try ALSAStatus.check(
                snd_pcm_hw_params_set_rate_near(pcm, params, &rate, &direction), "snd_pcm_hw_params_set_rate_near", device: name)
        }

        // Period of about `periodDuration`, and room for 8 periods so a late reader does not overrun.
        var period = snd_pcm_uframes_t(max(1, Int((Double(rate) * periodDuration).rounded())))
        var direction: Int32 = 0
        try ALSAStatus.check(
            snd_pcm_hw_params_set_period_size_near(pcm, params, &period, &direction), "snd_pcm_hw_params_set_period_size_near",
            device: name)
        var buffer = period * 8
        try ALSAStatus.check(
            snd_pcm_hw_params_set_buffer_size_near(pcm, params, &buffer), "snd_pcm_hw_params_set_buffer_size_near", device: name)
        try ALSAStatus.check(snd_pcm_hw_params(pcm, params), "snd_pcm_hw_params", device: name)

        var channels: UInt32 = 0
        snd_pcm_hw_params_get_channels(params, &channels)
        snd_pcm_hw_params_get_rate(params, &rate, &direction)
        snd_pcm_hw_params_get_period_size(params, &period, &direction)
        snd_pcm_hw_params_get_buffer_size(params, &buffer)

        // Wake the reader once per period; start on the first read.
        var software: OpaquePointer?
        try ALSAStatus.check(snd_pcm_sw_params_malloc(&software), "snd_pcm_sw_params_malloc", device: name)
        defer { snd_pcm_sw_params_free(software) }
        try ALSAStatus.check(snd_pcm_sw_params_current(pcm, software), "snd_pcm_sw_params_current", device: name)
        _ = snd_pcm_sw_params_set_avail_min(pcm, software, period)
        _ = snd_pcm_sw_params_set_start_threshold(pcm, software, 1)
        try ALSAStatus.check(snd_pcm_sw_params(pcm, software), "snd_pcm_sw_params", device: name)

        let format = CaptureFormat(
            device: name, sampleRate: Int(rate), channelCount: Int(channels), sampleFormat: sampleFormat.name,
            periodFrames: Int(period), bufferFrames: Int(buffer))
        return (format, sampleFormat)
    }
}

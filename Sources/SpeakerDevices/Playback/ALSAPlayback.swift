internal import CALSA
import SpeakerBase
import SpeakerIO

/// An ALSA playback device that plays 16 kHz mono audio: a loudspeaker or headset (`default`,
/// `plughw:1,0`), or in tests a `type file` PCM that writes what it is given to a file.
///
/// Writes block until the device has room (its own pace is the clock); an underrun (the writer was
/// late) is recovered and counted, not thrown. One thread writes; `close()` may come from another
/// once the writer is done.
///
/// ```swift
/// let speaker = try ALSAPlayback(device: "default")
/// try hop.withUnsafeBufferPointer { try speaker.write($0) }
/// ```
public final class ALSAPlayback {
    /// The PCM's name.
    public let device: String
    /// Samples a second of what `write` takes; alsa-lib converts to the device's own rate.
    public let sampleRate = AnalysisFormat.sampleRate
    /// Times the device ran dry because the writer was late (each recovered).
    public private(set) var underruns = 0

    private var pcm: OpaquePointer?
    private var scratch = [Int16](repeating: 0, count: 1600)

    /// Opens `device` for playback at 16 kHz mono, 16-bit, with about `latency` seconds of buffer.
    /// - Parameters:
    ///   - configurationFile: An alsa-lib configuration file loaded over the system's for this
    ///     process only (devices defined there can be opened by name), as for capture.
    /// - Throws: `SpeakerIOError` (`.noSuchDevice`, `.deviceBusy`, `.deviceFailed`) naming the device.
    public init(device: String = "default", configurationFile: String? = nil, latency: Double = 0.1) throws {
        precondition(latency > 0, "latency is in seconds, > 0")
        self.device = device
        let pcm = try ALSAConfigurationFile.openPCM(device, stream: SND_PCM_STREAM_PLAYBACK, mode: 0, configurationFile: configurationFile)
        let set = snd_pcm_set_params(
            pcm, SND_PCM_FORMAT_S16_LE, SND_PCM_ACCESS_RW_INTERLEAVED, 1, UInt32(sampleRate), 1, UInt32(latency * 1_000_000))
        guard set == 0 else {
            snd_pcm_close(pcm)
            throw ALSAStatus.error(set, "snd_pcm_set_params", device: device)
        }
        self.pcm = pcm
    }

    deinit { close() }

    /// Plays `samples` (−1…1; beyond is clipped), blocking until the device has taken them.
    /// - Throws: `SpeakerIOError` `.deviceFailed` when the device fails (unplugged) or is closed.
    public func write(_ samples: UnsafeBufferPointer<Float>) throws {
        guard let pcm else { throw ALSAStatus.error(-EBADFD, "snd_pcm_writei", device: device) }
        var offset = 0
        while offset < samples.count {
            let count = min(scratch.count, samples.count - offset)
            for index in 0..<count {
                scratch[index] = Int16((max(-1, min(1, samples[offset + index])) * 32767).rounded())
            }
            var written = 0
            while written < count {
                let result = scratch.withUnsafeBufferPointer { buffer in
                    snd_pcm_writei(pcm, buffer.baseAddress! + written, snd_pcm_uframes_t(count - written))
                }
                if result >= 0 {
                    written += Int(result)
                    continue
                }
                if result == -Int(EPIPE) { underruns += 1 }
                // Underrun (EPIPE), suspend (ESTRPIPE), interrupted (EINTR): alsa-lib puts the device back.
                let recovered = snd_pcm_recover(pcm, Int32(result), 1)
                guard recovered == 0 else { throw ALSAStatus.error(recovered, "snd_pcm_writei", device: device) }
            }
            offset += count
        }
    }

    /// Plays what is buffered to the end, then closes the device. Idempotent.
    public func close() {
        guard let pcm else { return }
        snd_pcm_drain(pcm)
        snd_pcm_close(pcm)
        self.pcm = nil
    }
}

internal import CALSA
import SpeakerIO

/// Opens capture PCMs with an extra alsa-lib configuration file on top of the system's, for this
/// process only: PCMs defined in the file (a `type file` PCM reading a recording, a `dsnoop`, a
/// `route`) can be opened by name without touching `~/.asoundrc` or the environment.
///
/// The system configuration (`/usr/share/alsa/alsa.conf` and what it loads, with its `null`, `file`,
/// `plug` … definitions) is copied and the file is loaded over the copy, so the file's definitions may
/// refer to the system's (`slave.pcm "null"`). The alternatives, for other programs too:
/// `ALSA_CONFIG_PATH=/usr/share/alsa/alsa.conf:FILE` (keep alsa.conf first: a path of FILE alone loses
/// every system definition, and `null` becomes an unknown PCM), or `$XDG_CONFIG_HOME/alsa/asoundrc`,
/// which the stock alsa.conf loads after `~/.asoundrc`.
enum ALSAConfigurationFile {
    /// `snd_pcm_open`, or `snd_pcm_open_lconf` with the system configuration plus `path`.
    /// - Returns: The PCM handle or alsa-lib's negative error code.
    static func openPCM(
        _ name: String, stream: snd_pcm_stream_t, mode: Int32, configurationFile path: String?
    ) throws -> OpaquePointer {
        guard let path else {
            var pcm: OpaquePointer?
            let opened = snd_pcm_open(&pcm, name, stream, mode)
            guard opened == 0, let pcm else { throw ALSAStatus.error(opened, "snd_pcm_open", device: name) }
            return pcm
        }
        var top: OpaquePointer?
        try ALSAStatus.check(snd_config_update_ref(&top), "snd_config_update_ref", device: name)
        defer { snd_config_unref(top) }
        var local: OpaquePointer?
        try ALSAStatus.check(snd_config_copy(&local, top), "snd_config_copy", device: name)
        defer { snd_config_delete(local) }
        var input: OpaquePointer?
        let opened = snd_input_stdio_open(&input, path, "r")
        guard opened == 0, let input else {
            throw SpeakerIOError(
                .file(path), .cannotOpen, library: "alsa-lib", code: Int(opened), libraryMessage: ALSAStatus.message(opened))
        }
        let loaded = snd_config_load(local, input)
        snd_input_close(input)
        guard loaded == 0 else {
            throw SpeakerIOError(
                .file(path), .malformed, library: "alsa-lib", code: Int(loaded), libraryMessage: ALSAStatus.message(loaded))
        }
        var pcm: OpaquePointer?
        let result = snd_pcm_open_lconf(&pcm, name, stream, mode, local)
        guard result == 0, let pcm else { throw ALSAStatus.error(result, "snd_pcm_open", device: name) }
        return pcm
    }
}

internal import CALSA

#if canImport(Glibc)
import Glibc
#endif
import SpeakerIO

/// Maps alsa-lib return codes to `SpeakerIOError`, in one place.
///
/// alsa-lib returns negative `errno` values; `snd_strerror` gives their text (and the text of its own
/// codes above `SND_ERROR_BEGIN`).
enum ALSAStatus {
    /// Returns a non-negative result as `Int`, or throws for a negative code.
    /// `device` is only evaluated on failure.
    @inline(__always) @discardableResult
    static func check(_ code: Int32, _ operation: StaticString, device: @autoclosure () -> String) throws -> Int {
        if code >= 0 { return Int(code) }
        throw error(code, operation, device: device())
    }

    /// The error for a negative alsa-lib code: `ENOENT` (and alsa-lib's "unknown PCM") becomes
    /// `.noSuchDevice`, `EBUSY` `.deviceBusy`, `ENODEV` `.deviceDisconnected`, anything else
    /// `.deviceFailed(operation:)`.
    static func error(_ code: Int32, _ operation: StaticString, device: String) -> SpeakerIOError {
        let kind: SpeakerIOError.Kind =
            switch -code {
            case ENOENT, ENXIO: .noSuchDevice
            case EBUSY: .deviceBusy
            case ENODEV: .deviceDisconnected
            default: .deviceFailed(operation: "\(operation)")
            }
        return SpeakerIOError(
            .device(device), kind, library: "alsa-lib", code: Int(code), libraryMessage: message(code))
    }

    /// `snd_strerror`'s text for a code.
    static func message(_ code: Int32) -> String { String(cString: snd_strerror(code)) }

    /// Stops alsa-lib from printing "ALSA lib …" lines on standard error, once per process: every
    /// failure is reported by SpeakerIO with the device name instead.
    static func silenceLibraryMessages() { _ = silenced }

    private static let silenced: Bool = {
        _ = as_alsa_silence_library_errors()
        return true
    }()
}

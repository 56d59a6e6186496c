internal import COpus
import SpeakerIO

/// Maps libopus return codes to `SpeakerIOError`, in one place.
enum OpusStatus {
    /// Returns a non-negative libopus result as `Int`, or throws for a negative error code.
    ///
    /// `OPUS_INVALID_PACKET` becomes `.invalidPacket`, every other code `.codecFailed(operation:)`; the message is
    /// `opus_strerror`'s. `subject` is only evaluated on failure, so success allocates nothing.
    @inline(__always)
    static func check(
        _ code: Int32, _ operation: StaticString, subject: @autoclosure () -> SpeakerIOError.Subject
    ) throws -> Int {
        if code >= 0 { return Int(code) }
        throw error(code, operation, subject: subject())
    }

    /// The error for a negative libopus code.
    static func error(_ code: Int32, _ operation: StaticString, subject: SpeakerIOError.Subject) -> SpeakerIOError {
        let kind: SpeakerIOError.Kind =
            code == OPUS_INVALID_PACKET ? .invalidPacket : .codecFailed(operation: "\(operation)")
        return SpeakerIOError(
            subject, kind, library: "libopus", code: Int(code), libraryMessage: String(cString: opus_strerror(code)))
    }

    /// The sample rates libopus accepts, in Hz.
    static let supportedRates: Set<Int> = [8000, 12000, 16000, 24000, 48000]
}

/// The one error type of SFUSidecar: what failed (a Janus request, the credentials file, the events
/// listener) and why, in one line.
public struct SidecarError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What was being done: `janus list`, `janus rtp_forward room 1234`, `credentials /etc/…`.
    public var subject: String
    public var message: String
    /// Janus's error code, when Janus answered with one (458: no such session, 459: no such handle;
    /// VideoRoom's 426: no such room, 428: no such feed, 433: unauthorized).
    public var janusCode: Int?

    public init(_ subject: String, _ message: String, janusCode: Int? = nil) {
        self.subject = subject
        self.message = message
        self.janusCode = janusCode
    }

    public var description: String {
        janusCode.map { "\(subject): \(message) (Janus \($0))" } ?? "\(subject): \(message)"
    }
}

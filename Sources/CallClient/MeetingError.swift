import CallProtocol

/// The one error type of CallClient: a numeric code and a sentence.
///
/// Codes 3xxx are the SDK's own (the device-switching guide's 3059 and 3068 among them); 4xxx and
/// 5000 come from the server (docs/call.md).
public struct MeetingError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var message: String

    public init(code: Int, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) (\(code))" }

    /// Server unreachable, connection lost, or no answer in time.
    public static let network = 3001
    /// A microphone could not be opened or failed while in use.
    public static let audioDeviceFailed = 3002
    /// An unknown device id, an unreadable file, a call in the wrong state.
    public static let invalidArgument = 3003
    /// No webcam device has that id (or none exists).
    public static let noWebcamFound = 3010
    /// No microphone device found.
    public static let noMicrophoneFound = 3059
    /// The action is not supported (e.g. `setAudioDevice` to a device that cannot play).
    public static let actionNotSupported = 3068

    /// Why `join()` failed, for the reasons an app shows differently.
    public enum JoinFailure: Sendable, Hashable {
        case invalidToken, tokenExpired, roomNotFound, roomFull, network, other
    }

    public var joinFailure: JoinFailure {
        switch code {
        case CallErrorCode.invalidToken.rawValue, CallErrorCode.wrongRoom.rawValue: .invalidToken
        case CallErrorCode.tokenExpired.rawValue: .tokenExpired
        case CallErrorCode.roomNotFound.rawValue: .roomNotFound
        case CallErrorCode.roomFull.rawValue: .roomFull
        case Self.network: .network
        default: .other
        }
    }

    init(_ error: CallError) {
        self.init(code: error.code.rawValue, error.message)
    }
}

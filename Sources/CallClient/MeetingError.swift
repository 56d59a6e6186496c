import CallProtocol

/// The one error type of CallClient: a typed code and a sentence.
///
/// Codes 3xxx are the SDK's own (the device-switching guide's 3059 and 3068 among them); 4xxx and
/// 5000 come from the server (`CallErrorCode`, docs/call.md). `code.rawValue` is the number.
public struct MeetingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, with the number of docs/call.md's error tables as its `rawValue`.
    public enum Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// 3001: server unreachable, connection lost, or no answer in time.
        case network
        /// 3002: a microphone could not be opened or failed while in use.
        case audioDeviceFailed
        /// 3003: an unknown device id, an unreadable file, a call in the wrong state.
        case invalidArgument
        /// 3010: no webcam device has that id (or none exists).
        case noWebcamFound
        /// 3059: no microphone device found.
        case noMicrophoneFound
        /// 3068: the action is not supported (e.g. `setAudioDevice` to a device that cannot play).
        case actionNotSupported
        /// 4001–4017, 5000, 5003: the server's code, as its `error` message gave it.
        case server(CallErrorCode)

        /// The number: 3001…3068 for the SDK's own codes, the server's code otherwise.
        public var rawValue: Int {
            switch self {
            case .network: 3001
            case .audioDeviceFailed: 3002
            case .invalidArgument: 3003
            case .noWebcamFound: 3010
            case .noMicrophoneFound: 3059
            case .actionNotSupported: 3068
            case .server(let code): code.rawValue
            }
        }

        /// The code of a number; nil for a number that is none of the SDK's or the server's codes.
        public init?(rawValue: Int) {
            switch rawValue {
            case 3001: self = .network
            case 3002: self = .audioDeviceFailed
            case 3003: self = .invalidArgument
            case 3010: self = .noWebcamFound
            case 3059: self = .noMicrophoneFound
            case 3068: self = .actionNotSupported
            default:
                guard let code = CallErrorCode(rawValue: rawValue) else { return nil }
                self = .server(code)
            }
        }

        /// The number, as the documentation lists it (`3001`).
        public var description: String { String(rawValue) }
    }

    /// What went wrong, typed; `code.rawValue` is the documented number.
    public var code: Code
    /// One sentence saying what failed, for people.
    public var message: String

    /// An error with `code` and a sentence.
    public init(code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message (number)`.
    public var description: String { "\(message) (\(code.rawValue))" }

    /// Why `join()` failed, for the reasons an app shows differently.
    public enum JoinFailure: Sendable, Hashable {
        /// The reasons `join()` fails with, as the SDK guides name them (`other`: any other code).
        case invalidToken, tokenExpired, roomNotFound, roomFull, network, other
    }

    /// Why `join()` failed, as one of the guides' reasons.
    public var joinFailure: JoinFailure {
        switch code {
        case .server(.invalidToken), .server(.wrongRoom): .invalidToken
        case .server(.tokenExpired): .tokenExpired
        case .server(.roomNotFound): .roomNotFound
        case .server(.roomFull): .roomFull
        case .network: .network
        default: .other
        }
    }

    init(_ error: CallError) {
        self.init(code: .server(error.code), error.message)
    }
}

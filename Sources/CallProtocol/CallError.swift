/// The numeric codes of the call protocol's `error` messages and HTTP error bodies (docs/call.md).
public enum CallErrorCode: Int, Sendable, Hashable, CaseIterable {
    /// Malformed token (non-canonical encoding, a `crit` header included), its signature does not match the
    /// server's secret, or its `nbf` is still ahead.
    case invalidToken = 4001
    /// The token's `exp` has passed.
    case tokenExpired = 4002
    case roomNotFound = 4003
    case roomFull = 4004
    /// The token admits to another room.
    case wrongRoom = 4005
    /// The participant's role does not allow the action.
    case notAllowed = 4006
    /// A message or request that is not valid JSON of the protocol.
    case malformedMessage = 4007
    /// A message over the server's limit (64 KiB).
    case messageTooLarge = 4008
    /// `join` not sent yet, or sent twice.
    case joinState = 4009
    case noSuchParticipant = 4010
    /// A moderator removed the participant.
    case removed = 4011
    /// No message from the client within the client timeout.
    case timedOut = 4012
    /// The room was deleted.
    case roomClosed = 4013
    /// A participant with this id is already in the room.
    case duplicateParticipant = 4014
    /// The client sent more messages or bytes a second than the server's budget; the connection is closed.
    case rateLimited = 4015
    /// HTTP API: no call has this path.
    case noSuchCall = 4016
    /// HTTP API: the path's calls take other methods (the answer's `Allow` header lists them).
    case methodNotAllowed = 4017
    case serverError = 5000
    /// Several nodes (`serve --redis`): the room's node cannot be reached, or this node has lost Redis and
    /// does not host the room; try again (or another node).
    case unavailable = 5003

    /// The HTTP status for an API answer with this code.
    public var httpStatus: Int {
        switch self {
        case .invalidToken, .tokenExpired: 401
        case .roomNotFound, .noSuchParticipant: 404
        case .roomFull, .joinState, .duplicateParticipant: 409
        case .wrongRoom, .notAllowed: 403
        case .malformedMessage: 400
        case .messageTooLarge: 413
        case .removed, .timedOut, .roomClosed: 410
        case .rateLimited: 429
        case .noSuchCall: 404
        case .methodNotAllowed: 405
        case .serverError: 500
        case .unavailable: 503
        }
    }
}

/// The one error type of CallProtocol: a protocol error code and a sentence for people.
public struct CallError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: CallErrorCode
    public var message: String

    public init(_ code: CallErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(message) (\(code.rawValue))" }
}

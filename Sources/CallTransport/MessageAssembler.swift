/// Joins the pieces of incoming WebSocket messages and checks them: text always, binary only where
/// the connection's path takes it (`WebServer`'s `binaryPaths`).
///
/// A message may arrive as several frames, and libwebsockets may hand one frame over in several
/// parts; `lws_is_final_fragment` is true on the last part of the last frame.
struct MessageAssembler {
    /// A whole message.
    enum Message: Equatable {
        case text(String)
        case binary([UInt8])
    }

    /// Why a message was refused, with the close code to send (RFC 6455 §7.4.1).
    enum Refusal: Error {
        /// Over the byte limit: 1009.
        case tooLarge(limit: Int)
        /// A binary frame: 1003.
        case binary
        /// Not UTF-8: 1007.
        case invalidUTF8

        var closeCode: UInt16 {
            switch self {
            case .tooLarge: 1009
            case .binary: 1003
            case .invalidUTF8: 1007
            }
        }

        var reason: String {
            switch self {
            case .tooLarge(let limit): "message over \(limit) bytes"
            case .binary: "binary messages are not accepted"
            case .invalidUTF8: "text message is not UTF-8"
            }
        }
    }

    /// The largest message accepted, in bytes.
    let limit: Int
    /// Whether binary messages are taken (else refused with 1003).
    let acceptsBinary: Bool
    private var pending: [UInt8] = []

    init(limit: Int, acceptsBinary: Bool = false) {
        self.limit = limit
        self.acceptsBinary = acceptsBinary
    }

    /// Adds one received part.
    /// - Returns: The message when `isFinal` completes it, else nil.
    /// - Throws: `Refusal` when the message must be refused; the connection should then be closed.
    mutating func append(_ part: UnsafeRawBufferPointer, isBinary: Bool, isFinal: Bool) throws(Refusal) -> Message? {
        if isBinary, !acceptsBinary { throw .binary }
        guard pending.count + part.count <= limit else {
            pending = []
            throw .tooLarge(limit: limit)
        }
        pending.append(contentsOf: part)
        guard isFinal else { return nil }
        defer { pending = [] }
        if isBinary { return .binary(pending) }
        guard let text = String(validating: pending, as: UTF8.self) else { throw .invalidUTF8 }
        return .text(text)
    }
}

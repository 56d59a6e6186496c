/// Joins the pieces of incoming WebSocket text messages and checks them.
///
/// A message may arrive as several frames, and libwebsockets may hand one frame over in several
/// parts; `lws_is_final_fragment` is true on the last part of the last frame.
struct MessageAssembler {
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
    private var pending: [UInt8] = []

    init(limit: Int) { self.limit = limit }

    /// Adds one received part.
    /// - Returns: The message when `isFinal` completes it, else nil.
    /// - Throws: `Refusal` when the message must be refused; the connection should then be closed.
    mutating func append(_ part: UnsafeRawBufferPointer, isBinary: Bool, isFinal: Bool) throws(Refusal) -> String? {
        if isBinary { throw .binary }
        guard pending.count + part.count <= limit else {
            pending = []
            throw .tooLarge(limit: limit)
        }
        pending.append(contentsOf: part)
        guard isFinal else { return nil }
        defer { pending = [] }
        guard let text = String(validating: pending, as: UTF8.self) else { throw .invalidUTF8 }
        return text
    }
}

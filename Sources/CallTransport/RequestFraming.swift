/// How the body of an HTTP/1.1 request is delimited (RFC 9112 §6), decided from its head before any
/// of the body is read.
///
/// Strict on purpose. libwebsockets reads `Content-Length` with `atoll` (`12abc` as 12, `-5` as no
/// body, two headers, which it joins as `5, 6`, as 5) and expects a body of up to 100 MiB for a POST,
/// PUT or PATCH without one; it does not decode `Transfer-Encoding`. Anything but one plain decimal
/// length would let the server and lws disagree on where the body ends, and what lws then parses as
/// the next request is the rest of this one. So a request is refused, and its connection closed after
/// the answer, unless its framing is one of:
/// - no `Transfer-Encoding` and no `Content-Length`: no body (§6.3);
/// - no `Transfer-Encoding` and one `Content-Length` of 1–18 ASCII digits (18 digits fit an `Int`, and
///   lws reads values up to 31 characters the same way) that is at most the body limit.
enum RequestFraming: Equatable {
    /// A body of exactly `bytes` bytes (0: none). `closeAfter`: lws will take what follows the head as
    /// a body (a POST, PUT or PATCH without `Content-Length`), so the connection must close after the
    /// answer.
    case body(bytes: Int, closeAfter: Bool)
    /// Refused: answer `status` with `reason`, then close the connection.
    case refused(status: Int, reason: String)

    /// - Parameters:
    ///   - method: The request method in capitals.
    ///   - transferEncoding: The `Transfer-Encoding` header as lws joins repeated ones, or nil.
    ///   - contentLength: The `Content-Length` header as lws joins repeated ones (`5, 6`), or nil.
    ///   - maximumBodyBytes: The largest body accepted; a longer declared one is refused with 413.
    init(method: String, transferEncoding: String?, contentLength: String?, maximumBodyBytes: Int) {
        if let transferEncoding {
            // Transfer-Encoding overrides Content-Length (§6.3), so it decides when both are sent. chunked
            // is a coding every HTTP/1.1 recipient knows; refusing it is "length required" (RFC 9110
            // §15.5.12: the client may repeat the request with a Content-Length). Any other final coding
            // is one this server does not implement (§6.1: 501).
            let codings = transferEncoding.split(separator: ",").map { $0.trimmingSpaces().lowercased() }
            if codings.last == "chunked" {
                self = .refused(status: 411, reason: "Transfer-Encoding chunked is not supported: send the body with Content-Length\n")
            } else {
                self = .refused(status: 501, reason: "Transfer-Encoding other than chunked is not implemented: send the body with Content-Length\n")
            }
            return
        }
        guard let contentLength else {
            self = .body(bytes: 0, closeAfter: ["POST", "PUT", "PATCH"].contains(method))
            return
        }
        let digits = contentLength[...].trimmingSpaces().utf8
        if digits.contains(UInt8(ascii: ",")) {
            self = .refused(status: 400, reason: "invalid Content-Length: the header is repeated\n")
            return
        }
        guard (1...18).contains(digits.count), digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            self = .refused(status: 400, reason: "invalid Content-Length: one decimal number of bytes (1 to 18 digits) is required\n")
            return
        }
        let bytes = digits.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
        guard bytes <= maximumBodyBytes else {
            self = .refused(status: 413, reason: "request body over \(maximumBodyBytes) bytes\n")
            return
        }
        self = .body(bytes: bytes, closeAfter: false)
    }
}

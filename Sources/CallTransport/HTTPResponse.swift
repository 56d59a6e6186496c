/// What the server answers to one `HTTPRequest`.
///
/// The server writes the status line, `content-type` (unless empty), `content-length` (except for
/// 204 and 304) and then `headers` in order.
public struct HTTPResponse: Sendable {
    /// The status code, 100…599.
    public var status: Int
    /// The `Content-Type` value; empty: no such header.
    public var contentType: String
    /// The body.
    public var body: [UInt8]
    /// Extra headers, in order: (name, value), e.g. `("cache-control", "no-store")`.
    public var headers: [(String, String)]

    public init(status: Int, contentType: String = "", body: [UInt8] = [], headers: [(String, String)] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    /// A JSON body (`application/json`), e.g. `.json(status: 200, #"{"status":"ok"}"#)`.
    public static func json(status: Int = 200, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Array(text.utf8))
    }

    /// A plain text body (`text/plain; charset=utf-8`).
    public static func text(status: Int = 200, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    /// An HTML page (`text/html; charset=utf-8`).
    public static func html(status: Int = 200, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/html; charset=utf-8", body: Array(text.utf8))
    }

    /// No body at all, e.g. `.empty(status: 204)`.
    public static func empty(status: Int = 204) -> HTTPResponse {
        HTTPResponse(status: status)
    }

    /// The body as UTF-8 text, or nil if it is not valid UTF-8.
    public var bodyText: String? { String(validating: body, as: UTF8.self) }
}

/// One HTTP request as the server received it, body complete.
public struct HTTPRequest: Sendable {
    /// The method in capitals: `GET`, `POST`, `PUT`, `DELETE`, `PATCH`, `OPTIONS` or `HEAD`.
    public var method: String
    /// The path without the query, as libwebsockets hands it over (percent-decoded, `..` resolved).
    public var path: String
    /// The query arguments, decoded as a form: `%XX` escapes and `+` as a space (so a literal `+`
    /// must arrive as `%2B`); split at `&` before decoding, so `%26` stays inside a value. An argument
    /// without `=` maps to `""`; of repeated names the last wins.
    public var query: [String: String]
    /// Request headers by lower-cased name (`authorization`, `content-type`, `host`, …). Only the
    /// headers libwebsockets has a token for are present; others only when the server was given their names (`customHeaders`).
    public var headers: [String: String]
    /// The body; at most the server's `maximumBodyBytes`.
    public var body: [UInt8]

    public init(method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
                body: [UInt8] = []) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The body as UTF-8 text, or nil if it is not valid UTF-8.
    public var bodyText: String? { String(validating: body, as: UTF8.self) }

    /// The token of an `Authorization: Bearer TOKEN` header, if there is one.
    public var bearerToken: String? {
        guard let value = headers["authorization"] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return parts[1].trimmingSpaces()
    }
}

extension Substring {
    func trimmingSpaces() -> String {
        var slice = self[...]
        while slice.first == " " || slice.first == "\t" { slice = slice.dropFirst() }
        while slice.last == " " || slice.last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}

/// The signature of a webhook delivery, in its `ActiveSpeaker-Signature` header:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" under the shared secret>`.
///
/// The time is inside what is signed, so a receiver that refuses signatures older than a few minutes
/// cannot be fed a recorded delivery again later; each attempt of a delivery is signed anew.
public struct WebhookSignature: Sendable, Hashable {
    /// The header that carries it.
    public static let header = "ActiveSpeaker-Signature"

    /// Unix time of the attempt, in seconds.
    public var time: Int
    /// The 32-byte HMAC-SHA256.
    public var code: [UInt8]

    /// Signs `body` at `time` under `secret`.
    public init(secret: [UInt8], time: Int, body: [UInt8]) {
        self.time = time
        code = HMACSHA256.authenticationCode(key: secret, message: Array("\(time).".utf8) + body)
    }

    /// Reads a header value; nil when it is not `t=…,v1=<64 hex digits>` (other `k=v` parts are skipped,
    /// so that a later scheme can be added beside `v1`).
    public init?(header value: String) {
        var time: Int?
        var code: [UInt8]?
        for part in value.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return nil }
            let key = pair[0].trimmingCharacters(in: " "), text = pair[1].trimmingCharacters(in: " ")
            if key == "t" { time = Int(text) }
            if key == "v1" { code = Self.bytes(hex: text) }
        }
        guard let time, let code, code.count == 32 else { return nil }
        self.time = time
        self.code = code
    }

    /// The header value.
    public var headerValue: String {
        "t=\(time),v1=" + code.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Whether `header` signs `body` under `secret`, at most `tolerance` seconds from `now` (both Unix
    /// seconds). The comparison takes the same time wherever the codes differ.
    public static func verify(header: String, body: [UInt8], secret: [UInt8], now: Int, tolerance: Int = 300) -> Bool {
        guard let given = WebhookSignature(header: header), abs(now - given.time) <= tolerance else { return false }
        return HMACSHA256.equal(given.code, WebhookSignature(secret: secret, time: given.time, body: body).code)
    }

    private static func bytes(hex: Substring) -> [UInt8]? {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in character: Character) -> Substring {
        var text = self
        while text.first == character { text.removeFirst() }
        while text.last == character { text.removeLast() }
        return text
    }
}

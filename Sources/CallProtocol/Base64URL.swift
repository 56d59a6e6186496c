import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs use it.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Nil for text that is not unpadded base64url (standard base64's `+`, `/` and `=` are refused).
    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        guard !text.contains(where: { $0 == "+" || $0 == "/" || $0 == "=" }) else { return nil }
        let standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let padded = standard + String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: padded).map { [UInt8]($0) }
    }
}

import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs use it.
enum Base64URL {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of canonical unpadded base64url text; nil for anything else.
    ///
    /// Refused: characters outside `A-Z a-z 0-9 - _` (standard base64's `+`, `/`, `=` padding and white
    /// space included), a length of 1 mod 4 (a lone character encodes no whole byte), and non-zero
    /// trailing bits. The last character of a length of 2 mod 4 carries 2 data bits and 4 unused bits,
    /// of 3 mod 4 4 data bits and 2 unused bits; RFC 4648 §3.5 lets a decoder refuse text whose unused
    /// bits are not zero, and a JWT verifier must, or one signature (or claims set) has several spellings.
    /// - Complexity: O(*n*) in the length of `text`.
    static func decode<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let count = text.utf8.count
        guard count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text.utf8 {
            guard let value = sextet(character) else { return nil }
            accumulator = (accumulator << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // What is left (0, 2 or 4 bits) encodes nothing and must be zero.
        guard accumulator == 0 else { return nil }
        return bytes
    }

    /// The 6-bit value of a base64url character.
    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}

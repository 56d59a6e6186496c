internal import CCrypto

/// HMAC-SHA256 (RFC 2104) through OpenSSL's libcrypto.
enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    /// The corresponding C function is `HMAC` with `EVP_sha256()`.
    static func authenticationCode(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { key in
            message.withUnsafeBufferPointer { message in
                code.withUnsafeMutableBufferPointer { code in
                    HMAC(
                        EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress, message.count,
                        code.baseAddress, &length)
                }
            }
        }
        // HMAC fails only when the digest cannot be set up, which for SHA-256 is a broken libcrypto.
        precondition(result != nil && length == 32, "libcrypto HMAC-SHA256 failed")
        return Array(code[..<Int(length)])
    }

    /// Compares two codes in time that does not depend on where they differ.
    /// The corresponding C function is `CRYPTO_memcmp`.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 } }
    }

    /// `count` bytes from OpenSSL's cryptographically secure generator.
    /// The corresponding C function is `RAND_bytes`.
    static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        let result = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(result == 1, "libcrypto RAND_bytes failed")
        return bytes
    }
}

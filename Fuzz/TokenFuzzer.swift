import CCrypto
import Foundation

/// libFuzzer target for the token verifier, `AccessToken.verify` (what the server applies to the token of
/// every `join` and to every API call's bearer token), under a fixed secret at a fixed instant.
///
/// Built by `tools/network/fuzz_call.sh token` together with the CallProtocol sources into one module, with
/// `swiftc -sanitize=fuzzer,address`. Only public API of CallProtocol is used (plus libcrypto's `HMAC`
/// for its own signatures), so that the target keeps building while the verifier changes.
///
/// Input: byte 0 picks how the rest becomes a token (byte 0 mod 3):
/// - 0: the rest is the token text (invalid UTF-8 repaired);
/// - 1: byte 1 is the length of a JOSE header, then the header bytes, then the payload bytes; both are
///   base64url-encoded and signed here with the secret, so that the header and claims checks are reached;
/// - 2: claims, each string a length byte and its bytes: room, participant, display name; then a repeat
///   count for the name (1-16), the role, the form of `exp` (even: now ± 2^31 s, odd: any Int), and
///   `exp` and `iat` (8 bytes each, little-endian; `iat` taken modulo now + 1); signed by `signed(with:)`.
///
/// Checks: a refusal is `.invalidToken` or `.tokenExpired`; an accepted token has a valid room and
/// participant id, a 1-128-character display name and `exp` after now, is refused under another secret,
/// and (modes 0 and 1) its re-signed form verifies to the same token (unless re-signing takes it past
/// 4,096 bytes).
/// Mode 2 also knows the answer beforehand: a token made by `signed(with:)` verifies to itself (display
/// name defaulted as the verifier does) exactly when its ids are valid, its text is at most 4,096 bytes
/// and it has not expired; otherwise it is refused with the code that says which.

private let secret = TokenSecret("activespeaker-fuzz-secret")!
private let otherSecret = TokenSecret("activespeaker-fuzz-secret-2")!
/// 2027-01-15 08:00:00 UTC.
private let now = 1_800_000_000

@_cdecl("LLVMFuzzerTestOneInput")
public func tokenFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = UnsafeBufferPointer(start: data, count: size)
    guard let mode = input.first else { return 0 }
    var reader = ByteReader(input: UnsafeBufferPointer(rebasing: input[1...]))
    switch mode % 3 {
    case 0:
        checkVerify(String(decoding: reader.rest(), as: UTF8.self), resigning: true)
    case 1:
        let header = reader.bytes(Int(reader.byte()))
        let signingInput = base64URL(header) + "." + base64URL(reader.rest())
        checkVerify(signingInput + "." + base64URL(hmacSHA256(secret.bytes, Array(signingInput.utf8))), resigning: true)
    default:
        checkSigned(claims: &reader)
    }
    return 0
}

/// Verifies `text` and checks what holds for any token text; with `resigning`, also that an accepted
/// token re-signed comes back whole (mode 2 checks more than that without it).
@discardableResult
private func checkVerify(_ text: String, resigning: Bool) -> Result<AccessToken, CallError> {
    let token: AccessToken
    do {
        token = try AccessToken.verify(text, secret: secret, now: now)
    } catch {
        precondition(error.code == .invalidToken || error.code == .tokenExpired, "refused with \(error.code)")
        return .failure(error)
    }
    precondition(token.room == AccessToken.anyRoom || AccessToken.isValidID(token.room), "accepted room \(token.room)")
    precondition(AccessToken.isValidID(token.participantID), "accepted participant \(token.participantID)")
    precondition(!token.displayName.isEmpty && token.displayName.count <= 128, "accepted name \(token.displayName)")
    precondition(now < token.expiresAt, "accepted an expired token")
    do {
        _ = try AccessToken.verify(text, secret: otherSecret, now: now)
        preconditionFailure("accepted under another secret: \(text)")
    } catch {
        precondition(error.code == .invalidToken, "another secret refused with \(error.code)")
    }
    guard resigning else { return .success(token) }
    // Re-signed, the token may grow (a standard header, `iat` and `name` written out) past the verifier's
    // 4,096 bytes; below that it must come back whole.
    let resigned = token.signed(with: secret)
    do {
        let again = try AccessToken.verify(resigned, secret: secret, now: now)
        precondition(resigned.utf8.count <= 4096, "accepted \(resigned.utf8.count) bytes")
        precondition(again == token, "\(token) re-signed came back as \(again)")
    } catch {
        precondition(resigned.utf8.count > 4096 && error.code == .invalidToken, "\(token) re-signed is refused: \(error)")
    }
    return .success(token)
}

/// Mode 2: a token made by `signed(with:)` from fuzzed claims.
private func checkSigned(claims reader: inout ByteReader) {
    let room = String(decoding: reader.bytes(Int(reader.byte())), as: UTF8.self)
    let participant = String(decoding: reader.bytes(Int(reader.byte())), as: UTF8.self)
    let name = String(decoding: reader.bytes(Int(reader.byte())), as: UTF8.self)
    let displayName = String(repeating: name, count: 1 + Int(reader.byte() % 16))
    let role = Role.allCases[Int(reader.byte()) % Role.allCases.count]
    // Half the time an expiry within ±2^31 s of now, to reach both sides of it; else any Int.
    let expiresAt = reader.byte() % 2 == 0 ? now + Int(Int32(truncatingIfNeeded: reader.int())) : reader.int()
    // The verifier does not check iat; kept at or before now so that a future iat rule cannot trip this target.
    let issuedAt = Int(UInt64(bitPattern: Int64(reader.int())) % UInt64(now + 1))
    let token = AccessToken(
        room: room, participantID: participant, displayName: displayName, role: role, issuedAt: issuedAt, expiresAt: expiresAt)
    let text = token.signed(with: secret)
    let validClaims = (room == AccessToken.anyRoom || AccessToken.isValidID(room)) && AccessToken.isValidID(participant)
    switch checkVerify(text, resigning: false) {
    case .success(let read):
        precondition(validClaims && text.utf8.count <= 4096 && now < expiresAt, "accepted \(token)")
        // A name the verifier cannot use (empty, over 128 characters) reads as none: the participant id,
        // not signed.
        let usable = !displayName.isEmpty && displayName.count <= 128
        var expected = token
        expected.displayName = usable ? displayName : participant
        expected.hasSignedName = usable
        precondition(read == expected, "\(token) came back as \(read)")
    case .failure(let error):
        precondition(!validClaims || text.utf8.count > 4096 || now >= expiresAt, "refused \(token): \(error)")
        let expectedCode: CallErrorCode = validClaims && text.utf8.count <= 4096 ? .tokenExpired : .invalidToken
        precondition(error.code == expectedCode, "refused \(token) with \(error.code), not \(expectedCode)")
    }
}

/// Reads the fuzz input front to back; past its end every read gives zeros or nothing.
private struct ByteReader {
    var input: UnsafeBufferPointer<UInt8>
    var offset = 0

    mutating func byte() -> UInt8 {
        guard offset < input.count else { return 0 }
        defer { offset += 1 }
        return input[offset]
    }

    mutating func bytes(_ count: Int) -> [UInt8] {
        let end = min(input.count, offset + count)
        defer { offset = end }
        return Array(input[offset..<end])
    }

    mutating func rest() -> [UInt8] { bytes(input.count) }

    /// Eight bytes, little-endian.
    mutating func int() -> Int {
        (0..<8).reduce(0) { value, index in value | Int(byte()) << (8 * index) }
    }
}

/// Unpadded base64url (RFC 4648 §5), written here rather than taken from CallProtocol.
private func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// HMAC-SHA256 of `message` under `key`. The corresponding C function is `HMAC` with `EVP_sha256()`.
private func hmacSHA256(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
    var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
    var length: UInt32 = 0
    let result = HMAC(EVP_sha256(), key, Int32(key.count), message, message.count, &code, &length)
    precondition(result != nil && length == 32, "libcrypto HMAC-SHA256 failed")
    return Array(code[..<32])
}

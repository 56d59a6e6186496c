import Testing
@testable import CallProtocol

@Suite struct AccessTokenTests {
    let secret = TokenSecret("a-test-secret-of-enough-length")!

    @Test func hmacMatchesRFC4231TestCase2() {
        let code = HMACSHA256.authenticationCode(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        let hex = code.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
        #expect(hex == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func signatureMatchesAPublishedHS256Example() {
        // The example token of RFC 7519's community (header {"alg":"HS256","typ":"JWT"}, secret "your-256-bit-secret").
        let input = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
        let code = HMACSHA256.authenticationCode(key: Array("your-256-bit-secret".utf8), message: Array(input.utf8))
        #expect(Base64URL.encode(code) == "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")
    }

    @Test func roundTripKeepsEveryClaim() throws {
        let token = AccessToken(room: "standup", participantID: "alice", displayName: "Alice Ø", role: .moderator, issuedAt: 1000, expiresAt: 5000)
        let read = try AccessToken.verify(token.signed(with: secret), secret: secret, now: 4999)
        #expect(read == token)
    }

    /// `.` and `..` are made of allowed characters but name no resource in a URL path and, as a recording
    /// folder, the recordings folder itself or its parent.
    @Test(arguments: [(".", false), ("..", false), ("...", true), ("a.b", true), (".hidden", true), ("", false),
                      (String(repeating: "x", count: 65), false), ("a/b", false)])
    func idsFollowTheRule(id: String, valid: Bool) {
        #expect(AccessToken.isValidID(id) == valid)
    }

    @Test func aTokenForTheRoomDotDotIsRefused() {
        let text = AccessToken(room: "..", participantID: "p", role: .publisher, issuedAt: 0, expiresAt: 100).signed(with: secret)
        #expect(throws: CallError.self) { try AccessToken.verify(text, secret: secret, now: 1) }
    }

    @Test func expiredTokenIsRefusedWithItsOwnCode() {
        let text = AccessToken(room: "r", participantID: "p", role: .publisher, issuedAt: 0, expiresAt: 100).signed(with: secret)
        #expect(throws: CallError(.tokenExpired, "token expired")) { try AccessToken.verify(text, secret: secret, now: 100) }
    }

    @Test func tokenOfAnotherSecretIsRefused() {
        let other = TokenSecret("another-secret-of-enough-length")!
        let text = AccessToken(room: "r", participantID: "p", role: .publisher, issuedAt: 0, expiresAt: 100).signed(with: other)
        #expect(throws: CallError.self) { try AccessToken.verify(text, secret: secret, now: 1) }
        do {
            _ = try AccessToken.verify(text, secret: secret, now: 1)
        } catch {
            #expect(error.code == .invalidToken)
        }
    }

    @Test func changedClaimsBreakTheSignature() throws {
        let text = AccessToken(room: "r", participantID: "p", role: .subscriber, issuedAt: 0, expiresAt: 100).signed(with: secret)
        let parts = text.split(separator: ".").map(String.init)
        // Same signature, claims rewritten to moderator.
        let forgedClaims = Base64URL.encode(Array(#"{"exp":100,"role":"moderator","room":"r","sub":"p"}"#.utf8))
        let forged = parts[0] + "." + forgedClaims + "." + parts[2]
        #expect(throws: CallError.self) { try AccessToken.verify(forged, secret: secret, now: 1) }
        // The "none" algorithm with no signature.
        let none = Base64URL.encode(Array(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + "."
        #expect(throws: CallError.self) { try AccessToken.verify(none, secret: secret, now: 1) }
    }

    @Test(arguments: ["", "abc", "a.b", "a.b.c.d", "....", "e30.e30.e30", "x.y.z"])
    func garbageIsAnInvalidToken(text: String) {
        do {
            _ = try AccessToken.verify(text, secret: secret, now: 1)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == .invalidToken)
        }
    }

    @Test func overlongTokenIsRefusedBeforeAnyWork() {
        let text = String(repeating: "x", count: 2000) + "." + String(repeating: "y", count: 2000) + "." + String(repeating: "z", count: 200)
        #expect(throws: CallError(.invalidToken, "invalid token: not a JWT")) { try AccessToken.verify(text, secret: secret, now: 1) }
    }

    @Test func signedButInvalidClaimsAreRefused() {
        for id in ["", "has space", String(repeating: "a", count: 65), "semi;colon"] {
            let text = AccessToken(room: "r", participantID: id, role: .publisher, issuedAt: 0, expiresAt: 100).signed(with: secret)
            #expect(throws: CallError.self) { try AccessToken.verify(text, secret: secret, now: 1) }
        }
    }

    /// A token signed under `secret` from the header and claims given as text, each part encoded by
    /// `encode` (canonical base64url unless a test alters it).
    private func token(header: String = #"{"alg":"HS256","typ":"JWT"}"#, claims: String,
                       encode: ([UInt8]) -> String = Base64URL.encode) -> String {
        let input = encode(Array(header.utf8)) + "." + encode(Array(claims.utf8))
        return input + "." + Base64URL.encode(HMACSHA256.authenticationCode(key: secret.bytes, message: Array(input.utf8)))
    }

    /// The other spellings of the last character of base64url text whose final character carries
    /// trailing bits (bits that encode nothing and must be zero, RFC 4648 §3.5).
    private func nonCanonicalVariants(of text: String) -> [String] {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let unused = text.count % 4 == 2 ? 4 : 2  // trailing bits: 2 chars → 4 bits unused, 3 chars → 2
        guard text.count % 4 != 0, let last = alphabet.firstIndex(of: text.last!) else { return [] }
        return (1..<(1 << unused)).map { String(text.dropLast()) + String(alphabet[last | $0]) }
    }

    @Test func aTokenIsRefusedBeforeItsNotBefore() throws {
        let claims = #"{"room":"r","sub":"p","role":"publisher","iat":0,"nbf":500,"exp":1000}"#
        #expect(throws: CallError(.invalidToken, "invalid token: not valid before 500 (nbf)")) {
            try AccessToken.verify(token(claims: claims), secret: secret, now: 499)
        }
        #expect(try AccessToken.verify(token(claims: claims), secret: secret, now: 500).participantID == "p")
        #expect(try AccessToken.verify(token(claims: claims), secret: secret, now: 999).participantID == "p")
    }

    /// RFC 7515 §4.1.11: a recipient that does not understand an extension listed in `crit` must refuse
    /// the token; this server understands none.
    @Test(arguments: [#"{"alg":"HS256","crit":["b64"],"b64":false}"#, #"{"alg":"HS256","crit":["exp"]}"#,
                      #"{"alg":"HS256","crit":[]}"#, #"{"alg":"HS256","crit":"x"}"#])
    func aCriticalHeaderIsRefused(header: String) {
        let text = token(header: header, claims: #"{"room":"r","sub":"p","role":"publisher","exp":1000}"#)
        #expect(throws: CallError(.invalidToken, "invalid token: critical header extensions (crit) are not supported")) {
            try AccessToken.verify(text, secret: secret, now: 1)
        }
    }

    /// Base64url text whose last character has non-zero trailing bits decodes to the same bytes as the
    /// canonical text; accepting it would let one signature be written four ways.
    @Test func nonCanonicalSignatureEncodingsAreRefused() throws {
        let text = AccessToken(room: "r", participantID: "p", role: .publisher, issuedAt: 0, expiresAt: 100).signed(with: secret)
        _ = try AccessToken.verify(text, secret: secret, now: 1)
        let parts = text.split(separator: ".").map(String.init)
        let variants = nonCanonicalVariants(of: parts[2])
        #expect(variants.count == 3)  // 32 bytes: 43 characters, the last with 2 unused bits
        for variant in variants {
            #expect(throws: CallError(.invalidToken, "invalid token: bad signature encoding")) {
                try AccessToken.verify(parts[0] + "." + parts[1] + "." + variant, secret: secret, now: 1)
            }
        }
    }

    @Test func nonCanonicalHeaderAndClaimsEncodingsAreRefused() throws {
        // 28 header bytes and 71 claims bytes: both encodings end in a character with unused bits.
        let header = #"{"alg":"HS256","typ":"JWT" }"#
        let claims = #"{"room":"r","sub":"p","name":"P","role":"publisher","iat":0,"exp":1000}"#
        #expect(header.utf8.count % 3 != 0 && claims.utf8.count % 3 != 0)
        _ = try AccessToken.verify(token(header: header, claims: claims), secret: secret, now: 1)
        let headerVariants = nonCanonicalVariants(of: Base64URL.encode(Array(header.utf8)))
        let claimsVariants = nonCanonicalVariants(of: Base64URL.encode(Array(claims.utf8)))
        #expect(headerVariants.count == 15 && claimsVariants.count == 3)
        for variant in headerVariants {
            // Signed over the variant text, so only the encoding is wrong.
            let text = token(header: header, claims: claims) { bytes in
                bytes == Array(header.utf8) ? variant : Base64URL.encode(bytes)
            }
            #expect(throws: CallError.self) { try AccessToken.verify(text, secret: secret, now: 1) }
        }
        for variant in claimsVariants {
            let text = token(header: header, claims: claims) { bytes in
                bytes == Array(claims.utf8) ? variant : Base64URL.encode(bytes)
            }
            #expect(throws: CallError.self) { try AccessToken.verify(text, secret: secret, now: 1) }
        }
    }

    @Test(arguments: ["", "QQ", "QUI", "QUJD", "AA", "-_-_", "_w"])
    func base64URLDecodesCanonicalText(text: String) throws {
        let bytes = try #require(Base64URL.decode(text))
        #expect(Base64URL.encode(bytes) == text)
    }

    /// A lone final character (length 1 mod 4), characters outside the alphabet, padding, and
    /// non-zero trailing bits (`QR`: `Q` = 16 then `R` = 17, whose low 4 bits should be 0).
    @Test(arguments: ["A", "QUJDR", "QR", "QUJ", "QUK", "QQ==", "QU+D", "QU/D", "QU D", "QUJ\n", "Q\u{00E9}"])
    func base64URLRefusesNonCanonicalText(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }

    @Test func secretsAreLongEnoughAndRandom() {
        #expect(TokenSecret("short") == nil)
        let a = TokenSecret.random(), b = TokenSecret.random()
        #expect(a != b)
        #expect(a.text.count == 43)
        #expect(TokenSecret(a.text) == a)
    }

    @Test func roles() {
        #expect(!Role.subscriber.canPublish)
        #expect(Role.publisher.canPublish && Role.moderator.canPublish)
    }
}

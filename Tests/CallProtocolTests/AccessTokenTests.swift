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

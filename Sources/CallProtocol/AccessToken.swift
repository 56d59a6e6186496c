import Foundation

/// What a participant may do in a room.
public enum Role: String, Sendable, Hashable, CaseIterable, Codable {
    /// Receives audio and events; publishes nothing.
    case subscriber
    /// Also publishes audio.
    case publisher
    /// Also mutes and removes others and manages the room.
    case moderator

    /// Whether the role may send audio.
    public var canPublish: Bool { self != .subscriber }
}

/// A room token: a JWT (RFC 7519) signed with HMAC-SHA256 under the server's secret.
///
/// The claims are `room` (a room id, or `*` for a server-wide token), `sub` (the participant id),
/// `name` (display name), `role`, `iat` and `exp` (seconds since 1970, UTC).
public struct AccessToken: Sendable, Hashable {
    /// The room the token admits to; `AccessToken.anyRoom` for a server-wide token.
    public var room: String
    public var participantID: String
    /// The signed `name`, or the participant id when the token has none (`hasSignedName` says which).
    public var displayName: String
    /// Whether the token carries a `name`. A signed name is the participant's; a client may choose its
    /// own display name only when the token has none.
    public var hasSignedName: Bool
    public var role: Role
    /// Seconds since 1970.
    public var issuedAt: Int
    /// Seconds since 1970; the token is refused from this instant on.
    public var expiresAt: Int

    /// The `room` of a server-wide token.
    public static let anyRoom = "*"

    public init(room: String, participantID: String, displayName: String? = nil, role: Role, issuedAt: Int, expiresAt: Int) {
        self.room = room
        self.participantID = participantID
        self.displayName = displayName ?? participantID
        self.hasSignedName = displayName != nil
        self.role = role
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
    }

    /// The rule of `isValidID`, as error messages state it.
    public static let idRule = "1-64 of A-Z a-z 0-9 . _ -, not . or .."

    /// Whether `id` is usable as a room or participant id: 1–64 of `A-Z a-z 0-9 . _ -`, but not `.` or
    /// `..`, which name no resource in a URL path (clients normalise them away) and, as a recording
    /// folder, would name the recordings folder itself or its parent.
    public static func isValidID(_ id: String) -> Bool {
        id != "." && id != ".." && (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                    || byte == 0x2E || byte == 0x5F || byte == 0x2D
            }
    }

    /// The signed compact form `header.payload.signature`.
    public func signed(with secret: TokenSecret) -> String {
        let header = #"{"alg":"HS256","typ":"JWT"}"#
        let claims = Claims(
            room: room, sub: participantID, name: hasSignedName ? displayName : nil, role: role.rawValue, iat: issuedAt, exp: expiresAt)
        let signingInput = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(JSON.encode(claims)))
        let signature = HMACSHA256.authenticationCode(key: secret.bytes, message: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }

    /// The display name a token signs (its `name` claim), read without checking the signature: what a client,
    /// which does not hold the secret, needs to know before it joins (the server refuses another name for a
    /// token that signs one). Nil for a token without a name or text that is not a JWT.
    public static func unverifiedSignedName(of text: String) -> String? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, text.utf8.count <= 4096, let payload = Base64URL.decode(parts[1]),
            let claims = JSON.decode(Claims.self, from: payload)
        else { return nil }
        return claims.name.flatMap { $0.isEmpty || $0.count > 128 ? nil : $0 }
    }

    /// Checks a token's signature, header, validity period and claims and reads them.
    ///
    /// All three parts must be canonical base64url (`Base64URL.decode`). The header must say `HS256` and
    /// carry no `crit` (RFC 7515 §4.1.11: a recipient must refuse extensions it does not understand, and
    /// this server understands none). The token is valid from `nbf` (when present) until before `exp`,
    /// both compared with `now` without leeway.
    /// - Parameters:
    ///   - text: The compact JWT.
    ///   - now: Seconds since 1970.
    /// - Throws: `CallError` `.invalidToken` (not a JWT, non-canonical encoding, not HS256, `crit` present,
    ///   bad signature, missing or bad claims, `nbf` still ahead) or `.tokenExpired`.
    public static func verify(_ text: String, secret: TokenSecret, now: Int) throws(CallError) -> AccessToken {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, text.utf8.count <= 4096 else { throw CallError(.invalidToken, "invalid token: not a JWT") }
        guard let signature = Base64URL.decode(parts[2]) else { throw CallError(.invalidToken, "invalid token: bad signature encoding") }
        let expected = HMACSHA256.authenticationCode(key: secret.bytes, message: Array((parts[0] + "." + parts[1]).utf8))
        guard HMACSHA256.equal(signature, expected) else { throw CallError(.invalidToken, "invalid token: signature does not match") }
        guard let headerBytes = Base64URL.decode(parts[0]), let header = JSON.decode(Header.self, from: headerBytes),
            header.alg == "HS256"
        else { throw CallError(.invalidToken, "invalid token: header is not HS256") }
        guard !header.hasCritical else {
            throw CallError(.invalidToken, "invalid token: critical header extensions (crit) are not supported")
        }
        guard let payload = Base64URL.decode(parts[1]), let claims = JSON.decode(Claims.self, from: payload) else {
            throw CallError(.invalidToken, "invalid token: missing or invalid claims (room, sub, role, exp)")
        }
        guard claims.room == anyRoom || isValidID(claims.room), isValidID(claims.sub),
            let role = Role(rawValue: claims.role)
        else { throw CallError(.invalidToken, "invalid token: invalid claims (room, sub or role)") }
        if let notBefore = claims.nbf, now < notBefore {
            throw CallError(.invalidToken, "invalid token: not valid before \(notBefore) (nbf)")
        }
        guard now < claims.exp else { throw CallError(.tokenExpired, "token expired") }
        let name = claims.name.flatMap { $0.isEmpty || $0.count > 128 ? nil : $0 }
        return AccessToken(
            room: claims.room, participantID: claims.sub, displayName: name, role: role,
            issuedAt: claims.iat ?? 0, expiresAt: claims.exp)
    }
}

/// The JOSE header: `alg`, and whether `crit` is present (whatever its value).
private struct Header: Decodable {
    var alg: String
    var hasCritical: Bool

    enum CodingKeys: String, CodingKey { case alg, crit }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        alg = try container.decode(String.self, forKey: .alg)
        hasCritical = container.contains(.crit)
    }
}

/// The JWT claims of a room token.
private struct Claims: Codable {
    var room: String
    var sub: String
    var name: String?
    var role: String
    var iat: Int?
    /// Not before: seconds since 1970; optional.
    var nbf: Int?
    var exp: Int
}

/// The server's signing key.
public struct TokenSecret: Sendable, Hashable {
    public let bytes: [UInt8]

    /// A secret from text (its UTF-8 bytes). At least 16 bytes.
    public init?(_ text: String) {
        guard text.utf8.count >= 16 else { return nil }
        bytes = Array(text.utf8)
    }

    /// 32 random bytes, shown as 43 base64url characters by `text`.
    public static func random() -> TokenSecret {
        TokenSecret(text: Base64URL.encode(HMACSHA256.randomBytes(32)))
    }

    private init(text: String) { bytes = Array(text.utf8) }

    /// The secret as text, when it was made from text or by `random()`.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

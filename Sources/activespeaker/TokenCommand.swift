import CallProtocol
import Foundation

/// `activespeaker token`: mints a room token.
struct TokenCommand: Command {
    static let name = "token"
    static let summary = "Mint a signed room token (JWT, HS256) for serve/join."
    static let synopsis = "token --secret TEXT --room ID --participant ID [--name TEXT] [--role ROLE] [--ttl SECONDS]"
    static let overview = """
        Prints a token that admits one participant to one room (or, with --room '*',
        to the server's management API and every room). Roles: subscriber (listens),
        publisher (also sends audio, the default), moderator (also mutes and removes
        others, manages rooms).
        """
    static let options: [OptionSpec] = [
        .value("secret", "TEXT", help: "The server's secret (or $ACTIVESPEAKER_SECRET)."),
        .value("room", "ID", help: "Room id, or * for a server-wide token."),
        .value("participant", "ID", help: "Participant id (1-64 of A-Z a-z 0-9 . _ -)."),
        .value("name", "TEXT", help: """
            Display name, signed: the client cannot change it (default: none;
            the client's displayName, else the participant id).
            """),
        .value("role", "ROLE", help: "subscriber, publisher (default) or moderator."),
        .value("ttl", "SECONDS", help: "Lifetime, 1 to 315360000 (default 3600)."),
    ]
    static let epilogue = """
        OUTPUT: the token (three base64url parts joined by dots) and a newline.

        EXIT STATUS: 0 success; 64 command-line error (a missing or bad option, a
        secret under 16 characters).
        """

    let token: AccessToken
    let secret: TokenSecret

    init(_ options: ParsedOptions) throws(CommandError) {
        guard let secretText = options.value("secret") ?? ProcessInfo.processInfo.environment["ACTIVESPEAKER_SECRET"] else {
            throw .usage("missing --secret")
        }
        guard let secret = TokenSecret(secretText) else { throw .usage("--secret: at least 16 characters") }
        self.secret = secret
        guard let room = options.value("room") else { throw .usage("missing --room") }
        guard room == AccessToken.anyRoom || AccessToken.isValidID(room) else { throw .usage("--room \(room): \(AccessToken.idRule), or *") }
        guard let participant = options.value("participant") else { throw .usage("missing --participant") }
        guard AccessToken.isValidID(participant) else { throw .usage("--participant \(participant): \(AccessToken.idRule)") }
        let roleText = options.value("role") ?? "publisher"
        guard let role = Role(rawValue: roleText) else { throw .usage("--role \(roleText): expected subscriber, publisher or moderator") }
        let ttl = try options.value("ttl").map { text throws(CommandError) in
            guard let value = Int(text), value > 0, value <= Self.longestTTL else {
                throw .usage("--ttl \(text): expected seconds, 1…\(Self.longestTTL) (10 years)")
            }
            return value
        } ?? 3600
        if let name = options.value("name"), name.isEmpty || name.count > 128 { throw .usage("--name: 1-128 characters") }
        let now = Int(Date().timeIntervalSince1970)
        token = AccessToken(room: room, participantID: participant, displayName: options.value("name"), role: role, issuedAt: now, expiresAt: now + ttl)
        if !options.positionals.isEmpty { throw .usage("unexpected argument \(options.positionals[0])") }
    }

    /// The longest lifetime a token may be given: 10 years, far from any overflow of `now + ttl`.
    static let longestTTL = 10 * 365 * 86_400

    func run() throws(CommandError) {
        Console.out(token.signed(with: secret) + "\n")
    }
}

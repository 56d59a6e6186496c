/// A string id of one kind of thing, a type of its own per kind (`Tag`), so that a room and a
/// participant can never be passed for each other inside the server. Written as a plain string.
public struct Identifier<Tag>: RawRepresentable, Hashable, Comparable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    public var description: String { rawValue }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The kinds of `Identifier`.
public enum IdentifierKind {
    public enum Room {}
    public enum Participant {}
}

/// A room's id (`roomId` on the wire; the rule is `AccessToken.idRule`).
public typealias CallRoomID = Identifier<IdentifierKind.Room>
/// A participant's id within its room (`participantId` on the wire, the token's `sub`).
public typealias ParticipantID = Identifier<IdentifierKind.Participant>

/// The RTP synchronisation source of a participant's audio (RFC 3550), as the server assigns it.
public struct SSRC: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }
    public init(integerLiteral value: UInt32) { rawValue = value }

    public var description: String { String(rawValue) }

    public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(UInt32.self) }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

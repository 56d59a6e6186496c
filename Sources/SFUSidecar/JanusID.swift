/// A Janus VideoRoom room or publisher id: a number (the default), or a string with the plugin's
/// `string_ids` setting. Sent back to Janus in the form it came in.
public enum JanusID: Hashable, Sendable, Codable, CustomStringConvertible {
    case number(UInt64)
    case text(String)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let number = try? container.decode(UInt64.self) {
            self = .number(number)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let number): try container.encode(number)
        case .text(let text): try container.encode(text)
        }
    }

    /// The id as the room server names the room or participant: the number in decimal, or the text.
    public var description: String {
        switch self {
        case .number(let number): String(number)
        case .text(let text): text
        }
    }
}

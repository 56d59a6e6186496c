import Foundation

/// JSON through Foundation's Codable, with sorted keys so that output is stable: the one JSON
/// writer and reader of the call layer (messages, tokens, API answers, server log lines).
public enum JSON {
    /// The UTF-8 JSON of `value`.
    public static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own plain structs (strings, numbers, bools, arrays) cannot fail.
        return [UInt8](try! encoder.encode(value))
    }

    /// `encode` as text.
    public static func text<T: Encodable>(_ value: T) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    /// A JSON string literal of `text`, quotes included.
    public static func quoted(_ text: String) -> String {
        Self.text(text)
    }

    /// Nil for bytes that are not the JSON of a `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}

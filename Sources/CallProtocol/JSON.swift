import Foundation

/// JSON through Foundation's Codable, with sorted keys so that output is stable.
enum JSON {
    static func encode<T: Encodable>(_ value: T) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding our own plain structs (strings, numbers, bools, arrays) cannot fail.
        return [UInt8](try! encoder.encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        try? JSONDecoder().decode(type, from: Data(bytes))
    }
}

import Foundation

/// One JSON object written by hand, keys in the order they are added.
///
/// Strings are escaped per RFC 8259 (quote, backslash and control characters; everything else is
/// written as UTF-8). Fractional numbers have a fixed number of decimals, so output is byte-for-byte
/// reproducible; a non-finite number becomes `null`.
struct JSONLine {
    private var text = "{"
    private var hasMembers = false

    /// The finished object, without a line break.
    var rendered: String { text + "}" }

    /// Adds a string member, or `null` for nil.
    mutating func add(_ key: String, _ value: String?) {
        member(key)
        if let value { Self.appendString(value, to: &text) } else { text += "null" }
    }

    /// Adds an integer member.
    mutating func add(_ key: String, _ value: Int) {
        member(key)
        text += String(value)
    }

    /// Adds a Boolean member.
    mutating func add(_ key: String, _ value: Bool) {
        member(key)
        text += value ? "true" : "false"
    }

    /// Adds a number with exactly `decimals` digits after the point, e.g. `1.230` for 3.
    mutating func add(_ key: String, _ value: Double, decimals: Int) {
        member(key)
        text += Self.fixed(value, decimals: decimals)
    }

    /// Adds a nested object.
    /// Adds an array of strings.
    mutating func add(_ key: String, _ values: [String]) {
        member(key)
        text += "["
        for (index, value) in values.enumerated() {
            if index > 0 { text += "," }
            Self.appendString(value, to: &text)
        }
        text += "]"
    }

    mutating func add(_ key: String, _ object: JSONLine) {
        member(key)
        text += object.rendered
    }

    private mutating func member(_ key: String) {
        if hasMembers { text += "," }
        hasMembers = true
        Self.appendString(key, to: &text)
        text += ":"
    }

    /// Appends `value` as a quoted JSON string.
    static func appendString(_ value: String, to text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case "\u{00}"..."\u{1F}", "\u{7F}":
                let hex = String(scalar.value, radix: 16, uppercase: false)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    /// `value` rounded half away from zero to `decimals` digits (0…9), written with exactly that many,
    /// e.g. `fixed(1.2345, 3) == "1.235"`, `fixed(-0.0001, 3) == "0.000"`; `null` if not finite.
    static func fixed(_ value: Double, decimals: Int) -> String {
        precondition((0...9).contains(decimals), "decimals must be 0…9")
        guard value.isFinite else { return "null" }
        var scale = 1
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (value * Double(scale)).rounded()
        // Integer arithmetic below is exact while the scaled value fits a double's 53-bit mantissa.
        guard abs(scaled) < 0x1p53 else { return String(format: "%.\(decimals)f", value) }
        let units = Int(scaled)
        let magnitude = units.magnitude
        let whole = magnitude / UInt(scale)
        var result = units < 0 ? "-" : ""
        result += String(whole)
        if decimals > 0 {
            let fraction = String(magnitude % UInt(scale))
            result += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
        }
        return result
    }
}

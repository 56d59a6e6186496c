/// A configuration value out of its range, found once when the engine is made.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// The dotted key of the value, e.g. `vad.hangover`.
    public let key: String
    /// The allowed range, in words.
    public let allowed: String

    public var description: String { "configuration: \(key) must be in \(allowed)" }

    static func check(_ condition: Bool, _ key: String, _ allowed: String) throws(ConfigurationError) {
        if !condition { throw ConfigurationError(key: key, allowed: allowed) }
    }
}

import Foundation
import SpeakerCore

// The command line's way into the engine's settings: JSON documents and dotted `key=value`
// settings over an `EngineConfiguration`, through its Codable form. The engine itself takes typed
// values only; the CLI (`--config`), the benchmark and the tools use this.

/// Overrides from JSON documents and `key=value` settings.
extension EngineConfiguration {
    /// A document or setting that does not fit the configuration.
    public struct OverrideError: Error, CustomStringConvertible {
        public let description: String
    }

    /// This configuration with the values in a JSON object applied over it. Keys left out keep their
    /// value; unknown keys are an error (a typo must not pass silently).
    /// - Throws: `OverrideError` for malformed JSON, unknown keys or wrong types; `ConfigurationError`
    ///   for values out of range.
    public func overriding(json: Data) throws -> EngineConfiguration {
        guard let patch = try? JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            throw OverrideError(description: "configuration: not a JSON object")
        }
        var base = try dictionary()
        try Self.merge(patch, into: &base, path: "")
        return try Self.decoded(base)
    }

    /// This configuration with one dotted key set, e.g. `setting("vad.hangover", to: "0.3")`.
    public func setting(_ key: String, to value: String) throws -> EngineConfiguration {
        let parts = key.split(separator: ".").map(String.init)
        guard !parts.isEmpty else { throw OverrideError(description: "configuration: empty key") }
        guard try flattened().contains(where: { $0.key == key }) else {
            throw OverrideError(description: "configuration: unknown key \(key)")
        }
        var patch: Any = try Self.parseScalar(value, key: key)
        for part in parts.reversed() { patch = [part: patch] }
        guard let object = patch as? [String: Any] else { throw OverrideError(description: "configuration: bad key \(key)") }
        var base = try dictionary()
        try Self.merge(object, into: &base, path: "")
        return try Self.decoded(base)
    }

    /// This configuration with each `--config` argument applied in order (later ones win): an argument
    /// that names an existing file, or ends in `.json`, is read as a JSON document (`overriding(json:)`);
    /// otherwise it must be `KEY=VALUE` (`setting(_:to:)`).
    /// - Throws: `OverrideError` naming the argument: a file that cannot be read, a document or setting that
    ///   does not fit, a value out of range, or an argument of neither form.
    public func applying(arguments: [String]) throws(OverrideError) -> EngineConfiguration {
        var configuration = self
        for argument in arguments {
            if FileManager.default.fileExists(atPath: argument) || argument.hasSuffix(".json") {
                guard let data = FileManager.default.contents(atPath: argument) else {
                    throw OverrideError(description: "--config \(argument): cannot read the file")
                }
                configuration = try Self.naming(argument) { try configuration.overriding(json: data) }
            } else if let equals = argument.firstIndex(of: "=") {
                let key = String(argument[..<equals]), value = String(argument[argument.index(after: equals)...])
                configuration = try Self.naming(argument) { try configuration.setting(key, to: value) }
            } else {
                throw OverrideError(description: "--config \(argument): expected FILE.json or KEY=VALUE")
            }
        }
        return configuration
    }

    /// `body`'s configuration; an error it throws becomes an `OverrideError` naming `argument`.
    private static func naming(
        _ argument: String, _ body: () throws -> EngineConfiguration
    ) throws(OverrideError) -> EngineConfiguration {
        do {
            return try body()
        } catch {
            throw OverrideError(description: "--config \(argument): \(error)")
        }
    }

    /// All keys with their values, dotted, sorted: what `--config` accepts.
    public func flattened() throws -> [(key: String, value: String)] {
        var result: [(String, String)] = []
        func walk(_ object: [String: Any], _ prefix: String) {
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                if let nested = value as? [String: Any] {
                    walk(nested, prefix + key + ".")
                } else if let text = value as? String {
                    result.append((prefix + key, text))
                } else {
                    // Serialise the JSON value itself, so booleans print as true/false, which
                    // `setting(_:to:)` reads back (String(describing:) gives 1/0 on Linux).
                    let data = try? JSONSerialization.data(withJSONObject: value, options: .fragmentsAllowed)
                    result.append((prefix + key, data.map { String(decoding: $0, as: UTF8.self) } ?? "\(value)"))
                }
            }
        }
        walk(try dictionary(), "")
        return result
    }

    private func dictionary() throws -> [String: Any] {
        let data = try JSONEncoder().encode(self)
        return try JSONSerialization.jsonObject(with: data) as! [String: Any]
    }

    private static func decoded(_ object: [String: Any]) throws -> EngineConfiguration {
        let data = try JSONSerialization.data(withJSONObject: object)
        let configuration: EngineConfiguration
        do {
            configuration = try JSONDecoder().decode(EngineConfiguration.self, from: data)
        } catch {
            throw OverrideError(description: "configuration: a value has the wrong type (\(error))")
        }
        try configuration.validate()
        return configuration
    }

    private static func merge(_ patch: [String: Any], into base: inout [String: Any], path: String) throws {
        for (key, value) in patch {
            let dotted = path.isEmpty ? key : path + "." + key
            guard let existing = base[key] else {
                throw OverrideError(description: "configuration: unknown key \(dotted)")
            }
            if var nested = existing as? [String: Any] {
                guard let nestedPatch = value as? [String: Any] else {
                    throw OverrideError(description: "configuration: \(dotted) is a group of settings, not a value")
                }
                try merge(nestedPatch, into: &nested, path: dotted)
                base[key] = nested
            } else {
                guard !(value is [String: Any]) else {
                    throw OverrideError(description: "configuration: \(dotted) is a value, not a group")
                }
                base[key] = value
            }
        }
    }

    private static func parseScalar(_ text: String, key: String) throws -> Any {
        if text == "true" { return true }
        if text == "false" { return false }
        if let integer = Int(text) { return integer }
        if let number = Double(text) { return number }
        return text  // a name, such as a policy; decoding checks it

    }
}

import Foundation
import Testing
import TestSupport

/// Issue 32, part 4: every public symbol of the SDK has a doc comment (`swift package
/// generate-documentation` needs the swift-docc-plugin package, which cannot be fetched here, so the
/// sources are checked instead). A public symbol is a `public` declaration or a case of a public enum;
/// its doc comment is the `///` line just above it (attributes such as `@discardableResult` between
/// them are allowed). A protocol's default implementations (in an extension of the protocol) are
/// documented by its requirements, as DocC shows them.
@Suite struct SDKDocumentationTests {
    /// The public declarations of one file without a doc comment, as `file:line: text`.
    static func undocumented(in path: String, protocols: Set<String> = []) throws -> [String] {
        let lines = try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n")
        var missing: [String] = []
        // The depth inside an extension of one of `protocols`, while in one.
        var defaultsDepth: Int?
        // The brace depth at which each open public enum's cases are declared.
        var publicEnumDepths: [Int] = []
        var depth = 0
        for (index, raw) in lines.enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            let isPublic = line.hasPrefix("public ") || line.hasPrefix("@MainActor public ")
                || (line.hasPrefix("@") && line.contains(" public "))
            let isCase = publicEnumDepths.last == depth && line.hasPrefix("case ")
            let isDefault = defaultsDepth.map { depth >= $0 } ?? false
            // An extension's `public` members are checked; the extension itself is not a symbol.
            if ((isPublic && !line.hasPrefix("public extension")) || isCase) && !isDefault {
                var above = index - 1
                while above >= 0, lines[above].trimmingCharacters(in: .whitespaces).hasPrefix("@") { above -= 1 }
                let previous = above >= 0 ? lines[above].trimmingCharacters(in: .whitespaces) : ""
                if !previous.hasPrefix("///") {
                    missing.append("\(URL(fileURLWithPath: path).lastPathComponent):\(index + 1): \(line)")
                }
            }
            let opens = raw.filter { $0 == "{" }.count
            let closes = raw.filter { $0 == "}" }.count
            if isPublic, line.contains(" enum "), opens > closes { publicEnumDepths.append(depth + 1) }
            if line.hasPrefix("extension ") || line.hasPrefix("public extension "),
                let name = line.split(separator: " ").first(where: { $0 != "public" && $0 != "extension" }).map({ String($0.prefix { $0.isLetter }) }),
                protocols.contains(name)
            {
                defaultsDepth = depth + 1
            }
            depth += opens - closes
            if let inside = defaultsDepth, depth < inside { defaultsDepth = nil }
            while let last = publicEnumDepths.last, depth < last { publicEnumDepths.removeLast() }
        }
        return missing
    }

    @Test func everyPublicSymbolOfCallClientHasADocComment() throws {
        let directory = FixturePaths.repositoryRoot.appendingPathComponent("Sources/CallClient")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count > 10)
        let sources = try files.map { try String(contentsOfFile: directory.appendingPathComponent($0).path, encoding: .utf8) }
        // The module's public protocols, whose extensions hold default implementations.
        let protocols = Set(sources.flatMap { $0.components(separatedBy: "\n") }.compactMap { line -> String? in
            let words = line.trimmingCharacters(in: .whitespaces).split(separator: " ")
            guard let index = words.firstIndex(of: "protocol"), words.contains("public"), index + 1 < words.count else { return nil }
            return String(words[index + 1].prefix { $0.isLetter })
        })
        #expect(protocols.contains("MeetingEventListener"))
        var missing: [String] = []
        for file in files { missing += try Self.undocumented(in: directory.appendingPathComponent(file).path, protocols: protocols) }
        #expect(missing.isEmpty, "\(missing.count) public symbols without a doc comment:\n\(missing.joined(separator: "\n"))")
    }

    @Test func theCheckFindsAnUndocumentedSymbol() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("doc-check-\(UUID().uuidString).swift").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try """
            /// Documented.
            public enum Kind {
                /// Documented.
                case a
                case b
            }
            /// Documented.
            @discardableResult
            public func f() -> Int { 1 }
            public var g: Int { 2 }
            """.write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try Self.undocumented(in: path).map { $0.components(separatedBy: ": ").dropFirst().joined(separator: ": ") } == ["case b", "public var g: Int { 2 }"])
    }
}

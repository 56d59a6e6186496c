import Foundation

/// Locations of the files in the repository's `Fixtures/` folder.
public enum FixturePaths {
    /// The repository root, found from this source file's location.
    public static let repositoryRoot: URL = {
        URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // TestSupport
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()
    }()

    /// `Fixtures/` at the repository root.
    public static let fixtures = repositoryRoot.appendingPathComponent("Fixtures")

    /// A file below `Fixtures/`, e.g. `file("formats/speech.flac")`.
    public static func file(_ relativePath: String) -> String {
        fixtures.appendingPathComponent(relativePath).path
    }
}

import Foundation
import Testing
import TestSupport

/// Issue 32, frictions 3 and 10: an app is a package of its own that depends on this one, as the README
/// shows. Its build used to warn about prohibited flags (`-pthread` from GStreamer, which a product of
/// this package reached) in every build. Here the README's manifest and app are built as such a package,
/// from scratch (its own `.build`), and the app runs.
@Suite(.serialized) struct DependentPackageTests {
    /// The toolchain's `swift`, if there is one.
    static let swift: String? = {
        let candidates = ["/opt/swift/usr/bin/swift"]
            + (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/swift" }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Runs `executable` with `arguments` in `directory`; its exit status and its output (stdout and
    /// stderr together).
    static func run(_ executable: String, _ arguments: [String], in directory: URL) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        // Read to the end before waiting: a full pipe would block the child.
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test(.enabled(if: swift != nil, "no swift toolchain on PATH or in /opt/swift"))
    func theReadmesAppBuildsAsADependentPackageWithoutAWarningAndRuns() throws {
        let root = FixturePaths.repositoryRoot.standardizedFileURL
        let app = FileManager.default.temporaryDirectory.appendingPathComponent("dependent-\(UUID().uuidString)/MeetingBot")
        defer { try? FileManager.default.removeItem(at: app.deletingLastPathComponent()) }
        try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/MeetingBot"), withIntermediateDirectories: true)
        // The README's manifest, pointed at this clone: SwiftPM names the dependency after its folder.
        let manifest = try ReadmeExampleTests.readmeBlock(after: "Package.swift` of an app")
            .replacingOccurrences(of: #".package(path: "../ActiveSpeaker")"#, with: ".package(path: \"\(root.path)\")")
            .replacingOccurrences(of: #"package: "ActiveSpeaker")"#, with: "package: \"\(root.lastPathComponent)\")")
        try manifest.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        let source = try ReadmeExampleTests.readmeBlock(after: "Sources/MeetingBot/MeetingBot.swift")
        try source.write(to: app.appendingPathComponent("Sources/MeetingBot/MeetingBot.swift"), atomically: true, encoding: .utf8)

        let build = try Self.run(Self.swift!, ["build"], in: app)
        #expect(build.status == 0, "\(build.output.suffix(3000))")
        let warnings = build.output.split(separator: "\n").filter { $0.contains("warning:") }
        #expect(warnings.isEmpty, "\(warnings.count) warnings:\n\(warnings.prefix(10).joined(separator: "\n"))")

        let bot = try Self.run(app.appendingPathComponent(".build/debug/MeetingBot").path, [], in: app)
        #expect(bot.status == 0 && bot.output.contains("usage: MeetingBot SERVER ROOM TOKEN FILE"), "\(bot.output)")
    }
}

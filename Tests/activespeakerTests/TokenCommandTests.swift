import Foundation
import Testing

/// `activespeaker token` on the edges of its options.
@Suite struct TokenCommandTests {
    private let base = ["token", "--secret", "a-secret-of-24-characters", "--room", "demo", "--participant", "p"]

    /// A lifetime so long that `now + ttl` would overflow is a usage error, not a crash.
    @Test(arguments: ["9223372036854775807", "315360001", "0", "-5", "1e9"])
    func anOutOfRangeLifetimeIsRefused(ttl: String) throws {
        let result = try CLI.run(base + ["--ttl", ttl])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--ttl \(ttl)"))
        #expect(result.stdout.isEmpty)
    }

    @Test func theLongestLifetimeIsSigned() throws {
        let result = try CLI.run(base + ["--ttl", "315360000"])
        #expect(result.status == 0, "\(result.stderr)")
        let parts = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ".")
        #expect(parts.count == 3, "a JWT: \(result.stdout)")
    }
}

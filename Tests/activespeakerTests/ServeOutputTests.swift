import Foundation
import Testing
import TestSupport

/// `serve` outlives the reader of its log (`serve | head -n 1`), and says in words why it cannot start.
@Suite struct ServeOutputTests {
    static let secret = "a-secret-of-24-characters"

    /// A TCP socket listening on a free port of 127.0.0.1; returns the descriptor and the port.
    static func occupiedPort() throws -> (descriptor: Int32, port: Int) {
        try LoopbackPort.bind(listening: true)
    }

    /// The documented status and a line in words, not libwebsockets' "ERROR on binding fd 6 … (-1 98)".
    @Test func aBusyPortIsSaidInWords() throws {
        let (descriptor, port) = try Self.occupiedPort()
        defer { close(descriptor) }
        let result = try CLI.run(["serve", "--listen", "127.0.0.1:\(port)", "--secret", Self.secret, "--duration", "1"])
        #expect(result.status == 1)
        #expect(result.errorLines == ["activespeaker: serve: cannot listen on 127.0.0.1:\(port): address in use"])
        #expect(result.stdout.isEmpty)
    }

    @Test(.enabled(if: LiveRunner.canRun(needing: "curl"), "needs curl: bash tools/install-deps.sh"))
    func theServerGoesOnWhenItsLogReaderGoesAway() throws {
        try #require(LiveRunner.has("curl"), "run tools/install-deps.sh")
        let executable = try #require(CLI.executable, "build activespeaker first")
        let server = Process()
        server.executableURL = executable
        server.arguments = ["serve", "--listen", "127.0.0.1:0", "--secret", Self.secret, "--room", "demo"]
        let log = Pipe()
        let errors = FileManager.default.temporaryDirectory.appendingPathComponent("serve-err-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: errors.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: errors) }
        server.standardOutput = log
        server.standardError = try FileHandle(forWritingTo: errors)
        server.standardInput = FileHandle.nullDevice
        try server.run()
        defer {
            if server.isRunning { server.terminate() }
            server.waitUntilExit()
        }
        // Read the log until the listening line (it names the HTTP port), then stop reading, as
        // `head -n 1` does: the pipe's only reader is gone.
        var text = ""
        var port: Int?
        while port == nil {
            let chunk = log.fileHandleForReading.availableData
            try #require(!chunk.isEmpty, "serve ended before listening: \(text)")
            text += String(decoding: chunk, as: UTF8.self)
            for line in text.split(separator: "\n") where line.contains(#""listening""#) {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                port = object?["http"] as? Int
            }
        }
        try log.fileHandleForReading.close()
        let http = try #require(port)

        // The next log lines (a room opened) meet the closed pipe; the server must go on serving.
        let token = try CLI.run(["token", "--secret", Self.secret, "--room", "*", "--participant", "admin", "--role", "moderator"])
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        for room in ["r1", "r2"] {
            let created = try LiveRunner.httpStatus([
                "-X", "POST", "-H", "Authorization: Bearer \(token)", "-d", #"{"roomId":"\#(room)"}"#,
                "http://127.0.0.1:\(http)/v1/rooms",
            ])
            #expect(created == "201", "POST /v1/rooms \(room): \(created)")
        }
        #expect(try LiveRunner.httpStatus(["http://127.0.0.1:\(http)/v1/health"]) == "200")
        #expect(server.isRunning)

        server.interrupt()
        server.waitUntilExit()
        #expect(server.terminationReason == .exit && server.terminationStatus == 0)
        let stderr = try String(contentsOf: errors, encoding: .utf8)
        #expect(stderr.contains("serving on without log lines"), "\(stderr)")
        #expect(!stderr.contains("Fatal error"), "\(stderr)")
    }
}

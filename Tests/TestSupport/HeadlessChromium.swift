import Foundation

/// Headless Chromium driven over the DevTools protocol (CDP) on `--remote-debugging-pipe`: requests
/// and answers are JSON objects, each ended by a NUL byte, that the browser reads on its file
/// descriptor 3 and writes on 4. No WebSocket client and nothing outside the standard library.
///
/// `--dump-dom` and `--screenshot` alone cannot test a live page: they act right after the `load`
/// event (`--timeout` only cuts a slow load short), before the page has heard anything from its
/// WebSocket. Over CDP the test looks at the page whenever it likes, in real time.
///
/// The browser runs in its own process group (renderers, GPU and zygote processes included), which
/// `close()` kills as a whole. Used by the dashboard tests (activespeakerTests), the WebRTC peer's
/// browser tests (CallWebRTCTests) and the browser participants of the room server (CallTests).
public final class HeadlessChromium {
    /// The browser: `$ACTIVESPEAKER_CHROMIUM` if set, else the first of the usual names on PATH.
    public static let executable: String? = {
        if let path = ProcessInfo.processInfo.environment["ACTIVESPEAKER_CHROMIUM"] {
            return FileManager.default.isExecutableFile(atPath: path) ? path : nil
        }
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        for name in ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"] {
            for directory in directories where FileManager.default.isExecutableFile(atPath: "\(directory)/\(name)") {
                return "\(directory)/\(name)"
            }
        }
        return nil
    }()

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The flags: new headless mode; no sandbox (CI containers run as root); software rendering;
    /// CDP on fds 3/4; a profile of its own, so that parallel runs never share a browser.
    static func arguments(profile: String, width: Int, height: Int, extra: [String]) -> [String] {
        [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--user-data-dir=\(profile)",
            "--window-size=\(width),\(height)", "--hide-scrollbars", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-dev-shm-usage",
        ] + extra + ["about:blank"]
    }

    private let pid: pid_t
    private let commands: Int32  // our end of the browser's fd 3
    private let answers: Int32  // our end of the browser's fd 4
    private var buffer: [UInt8] = []
    private var nextID = 0
    private var closed = false
    /// Killed or stopped through `signal(_:)`: `close()` does not ask it to quit.
    private var unresponsive = false
    /// Where the browser's standard output and error go (for failure messages).
    public let logPath: String
    private let profile: BrowserProfile
    /// The window's size, CSS pixels.
    public let width: Int, height: Int

    /// Starts the browser with a window of `width` × `height` CSS pixels; `extraArguments` go before the
    /// first page (a fake microphone: `--use-fake-device-for-media-stream`, …).
    /// - Throws: `Failure` if no browser is installed or it cannot be started.
    public init(width: Int = 900, height: Int = 400, extraArguments: [String] = []) throws {
        guard let executable = Self.executable else { throw Failure(description: "chromium is not installed") }
        profile = try BrowserProfile()
        logPath = profile.path("browser.log")
        self.width = width
        self.height = height
        let toBrowser = try Self.pipe(), fromBrowser = try Self.pipe()

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // The pipe ends are ≥ 10 and close-on-exec (see `pipe()`), so the dup2 targets 3 and 4 are
        // free of them, and only the two copies cross into the browser.
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        posix_spawn_file_actions_adddup2(&actions, toBrowser.read, 3)
        posix_spawn_file_actions_adddup2(&actions, fromBrowser.write, 4)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)

        let argv = ([executable] + Self.arguments(profile: profile.path("profile"), width: width, height: height, extra: extraArguments)).map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv + [nil], environ)
        Glibc.close(toBrowser.read)
        Glibc.close(fromBrowser.write)
        guard status == 0 else {
            Glibc.close(toBrowser.write)
            Glibc.close(fromBrowser.read)
            profile.remove()
            throw Failure(description: "cannot start \(executable): \(String(cString: strerror(status)))")
        }
        self.pid = pid
        commands = toBrowser.write
        answers = fromBrowser.read
    }

    deinit { close() }

    /// A pipe whose two ends are close-on-exec and numbered 10 or more.
    private static func pipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        guard Glibc.pipe(&ends) == 0 else { throw Failure(description: "pipe failed: errno \(errno)") }
        let moved = ends.map { fcntl($0, F_DUPFD_CLOEXEC, 10) }
        ends.forEach { _ = Glibc.close($0) }
        guard moved.allSatisfy({ $0 >= 10 }) else { throw Failure(description: "fcntl failed: errno \(errno)") }
        return (moved[0], moved[1])
    }

    /// Sends one command and waits for its answer (events in between are dropped).
    /// - Parameter session: the session of an attached page (`attach`), or nil for the browser.
    /// - Returns: the `result` object.
    /// - Throws: `Failure` on an error answer, a closed pipe, or no answer within `timeout` seconds.
    @discardableResult
    public func send(_ method: String, _ parameters: [String: Any] = [:], session: String? = nil, timeout: Double = 10) throws -> [String: Any] {
        nextID += 1
        var message: [String: Any] = ["id": nextID, "method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        var bytes = [UInt8](try JSONSerialization.data(withJSONObject: message))
        bytes.append(0)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
            guard written > 0 else { throw Failure(description: "\(method): the browser closed its pipe\(logTail)") }
            offset += written
        }
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            while let end = buffer.firstIndex(of: 0) {
                let data = Data(buffer[..<end])
                buffer.removeSubrange(...end)
                guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any],
                    object["id"] as? Int == nextID
                else { continue }
                if let error = object["error"] as? [String: Any] {
                    throw Failure(description: "\(method): \(error["message"] ?? error)")
                }
                return object["result"] as? [String: Any] ?? [:]
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Failure(description: "\(method): no answer within \(timeout) s\(logTail)") }
            var descriptor = pollfd(fd: answers, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, Int32(left * 1000) + 1) > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = read(answers, &chunk, chunk.count)
            guard count > 0 else { throw Failure(description: "\(method): the browser closed its pipe\(logTail)") }
            buffer += chunk[..<count]
        }
    }

    /// Opens `url` in a new page with a viewport of the window's size and returns the session to
    /// address the page with. A browser just started on a loaded machine may take more than 10 s to
    /// make its first page: `timeout` bounds that step.
    public func open(_ url: String, timeout: Double = 30) throws -> String {
        let target = try send("Target.createTarget", ["url": "about:blank"], timeout: timeout)
        guard let id = target["targetId"] as? String else { throw Failure(description: "Target.createTarget: no targetId") }
        let attached = try send("Target.attachToTarget", ["targetId": id, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "Target.attachToTarget: no sessionId") }
        // --window-size counts the (invisible) window frame; screenshots are of exactly this size.
        try send("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false], session: session)
        try send("Page.navigate", ["url": url], session: session)
        return session
    }

    /// Evaluates `expression` in the page (awaiting it when it is a promise) and returns its value as a
    /// string (`String(describing:)` for values that are not strings).
    public func evaluate(_ expression: String, session: String) throws -> String {
        let answer = try send("Runtime.evaluate", ["expression": expression, "returnByValue": true, "awaitPromise": true], session: session)
        if let exception = answer["exceptionDetails"] as? [String: Any] {
            throw Failure(description: "\(expression): \(exception["text"] ?? exception)")
        }
        let value = (answer["result"] as? [String: Any])?["value"]
        return value as? String ?? value.map { String(describing: $0) } ?? ""
    }

    /// A PNG of what the page shows.
    public func screenshot(session: String) throws -> Data {
        let answer = try send("Page.captureScreenshot", ["format": "png"], session: session, timeout: 20)
        guard let png = (answer["data"] as? String).flatMap({ Data(base64Encoded: $0) }) else {
            throw Failure(description: "Page.captureScreenshot: no image")
        }
        return png
    }

    /// The last lines the browser wrote, for failure messages.
    private var logTail: String {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        let lines = text.split(separator: "\n").suffix(10)
        return lines.isEmpty ? "" : "; browser log:\n" + lines.joined(separator: "\n")
    }

    /// Sends `signal` to the browser's whole process group (renderers and helpers included) without
    /// asking it anything: `SIGKILL` is a tab that disappears without closing (the kernel resets its
    /// sockets), `SIGSTOP` one that hangs with its sockets open, `SIGCONT` wakes it. `close()` still
    /// reaps it and removes its profile.
    public func signal(_ signal: Int32) {
        guard !closed else { return }
        // Stopped or dead, it would not answer `Browser.close`; writing to a dead one's pipe raises SIGPIPE.
        if signal == SIGKILL || signal == SIGSTOP { unresponsive = true }
        if signal == SIGCONT { unresponsive = false }
        kill(-pid, signal)
    }

    /// Asks the browser to quit (it then ends its own helper processes), waits for it at most 3 s,
    /// then kills its whole process group anyway and removes its profile. Idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        if !unresponsive { _ = try? send("Browser.close", timeout: 2) }
        Glibc.close(commands)
        Glibc.close(answers)
        var status: Int32 = 0
        let deadline = Date().addingTimeInterval(3)
        var exited = false
        while !exited && Date() < deadline {
            exited = waitpid(pid, &status, WNOHANG) == pid
            if !exited { Thread.sleep(forTimeInterval: 0.02) }
        }
        kill(-pid, SIGKILL)  // whatever is left of the group; the crash handlers leave on their own
        if !exited { while waitpid(pid, &status, 0) == -1 && errno == EINTR {} }
        profile.remove()
    }
}

/// The browser's profile folder, removed by `remove()`.
public struct BrowserProfile: Sendable {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("activespeaker-webrtc-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

extension HeadlessChromium {
    /// sox, which makes the fake microphone's files; nil when it is not installed.
    public static let sox = ["/usr/bin/sox", "/usr/local/bin/sox"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Writes `input` (any file sox reads) to `output` as 48 kHz 16-bit mono WAV: what Chromium's fake
    /// microphone plays, in a loop (`--use-file-for-fake-audio-capture`).
    public static func writeMicrophoneFile(from input: String, to output: String) throws {
        guard let sox else { throw Failure(description: "sox is not installed") }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: sox)
        process.arguments = [input, "-r", "48000", "-b", "16", "-c", "1", output]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "sox failed on \(input)") }
    }
}

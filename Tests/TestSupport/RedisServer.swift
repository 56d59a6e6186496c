import Foundation

/// A `redis-server` of its own for a test: on a free port of 127.0.0.1, no persistence, in a temporary
/// folder (its log is `redis.log` there). Stopped when released.
///
/// It is ready once it answers `PING` (polled with `redis-cli`, which ships with redis-server).
///
/// Started with `posix_spawn` and an empty signal mask, not `Process`: a process that Foundation starts
/// from a test's (dispatch) thread inherits that thread's blocked signals, and redis-server, which
/// never unblocks them, then ignored SIGTERM and `stop()` waited for ever.
public final class RedisServer {
    public static let executable = "/usr/bin/redis-server"
    public static let client = "/usr/bin/redis-cli"
    /// Whether redis-server and redis-cli are installed (tools/install-deps.sh installs them).
    public static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: executable) && FileManager.default.isExecutableFile(atPath: client)
    }

    /// The TCP port on 127.0.0.1; the same after `restart()`.
    public let port: Int
    /// The password it requires (`--requirepass`), if any.
    public let password: String?
    /// `redis://[:PASSWORD@]127.0.0.1:PORT`.
    public var url: String {
        "redis://" + (password.map { ":\($0)@" } ?? "") + "127.0.0.1:\(port)"
    }

    private let directory: URL
    /// The running server's process id.
    private var pid: pid_t?

    /// Starts a server and waits until it answers.
    /// - Throws: `RedisServerError` when it does not start or answer within `Waiting.defaultTimeout`.
    public init(password: String? = nil) throws {
        self.password = password
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        // A free port can be taken by someone else before redis-server binds it: try a few.
        for _ in 0..<5 {
            let candidate = try LoopbackPort.free()
            if let started = try Self.launch(port: candidate, password: password, directory: directory) {
                port = candidate
                pid = started
                return
            }
        }
        try? FileManager.default.removeItem(at: directory)
        throw RedisServerError(message: "redis-server could not bind a free port five times")
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Stops the server (SIGTERM) and waits for it to exit.
    public func stop() { end(signal: SIGTERM) }

    /// Kills the server (SIGKILL), as a crash would, and waits for it to exit.
    public func kill() { end(signal: SIGKILL) }

    /// Stalls the server (SIGSTOP): connections stay open, commands wait unanswered, as on a Redis
    /// that is stuck (a long command, a swapping host). `resume()` lets it go on.
    public func pause() {
        if let pid { Foundation.kill(pid, SIGSTOP) }
    }

    /// Lets a paused server go on (SIGCONT).
    public func resume() {
        if let pid { Foundation.kill(pid, SIGCONT) }
    }

    /// Starts the server again on the same port, empty, retrying while the port is still held.
    /// - Throws: `RedisServerError` when it has not started within `Waiting.defaultTimeout`.
    public func restart() throws {
        stop()
        var failure: Error?
        let started = Waiting.until {
            do {
                pid = try Self.launch(port: port, password: password, directory: directory)
            } catch {
                failure = error
                return true
            }
            return pid != nil
        }
        if let failure { throw failure }
        guard started, pid != nil else {
            throw RedisServerError(message: "redis-server could not bind port \(port) again: \(log())")
        }
    }

    private func end(signal: Int32) {
        guard let pid else { return }
        self.pid = nil
        Foundation.kill(pid, signal)
        // A paused server acts on the signal only once it runs again.
        Foundation.kill(pid, SIGCONT)
        Self.reap(pid)
    }

    /// Waits for `pid` to exit and collects it.
    private static func reap(_ pid: pid_t) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    }

    /// Whether `pid` is still running (collects it if it exited).
    private static func isRunning(_ pid: pid_t) -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// The end of the server's log, for error messages.
    private func log() -> String {
        let text = (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(5).joined(separator: "\n")
    }

    /// Starts redis-server on `port` and waits until it answers `PING`.
    /// - Returns: Its process id, or nil when it exited first (the port was taken).
    private static func launch(port: Int, password: String?, directory: URL) throws -> pid_t? {
        let arguments = [
            executable, "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no",
            "--dir", directory.path, "--logfile", directory.appendingPathComponent("redis.log").path,
        ] + (password.map { ["--requirepass", $0] } ?? [])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for descriptor: Int32 in 0...2 {
            posix_spawn_file_actions_addopen(&actions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        // SIGTERM and SIGPIPE back to their defaults, whatever this process does with them.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = arguments.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv + [nil], environ)
        guard status == 0 else {
            throw RedisServerError(message: "cannot start \(executable): \(String(cString: strerror(status)))")
        }

        let answered = Waiting.until { !isRunning(pid) || ping(port: port, password: password) }
        if answered && isRunning(pid) { return pid }
        if isRunning(pid) {
            Foundation.kill(pid, SIGKILL)
            reap(pid)
            throw RedisServerError(message: "redis-server on port \(port) did not answer PING within \(Waiting.defaultTimeout) s")
        }
        return nil  // it exited: the port was taken
    }

    /// Whether a server on `port` answers `PING` with `PONG` (run through redis-cli).
    private static func ping(port: Int, password: String?) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: client)
        process.arguments = ["-h", "127.0.0.1", "-p", "\(port)"]
            + (password.map { ["-a", $0, "--no-auth-warning"] } ?? []) + ["PING"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.trimmingCharacters(in: .whitespacesAndNewlines) == "PONG"
    }

}

/// A test's redis-server did not start.
public struct RedisServerError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

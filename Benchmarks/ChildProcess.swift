import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A finished child process: exit status, wall time and its own CPU time (from `wait4`).
struct ChildResult {
    /// Exit code, or 128 + signal number when killed by a signal.
    var status: Int32
    var wallSeconds: Double
    var cpuSeconds: Double
    /// Peak resident memory of the child, bytes.
    var peakResidentBytes: Int
}

/// Runs `path` with `arguments`, standard output to `outputPath` (or /dev/null), standard error
/// inherited (or discarded), and waits for it. CPU time is the child's own (user + system), measured by `wait4`.
func runTimed(
    _ path: String, _ arguments: [String], outputPath: String? = nil, discardErrors: Bool = false
) throws -> ChildResult {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, outputPath ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    if discardErrors { posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0) }
    let argv = ([path] + arguments).map { strdup($0) }
    defer { argv.forEach { free($0) } }
    var pointers: [UnsafeMutablePointer<CChar>?] = argv + [nil]
    var pid = pid_t()
    let start = Probe.wallNanoseconds()
    let spawned = posix_spawn(&pid, path, &actions, nil, &pointers, environ)
    guard spawned == 0 else { throw BenchmarkError("cannot start \(path): \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    var usage = rusage()
    while wait4(pid, &status, 0, &usage) < 0 {
        guard errno == EINTR else { throw BenchmarkError("wait4 failed for \(path)") }
    }
    let wall = Double(Probe.wallNanoseconds() - start) / 1e9
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    // Decode the wait status by hand (the W* macros do not import): low 7 bits = signal, next 8 = exit code.
    let signal = status & 0x7f
    let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
    return ChildResult(
        status: code, wallSeconds: wall, cpuSeconds: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        peakResidentBytes: Int(usage.ru_maxrss) * 1024)
}

/// Runs a command and returns its exit status and standard output (small outputs only).
func runCapturing(_ path: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
    guard FileManager.default.isExecutableFile(atPath: path) else { throw BenchmarkError("\(path) not found") }
    let outputPath = NSTemporaryDirectory() + "/activespeaker-bench-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).out"
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let result = try runTimed(path, arguments, outputPath: outputPath, discardErrors: true)
    return (result.status, readTextFile(outputPath) ?? "")
}

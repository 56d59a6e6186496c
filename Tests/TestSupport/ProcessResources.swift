import Foundation

/// Threads and resident memory of the test process, for leak checks with generous margins.
public enum ProcessResources {
    /// The process's threads now (entries of `/proc/self/task`); -1 if it cannot be read.
    public static func threads() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// Resident memory now, bytes (`VmRSS` of `/proc/self/status`); -1 if it cannot be read.
    public static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return -1 }
        return kilobytes * 1024
    }
}

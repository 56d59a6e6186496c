import Foundation

/// CPU time of the test process, for opt-in measurements (never asserted).
public enum ProcessCPU {
    /// User plus system CPU seconds of this process so far (`/proc/self/stat` fields 14 and 15).
    public static func seconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return 0 }
        let fields = text[text.index(after: close)...].split(separator: " ")
        // After the command name: field 3 is fields[0], so utime (14) is fields[11] and stime (15) fields[12].
        let ticks = Double(fields[11])! + Double(fields[12])!
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

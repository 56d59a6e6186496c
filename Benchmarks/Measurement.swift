#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Clocks and process probes: wall time, CPU time of the process and of the calling thread, resident memory.
enum Probe {
    /// Monotonic wall clock, nanoseconds.
    static func wallNanoseconds() -> UInt64 { read(CLOCK_MONOTONIC) }
    /// CPU time of all threads of this process, nanoseconds (user + system).
    static func processCPUNanoseconds() -> UInt64 { read(CLOCK_PROCESS_CPUTIME_ID) }

    /// CPU time (user + system) of the children this process has waited for, nanoseconds.
    static func childrenCPUNanoseconds() -> UInt64 {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
        func nanoseconds(_ t: timeval) -> UInt64 { UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_usec) * 1000 }
        return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
    }

    /// Resident set size of this process in bytes (`VmRSS` of /proc/self/status), or nil where there is none.
    static func residentBytes() -> Int? { statusField("VmRSS:") }
    /// Peak resident set size in bytes (`VmHWM`).
    static func peakResidentBytes() -> Int? { statusField("VmHWM:") }

    private static func read(_ clock: clockid_t) -> UInt64 {
        var time = timespec()
        clock_gettime(clock, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    private static func statusField(_ name: String) -> Int? {
        guard let text = readTextFile("/proc/self/status") else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            // "VmRSS:     12345 kB"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kibibytes = Int(fields[1]) else { return nil }
            return kibibytes * 1024
        }
        return nil
    }
}

/// Reads a small text file whole (for /proc files, whose size stat reports as 0), or nil.
func readTextFile(_ path: String) -> String? {
    guard let file = fopen(path, "r") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, 4096, file) }
        if count == 0 { break }
        bytes.append(contentsOf: chunk[0..<count])
    }
    return String(decoding: bytes, as: UTF8.self)
}

/// Wall and CPU time of one measured stretch of work.
struct Stopwatch {
    private let wallStart = Probe.wallNanoseconds()
    private let cpuStart = Probe.processCPUNanoseconds()

    /// Seconds since start: (wall, process CPU).
    func elapsed() -> (wall: Double, cpu: Double) {
        let wall = Probe.wallNanoseconds() - wallStart
        let cpu = Probe.processCPUNanoseconds() - cpuStart
        return (Double(wall) / 1e9, Double(cpu) / 1e9)
    }
}

/// Median and spread of repeated measurements.
struct Summary: Codable {
    var median: Double
    var min: Double
    var max: Double
    /// First and third quartiles (linear interpolation between order statistics).
    var q1: Double
    var q3: Double
    var count: Int

    init(_ values: [Double]) {
        precondition(!values.isEmpty, "nothing to summarise")
        let sorted = values.sorted()
        median = Self.quantile(sorted, 0.5)
        min = sorted.first!
        max = sorted.last!
        q1 = Self.quantile(sorted, 0.25)
        q3 = Self.quantile(sorted, 0.75)
        count = sorted.count
    }

    /// The q-quantile of sorted values, interpolating linearly between neighbours.
    static func quantile(_ sorted: [Double], _ q: Double) -> Double {
        let position = q * Double(sorted.count - 1)
        let lower = Int(position.rounded(.down))
        let upper = Swift.min(lower + 1, sorted.count - 1)
        let fraction = position - Double(lower)
        return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction
    }

    /// "median [min–max]" with the given formatter.
    func text(_ format: (Double) -> String) -> String {
        count == 1 ? format(median) : "\(format(median)) [\(format(min))–\(format(max))]"
    }
}

/// Wall-clock durations of single ticks, nanoseconds, kept in a buffer sized up front.
struct TickTimes {
    private(set) var samples: [UInt64] = []

    init(capacity: Int) { samples.reserveCapacity(capacity) }

    mutating func record(_ nanoseconds: UInt64) { samples.append(nanoseconds) }

    /// The q-quantile in microseconds (nearest rank).
    func percentileMicroseconds(_ q: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        let rank = Swift.min(sorted.count - 1, Swift.max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))
        return Double(sorted[rank]) / 1000
    }
}

import Foundation

/// A failure that stops the benchmark, with a message for the user.
struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One measured configuration of a scenario (one line of its table).
struct ResultRow: Codable {
    /// E.g. `1024 streams`.
    var label: String
    /// Sizes that define the row (streams, rooms, participants, workers, ticks per run, …).
    var parameters: [String: Int] = [:]
    /// Repeated measurements, summarised; keys name the quantity and its unit.
    var metrics: [String: Summary] = [:]
    /// Single figures (percentiles over all ticks, ratios).
    var values: [String: Double] = [:]
}

/// What one scenario measured.
struct ScenarioResult: Codable {
    var id: Int
    var title: String
    /// `measured`, `fallback` (measured through a stand-in API, see notes) or `skipped`.
    var status: String = "measured"
    var notes: [String] = []
    var rows: [ResultRow] = []
    /// Table for the terminal: the first line is the header.
    var table: [[String]] = []
    var checksum: String?
    /// 1-minute load average of the machine when the scenario started (other processes compete
    /// for the cores above about 0 here; 2 means both cores were busy with other work).
    var loadAverage: Double?
    /// Wall seconds the scenario took.
    var seconds: Double?
}

/// The 1-minute load average (/proc/loadavg), or nil.
func loadAverage() -> Double? {
    readTextFile("/proc/loadavg")?.split(separator: " ").first.flatMap { Double($0) }
}

/// The machine and build the run measured.
struct MachineInfo: Codable {
    var cpu: String
    var logicalCores: Int
    /// Data and unified caches of CPU 0, e.g. `L1d 32K, L2 1024K, L3 32768K`.
    var caches: String?
    var memoryGiB: Double
    var kernel: String
    var date: String
    var build: String
    var compiler: String
    var revision: String?

    static func current(build: String) -> MachineInfo {
        let cpuinfo = readTextFile("/proc/cpuinfo") ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { String($0.split(separator: ":", maxSplits: 1).last ?? "").trimmingCharacters(in: .whitespaces) }
            ?? "unknown"
        let flags = cpuinfo.split(separator: "\n").first { $0.hasPrefix("flags") } ?? ""
        let vector = ["avx512f", "avx2", "avx", "sse4_2"].first { flags.split(separator: " ").contains(Substring($0)) }
        var uts = utsname()
        uname(&uts)
        let kernel = withUnsafeBytes(of: &uts.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let formatter = ISO8601DateFormatter()
        return MachineInfo(
            cpu: model + (vector.map { " (\($0))" } ?? ""),
            logicalCores: ProcessInfo.processInfo.activeProcessorCount,
            caches: cacheSizes(),
            memoryGiB: (Double(ProcessInfo.processInfo.physicalMemory) / Double(1 << 30) * 10).rounded() / 10,
            kernel: "Linux " + kernel,
            date: formatter.string(from: Date()),
            build: build,
            compiler: compilerVersion,
            revision: gitRevision())
    }

    private static var compilerVersion: String {
        #if compiler(>=6.3)
        "Swift ≥ 6.3"
        #elseif compiler(>=6.2)
        "Swift 6.2"
        #elseif compiler(>=6.1)
        "Swift 6.1"
        #else
        "Swift 6.0"
        #endif
    }

    /// Sizes of CPU 0's data and unified caches from sysfs, or nil.
    private static func cacheSizes() -> String? {
        var parts: [String] = []
        for index in 0..<8 {
            let directory = "/sys/devices/system/cpu/cpu0/cache/index\(index)/"
            guard let level = readTextFile(directory + "level")?.trimmingCharacters(in: .whitespacesAndNewlines),
                let type = readTextFile(directory + "type")?.trimmingCharacters(in: .whitespacesAndNewlines),
                let size = readTextFile(directory + "size")?.trimmingCharacters(in: .whitespacesAndNewlines)
            else { continue }
            if type == "Instruction" { continue }
            parts.append("L\(level)\(type == "Data" ? "d" : "") \(size)")
        }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }

    /// `git describe --always --dirty` of the working directory, if it is a repository.
    private static func gitRevision() -> String? {
        guard let result = try? runCapturing("/usr/bin/git", ["describe", "--always", "--dirty"]),
            result.status == 0
        else { return nil }
        let text = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }
}

/// The whole run, as written to the JSON file.
struct BenchmarkReport: Codable {
    var machine: MachineInfo
    var options: [String: String]
    var scenarios: [ScenarioResult] = []
}

// MARK: Formatting

/// Number formatting for tables: thousands separated by commas.
enum Format {
    /// `12,345` (rounded), or with `decimals` digits after the point.
    static func number(_ value: Double, decimals: Int = 0) -> String {
        guard value.isFinite else { return "–" }
        let scale = pow(10, Double(decimals))
        let rounded = (value * scale).rounded() / scale
        let negative = rounded < 0
        let integer = Int(abs(rounded).rounded(.down))
        var digits = String(integer)
        var grouped = ""
        while digits.count > 3 {
            grouped = "," + digits.suffix(3) + grouped
            digits.removeLast(3)
        }
        grouped = digits + grouped
        if decimals > 0 {
            let fraction = abs(rounded) - Double(integer)
            let fractionDigits = String(Int((fraction * scale).rounded()))
            grouped += "." + String(repeating: "0", count: max(0, decimals - fractionDigits.count)) + fractionDigits
        }
        return (negative ? "-" : "") + grouped
    }

    /// Three significant digits, for values spanning orders of magnitude (ns, µs).
    static func significant(_ value: Double) -> String {
        guard value.isFinite else { return "–" }
        let magnitude = abs(value)
        if magnitude >= 100 { return number(value) }
        if magnitude >= 10 { return number(value, decimals: 1) }
        if magnitude >= 1 { return number(value, decimals: 2) }
        return number(value, decimals: 3)
    }

    /// Bytes as KiB/MiB.
    static func bytes(_ value: Double) -> String {
        if abs(value) >= Double(1 << 20) { return number(value / Double(1 << 20), decimals: 1) + " MiB" }
        if abs(value) >= 1024 { return number(value / 1024, decimals: 1) + " KiB" }
        return number(value) + " B"
    }

    /// A Markdown table: first row is the header; every column but the first right-aligned.
    static func markdown(_ rows: [[String]]) -> String {
        guard let header = rows.first else { return "" }
        func line(_ row: [String]) -> String { "| " + row.map { $0.isEmpty ? " " : $0 }.joined(separator: " | ") + " |" }
        let rule = "|" + header.indices.map { $0 == 0 ? "---" : "---:" }.joined(separator: "|") + "|"
        return ([line(header), rule] + rows.dropFirst().map(line)).joined(separator: "\n")
    }

    /// Aligns a table: first row is the header; numbers right-aligned, the first column left-aligned.
    static func table(_ rows: [[String]]) -> String {
        guard let header = rows.first else { return "" }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows {
            for (index, cell) in row.enumerated() where index < widths.count {
                widths[index] = max(widths[index], cell.count)
            }
        }
        func line(_ row: [String]) -> String {
            row.enumerated().map { index, cell in
                let padding = String(repeating: " ", count: max(0, widths[index] - cell.count))
                return index == 0 ? cell + padding : padding + cell
            }.joined(separator: "  ")
        }
        var output = [line(header), widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")]
        output += rows.dropFirst().map(line)
        return output.joined(separator: "\n")
    }
}

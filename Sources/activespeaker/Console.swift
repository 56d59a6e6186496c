import Foundation

/// Standard output and standard error of the process.
enum Console {
    /// Writes `text` to standard output as it is. For short texts (help, version); results of a run go
    /// through a `BufferedOutput`.
    static func out(_ text: String) {
        _ = try? BufferedOutput.write(text, to: STDOUT_FILENO)
    }

    /// Writes one line `activespeaker: <message>` to standard error.
    static func error(_ message: String) {
        _ = try? BufferedOutput.write("activespeaker: \(message)\n", to: STDERR_FILENO)
    }

    /// True if standard output is a terminal (then summaries are tables, not JSON).
    static var outputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// True if standard error is a terminal (then long runs show progress).
    static var errorIsTerminal: Bool { isatty(STDERR_FILENO) == 1 }
}

/// Text written to a file descriptor in large chunks.
///
/// Appending is cheap; the bytes go out when 64 KiB have gathered, on `flush()`, and never partly
/// converted. A write error (other than an interrupted call) is reported by the `write` or `flush` that
/// meets it; a closed pipe ends the process with `SIGPIPE`, as for any Unix filter.
final class BufferedOutput {
    private let descriptor: Int32
    private let name: String
    private var buffer: [UInt8] = []
    private let capacity = 1 << 16

    /// - Parameters:
    ///   - descriptor: An open file descriptor, not closed by this object.
    ///   - name: What to call it in error messages, e.g. `standard output`.
    init(descriptor: Int32 = STDOUT_FILENO, name: String = "standard output") {
        self.descriptor = descriptor
        self.name = name
        buffer.reserveCapacity(capacity)
    }

    /// Appends `text`, writing out the buffer if it is full.
    /// - Throws: `CommandError.failure` if writing fails.
    func write(_ text: String) throws(CommandError) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= capacity { try flush() }
    }

    /// Writes out everything appended so far.
    /// - Throws: `CommandError.failure` if writing fails.
    func flush() throws(CommandError) {
        defer { buffer.removeAll(keepingCapacity: true) }
        let failure = buffer.withUnsafeBytes { Self.writeAll($0, to: descriptor) }
        if let failure { throw .failure("cannot write to \(name): \(String(cString: strerror(failure)))") }
    }

    /// Writes `text` to `descriptor` at once, unbuffered.
    /// - Throws: `CommandError.failure` if writing fails.
    static func write(_ text: String, to descriptor: Int32) throws(CommandError) {
        let failure = Array(text.utf8).withUnsafeBytes { writeAll($0, to: descriptor) }
        if let failure { throw .failure("cannot write: \(String(cString: strerror(failure)))") }
    }

    /// Writes every byte, retrying short and interrupted writes; returns `errno` on failure, else nil.
    private static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = posixWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                return errno
            }
            offset += written
        }
        return nil
    }
}

/// The system's `write(2)`, named so it cannot be confused with the methods above.
private func posixWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}

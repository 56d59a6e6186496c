import Foundation

/// A file that appears complete or not at all.
///
/// `init` creates a hidden temporary file in the destination's directory (so an unwritable destination
/// fails before any work); `commit` writes the contents there and renames it over the destination, which
/// is atomic within one file system. Until then the destination is untouched: if the run fails, the
/// temporary file is removed by `discard()` or `deinit`, and if the process is killed by `SIGINT`,
/// `SIGTERM`, `SIGHUP` or `SIGPIPE`, by a signal handler.
final class AtomicFile {
    /// The destination, as given.
    let path: String
    private var temporaryPath: String?
    private var descriptor: Int32
    private var signalSlot: Int?

    /// Creates the temporary file next to `path`.
    /// - Throws: `CommandError.failure` naming `path` if it is a directory, or its directory does not exist
    ///   or is not writable.
    init(path: String) throws(CommandError) {
        self.path = path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw .failure("\(path): is a directory")
        }
        TemporaryFileCleanup.installHandlers()
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        // The name is registered for the signal handler before the file exists, so that a signal at any
        // moment leaves nothing behind (unlinking a name not yet created is harmless).
        var generator = SystemRandomNumberGenerator()
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for _ in 0..<100 {
            let suffix = String((0..<8).map { _ in letters[Int(generator.next(upperBound: UInt(letters.count)))] })
            let temporary = "\(directory)/.\(url.lastPathComponent).\(suffix)"
            let slot = TemporaryFileCleanup.register(temporary)
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if descriptor >= 0 {
                self.descriptor = descriptor
                temporaryPath = temporary
                signalSlot = slot
                return
            }
            let code = errno
            if let slot { TemporaryFileCleanup.unregister(slot) }
            guard code == EEXIST else {
                throw .failure("\(path): cannot create: \(String(cString: strerror(code)))")
            }
        }
        throw .failure("\(path): cannot create: no free temporary name beside it")
    }

    deinit { discard() }

    /// Writes `contents` and moves the file into place, with the permissions a new file would get.
    /// - Throws: `CommandError.failure` naming `path`; the temporary file is removed and `path` is untouched.
    func commit(_ contents: String) throws(CommandError) {
        guard let temporaryPath else { preconditionFailure("AtomicFile used after commit or discard") }
        if let failure = finish(contents, movingTo: temporaryPath) {
            discard()
            throw .failure("\(path): \(failure)")
        }
        self.temporaryPath = nil
        forgetSlot()
    }

    private func forgetSlot() {
        if let signalSlot { TemporaryFileCleanup.unregister(signalSlot) }
        signalSlot = nil
    }

    /// Writes, syncs, closes and renames; returns what failed and why, or nil.
    private func finish(_ contents: String, movingTo temporaryPath: String) -> String? {
        func failed(_ what: String) -> String { "\(what): \(String(cString: strerror(errno)))" }
        let bytes = Array(contents.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if written >= 0 {
                offset += written
            } else if errno != EINTR {
                return failed("cannot write")
            }
        }
        // mkstemp makes the file private (0600); give it what open(2) would: 0666 less the umask.
        let mask = umask(0)
        umask(mask)
        if fchmod(descriptor, 0o666 & ~mask) != 0 { return failed("cannot set permissions") }
        if fsync(descriptor) != 0 { return failed("cannot write") }
        let closed = close(descriptor)
        descriptor = -1
        if closed != 0 { return failed("cannot write") }
        if rename(temporaryPath, path) != 0 { return failed("cannot replace") }
        return nil
    }

    /// Removes the temporary file; the destination stays as it was. Idempotent.
    func discard() {
        if descriptor >= 0 {
            close(descriptor)
            descriptor = -1
        }
        if let temporaryPath {
            unlink(temporaryPath)
            self.temporaryPath = nil
        }
        forgetSlot()
    }
}

/// Removes registered temporary files when the process is killed by a signal, then lets the signal
/// take its usual effect.
///
/// The handler may only call async-signal-safe functions, so paths are kept as C strings in a fixed
/// table allocated before any handler is installed; the handler reads the table and calls `unlink`.
private enum TemporaryFileCleanup {
    /// Slots in the table; the signal handler repeats this number as a literal.
    private static let capacity = 16
    private static let signals: [Int32] = [SIGINT, SIGTERM, SIGHUP, SIGPIPE]

    /// Slots of C-string paths, nil when free.
    /// `nonisolated(unsafe)`: written only by the main thread (register/unregister), read by the signal
    /// handler, which interrupts that same thread; a pointer-sized store is never seen half-written.
    nonisolated(unsafe) private static var slots: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?> = {
        let table = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(capacity: capacity)
        table.initialize(repeating: nil, count: capacity)
        for signal in signals { installHandler(signal) }
        return table
    }()

    /// Installs the signal handlers, once; `register` does it too.
    static func installHandlers() { _ = slots }

    /// Registers `path` for removal on a fatal signal; returns its slot, or nil if the table is full.
    static func register(_ path: String) -> Int? {
        let table = slots
        guard let slot = (0..<capacity).first(where: { table[$0] == nil }) else { return nil }
        table[slot] = strdup(path)
        return slot
    }

    /// Forgets a registration.
    static func unregister(_ slot: Int) {
        let path = slots[slot]
        slots[slot] = nil
        free(path)
    }

    /// Installs the handler for `number` and unblocks the signal, unless it is ignored (e.g. `SIGHUP`
    /// under `nohup`) or already handled.
    private static func installHandler(_ number: Int32) {
        var current = sigaction()
        guard sigaction(number, nil, &current) == 0, current.__sigaction_handler.sa_handler == nil else { return }
        SignalHandler.install(number) { received in
            let table = TemporaryFileCleanup.slots
            for slot in 0..<16 {
                if let path = table[slot] { unlink(path) }
            }
            // Restore the default action and deliver the signal again, so the exit status reports it.
            signal(received, SIG_DFL)
            raise(received)
        }
    }
}

import Foundation

/// A one-line progress report on standard error, redrawn in place, for runs long enough to wait for.
///
/// Shown only when standard error is a terminal: a pipe or log file never receives it.
final class ProgressLine {
    private let label: String
    private let enabled: Bool
    private var shownPercent = -1

    /// - Parameters:
    ///   - label: Text before the percentage, e.g. `detect`.
    ///   - enabled: Whether to draw at all; still nothing is drawn unless standard error is a terminal.
    init(label: String, enabled: Bool) {
        self.label = label
        self.enabled = enabled && Console.errorIsTerminal
    }

    /// Shows `fraction` (0…1) done, redrawing only when the whole percentage changes.
    func update(_ fraction: Double) {
        guard enabled else { return }
        let percent = Int((min(max(fraction, 0), 1) * 100).rounded(.down))
        guard percent != shownPercent else { return }
        shownPercent = percent
        try? BufferedOutput.write("\r\(label): \(percent)% of audio processed", to: STDERR_FILENO)
    }

    /// Erases the line, leaving the cursor at its start.
    func clear() {
        guard enabled, shownPercent >= 0 else { return }
        shownPercent = -1
        try? BufferedOutput.write("\r\u{1B}[2K", to: STDERR_FILENO)
    }
}

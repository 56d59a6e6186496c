import Foundation

/// How the tests wait for something to happen: poll a condition until it holds, within a bound that
/// only a broken build reaches. Never a fixed sleep standing in for an event; and a check that
/// something does *not* happen is made only after a positive event has shown that enough time passed.
public enum Waiting {
    /// The bound when a test gives none: generous, since a loaded machine may be slow.
    public static let defaultTimeout: Double = 20
    /// Between polls.
    static let interval: Double = 0.005

    /// Polls `condition` on the calling thread until it holds or `timeout` seconds pass.
    /// - Returns: Whether it held.
    public static func until(timeout: Double = defaultTimeout, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(useconds_t(interval * 1e6))
        }
        return condition()
    }

    /// Polls `condition` until it holds or `timeout` seconds pass, suspending between polls.
    /// - Returns: Whether it held.
    public static func until(timeout: Double = defaultTimeout, _ condition: () -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
        }
        return condition()
    }
}

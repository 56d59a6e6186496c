import Foundation
import Synchronization

/// A change in the list of sound devices.
public enum DeviceChange: Sendable, Equatable {
    /// A device appeared (a card was plugged in, a PCM was added to a configuration file).
    case added(AudioDevice)
    /// A device disappeared.
    case removed(AudioDevice)
}

/// Notices sound devices appearing and disappearing by listing them (`AudioDevices.list(probe: false)`)
/// every `interval` seconds on its own thread and comparing names.
///
/// ALSA has no device-change notification that covers configured PCMs, and udev is not always there
/// (containers), so the list is polled: a card costs one control open per poll, nothing is opened for
/// recording. Changes are handed to `onChange` on the watcher's thread, in list order, removals first.
/// The first list is taken by `init`, so only later changes are reported.
///
/// alsa-lib re-reads a configuration file when its modification time changes, for the files it loads
/// at the top level (`ALSA_CONFIG_PATH`, by default `/usr/share/alsa/alsa.conf`); PCMs defined there
/// appear and disappear too. Files loaded by hooks (`~/.asoundrc`) are read once per process.
public final class DeviceWatcher: @unchecked Sendable {
    // @unchecked Sendable: `start`/`stop` are called by the owner, not concurrently; the polling state
    // is the poller's (see `Poller`).

    /// Seconds between two lists.
    public var interval: Double { poller.interval }
    /// The devices of the last list.
    public var known: [AudioDevice] { poller.known }

    /// Everything the polling thread touches. The thread holds it strongly and never this watcher, so a
    /// watcher released while it polls stops the thread from `deinit` without the thread reading a
    /// half-destroyed object.
    private let poller: Poller
    private var thread: Thread?

    /// Takes the first list; polling begins with `start()`.
    /// - Parameters:
    ///   - interval: Seconds between lists, > 0 (1 s is cheap: a few control opens).
    ///   - onChange: Called on the watcher's thread for each change.
    public init(interval: Double = 1, onChange: @escaping @Sendable (DeviceChange) -> Void) {
        precondition(interval > 0, "interval must be positive")
        poller = Poller(interval: interval, onChange: onChange)
    }

    deinit { stop() }

    /// Starts polling. Call once.
    public func start() {
        precondition(thread == nil, "start() is called once")
        let thread = Thread { [poller] in poller.run() }
        thread.name = "device watcher"
        self.thread = thread
        thread.start()
    }

    /// Stops polling and waits for the thread. Idempotent.
    public func stop() {
        guard thread != nil else { return }
        poller.stop()
    }

    /// Lists the devices once and reports the differences from the last list.
    /// - Returns: The changes, also handed to `onChange`.
    @discardableResult
    public func poll() -> [DeviceChange] { poller.poll() }

    /// The changes between two lists, by device name: removals (in the old order), then additions (in the new order).
    public static func changes(from old: [AudioDevice], to new: [AudioDevice]) -> [DeviceChange] {
        let oldNames = Set(old.map(\.name)), newNames = Set(new.map(\.name))
        return old.filter { !newNames.contains($0.name) }.map(DeviceChange.removed)
            + new.filter { !oldNames.contains($0.name) }.map(DeviceChange.added)
    }
}

/// The state of a `DeviceWatcher`'s polling thread.
private final class Poller: @unchecked Sendable {
    // @unchecked Sendable: `known` is written by the polling thread (or by `poll()` before `start()`);
    // the stop flag is atomic.
    let interval: Double
    private(set) var known: [AudioDevice]
    private let onChange: @Sendable (DeviceChange) -> Void
    private let stopRequested = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(interval: Double, onChange: @escaping @Sendable (DeviceChange) -> Void) {
        self.interval = interval
        self.onChange = onChange
        known = AudioDevices.list(probe: false)
    }

    /// The thread's body: polls every `interval` until `stop()`.
    func run() {
        while !stopRequested.load(ordering: .acquiring) {
            _ = wake.wait(timeout: .now() + interval)
            if stopRequested.load(ordering: .acquiring) { break }
            poll()
        }
        done.signal()
    }

    /// Ends `run()` and waits for it. Idempotent.
    func stop() {
        guard !stopRequested.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        done.wait()
    }

    @discardableResult
    func poll() -> [DeviceChange] {
        let current = AudioDevices.list(probe: false)
        let changes = DeviceWatcher.changes(from: known, to: current)
        known = current
        for change in changes { onChange(change) }
        return changes
    }
}

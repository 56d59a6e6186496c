import Foundation
import SpeakerDevices
import SpeakerIO
import SpeakerRTP
import Synchronization

/// Where a meeting plays what it hears.
public enum SpeakerChoice: Sendable, Equatable {
    /// Nothing is played (a bot, a recorder, a test).
    case none
    /// An ALSA playback PCM (`default`, `plughw:1,0`, …); `alsaConfigurationFile` is an alsa-lib
    /// configuration file loaded over the system's for this device only (a `type file` PCM in tests).
    case device(String, alsaConfigurationFile: String? = nil)
}

/// Plays the forwarded audio of a meeting: every stream through `PlaybackMixer` (jitter buffer and
/// Opus decoder each), mixed, to an ALSA playback device, 10 ms at a time on its own thread
/// (`activespeaker-playback`), paced by the monotonic clock.
///
/// Datagrams come from the meeting's socket queue (`insert`); the mixer is shared under a `Mutex`, held
/// for one insert or one hop, together with the tick the player plays next: a new stream starts at that
/// tick, so its first pull is the next hop's (read outside the lock, a datagram could start a stream at
/// the tick just played, whose next pull would come a tick after its start: a precondition failure that a
/// loaded machine hit). The thread owns the device.
final class MeetingPlayer: Sendable {
    private let mixer = Mutex(PlaybackMixerBox())
    private let stopFlag = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)
    private let device: DeviceBox

    /// Opens the device; `start()` begins playing.
    /// - Throws: `SpeakerIOError` when the device cannot be opened.
    init(device name: String, alsaConfigurationFile: String?) throws {
        device = DeviceBox(try ALSAPlayback(device: name, configurationFile: alsaConfigurationFile))
    }

    /// One forwarded datagram, as it arrives.
    func insert(_ datagram: UnsafeRawBufferPointer) {
        mixer.withLock { _ = $0.mixer.insert(datagram: datagram, tick: $0.nextTick) }
    }

    /// Starts the playback thread. `failure` is called (once, on that thread) if the device fails.
    func start(failure: @escaping @Sendable (SpeakerIOError) -> Void) {
        guard !started.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            run(failure: failure)
            finished.signal()
        }
        thread.name = "activespeaker-playback"
        thread.start()
    }

    /// Stops playing, waits for the thread, and closes the device (what it buffered is played).
    /// Idempotent; never from the playback thread.
    func stop() {
        guard !stopFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if started.load(ordering: .acquiring) { finished.wait() }
        device.playback.close()
    }

    private func run(failure: @Sendable (SpeakerIOError) -> Void) {
        var hop = [Float](repeating: 0, count: PlaybackMixer.hopSize)
        let start = DispatchTime.now().uptimeNanoseconds
        var tick = 0
        while !stopFlag.load(ordering: .acquiring) {
            // Absolute due times: a late hop is made at once and the schedule never drifts.
            let due = start + UInt64(tick + 1) * 10_000_000
            let now = DispatchTime.now().uptimeNanoseconds
            if due > now { usleep(UInt32((due - now) / 1000)) }
            hop.withUnsafeMutableBufferPointer { buffer in
                mixer.withLock { box in
                    box.mixer.pull(tick: tick, into: buffer)
                    box.nextTick = tick + 1
                }
            }
            tick += 1
            do {
                try hop.withUnsafeBufferPointer { try device.playback.write($0) }
            } catch let error as SpeakerIOError {
                failure(error)
                return
            } catch {
                return
            }
        }
    }
}

/// The mixer, for the `Mutex` (only reached under it).
private final class PlaybackMixerBox: @unchecked Sendable {
    let mixer = PlaybackMixer()
    /// The tick the player plays next: datagrams are placed against it.
    var nextTick = 0
}

/// The device: written by the playback thread only, closed after it has ended.
private final class DeviceBox: @unchecked Sendable {
    let playback: ALSAPlayback
    init(_ playback: ALSAPlayback) { self.playback = playback }
}

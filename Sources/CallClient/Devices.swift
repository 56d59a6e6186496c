import Foundation
import SpeakerDevices
import SpeakerFiles
import SpeakerIO

/// An audio device as the device-switching API shows it: the one output, `Speaker`, and the
/// microphones.
public struct AudioDeviceInfo: Sendable, Hashable, Identifiable {
    /// Output or input; the raw values are the browsers' and the seeds' `kind` strings.
    public enum Kind: String, Sendable, Hashable {
        /// The audio output (`Speaker`).
        case speaker = "audiooutput"
        /// A microphone.
        case microphone = "audioinput"
    }

    /// `Speaker` for the output; for microphones the ALSA name (`hw:0,0`, `default`, a PCM from an
    /// ALSA configuration).
    public var deviceId: String
    /// The name a device list shows (ALSA's description; `Speaker` for the output).
    public var label: String
    /// Output or microphone.
    public var kind: Kind
    /// The `deviceId`, for `Identifiable`.
    public var id: String { deviceId }

    /// An entry of `getMics()`: an id, a label and a kind.
    public init(deviceId: String, label: String, kind: Kind) {
        self.deviceId = deviceId
        self.label = label
        self.kind = kind
    }

    /// The one output entry: id and label `Speaker`, as the device-switching guides filter it.
    public static let speaker = AudioDeviceInfo(deviceId: "Speaker", label: "Speaker", kind: .speaker)
}

/// A webcam (V4L2 device). Video is signalled state only.
public struct CameraDevice: Sendable, Hashable, Identifiable {
    /// `/dev/videoN`.
    public var deviceId: String
    /// The name a device list shows.
    public var label: String
    /// The `deviceId`, for `Identifiable`.
    public var id: String { deviceId }
}

/// A microphone that is not a sound device: any `MicrophoneSource`, e.g. a file played in real time.
public final class CustomMicrophoneTrack: Sendable {
    let source: any MicrophoneSource
    /// A label for events and listings.
    public let label: String
    /// Seconds one pass lasts, for a file that does not loop; nil otherwise.
    public let duration: Double?

    /// A track that publishes `source`, listed as `label`; `duration` for a file that does not loop.
    public init(source: any MicrophoneSource, label: String, duration: Double? = nil) {
        self.source = source
        self.label = label
        self.duration = duration
    }

    /// A file played in real time (any format libsndfile reads), optionally looped and followed by silence.
    /// - Parameter startAt: When the file's first sample plays (wall-clock time): clients that share it
    ///   play their files in step. Nil: when the microphone starts.
    /// - Throws: `MeetingError` 3003 naming the file if it cannot be read.
    public static func file(
        _ path: String, loop: Bool = false, silenceAfter: Double = 0, startAt: Date? = nil
    ) throws(MeetingError) -> CustomMicrophoneTrack {
        do {
            let source = try FileMicrophone(path: path, loop: loop, silenceAfter: silenceAfter)
            if let startAt {
                // Wall-clock time to the monotonic clock the microphone paces against.
                let clock = MonotonicClock()
                let ahead = max(0, startAt.timeIntervalSinceNow)
                source.startFirst(at: clock.now() + UInt64(ahead * 1e9))
            }
            return CustomMicrophoneTrack(
                source: source, label: path, duration: loop ? nil : Double(source.passLength) / Double(source.sampleRate))
        } catch {
            throw MeetingError(code: .invalidArgument, "\(error)")
        }
    }
}

/// Where a meeting's microphone comes from.
public enum MicrophoneChoice: Sendable {
    /// A sound device by ALSA name; nil: the first microphone `getMics()` lists (never ALSA's `null`,
    /// which records nothing).
    case device(String?)
    /// A microphone of the app's own (`CustomMicrophoneTrack`, e.g. a file played in real time).
    case custom(CustomMicrophoneTrack)
    /// No microphone (a listener, a recorder, a bot): the meeting joins with the microphone off,
    /// whatever `micEnabled` says.
    case none
}

enum DeviceCatalog {
    /// ALSA PCMs that capture nothing real: `null` reads digital silence for ever. They are never
    /// listed as microphones, so never chosen as the default or by `changeMic()`.
    static let pseudoDevices: Set<String> = ["null"]

    /// The microphones alsa-lib knows, without the pseudo devices.
    static func microphones() -> [AudioDeviceInfo] {
        AudioDevices.list().filter { $0.canCapture && !pseudoDevices.contains($0.name) }.map {
            AudioDeviceInfo(deviceId: $0.name, label: $0.description.isEmpty ? $0.name : $0.description, kind: .microphone)
        }
    }

    /// `/dev/video*` character devices.
    static func cameras(directory: String = "/dev") -> [CameraDevice] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix("video") }.sorted().map { name in
            let path = directory + "/" + name
            let label = (try? String(contentsOfFile: "/sys/class/video4linux/\(name)/name", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            return CameraDevice(deviceId: path, label: label ?? name)
        }
    }
}

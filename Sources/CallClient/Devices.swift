import Foundation
import SpeakerIO

/// An audio device as the device-switching API shows it.
public struct AudioDeviceInfo: Sendable, Hashable, Identifiable {
    public enum Kind: Sendable, Hashable {
        /// The audio output ("Speaker").
        case speaker
        case microphone
    }

    /// For microphones the ALSA name (`hw:0,0`, `default`, a PCM from an ALSA configuration).
    public var deviceId: String
    public var label: String
    public var kind: Kind
    public var id: String { deviceId }

    public init(deviceId: String, label: String, kind: Kind) {
        self.deviceId = deviceId
        self.label = label
        self.kind = kind
    }

    /// The one output entry.
    public static let speaker = AudioDeviceInfo(deviceId: "speaker", label: "Speaker", kind: .speaker)
}

/// A webcam (V4L2 device). Video is signalled state only.
public struct CameraDevice: Sendable, Hashable, Identifiable {
    /// `/dev/videoN`.
    public var deviceId: String
    public var label: String
    public var id: String { deviceId }
}

/// A microphone that is not a sound device: any `MicrophoneSource`, e.g. a file played in real time.
public final class CustomMicrophoneTrack: Sendable {
    let source: any MicrophoneSource
    /// A label for events and listings.
    public let label: String
    /// Seconds one pass lasts, for a file that does not loop; nil otherwise.
    public let duration: Double?

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
    /// A sound device by ALSA name; nil: the first microphone `getMics()` lists.
    case device(String?)
    case custom(CustomMicrophoneTrack)
    /// No microphone (a listener, a recorder, a bot).
    case none
}

enum DeviceCatalog {
    /// The microphones alsa-lib knows.
    static func microphones() -> [AudioDeviceInfo] {
        AudioDevices.list().filter(\.canCapture).map {
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

import CallProtocol
import Foundation
import SpeakerDevices
import SpeakerIO

/// The meeting's device state: the selected output and the device listener with its polling.
struct DeviceState {
    var selectedOutput = AudioDeviceInfo.speaker
    /// Which kind was selected last (`setAudioDevice`: the output; `changeMic`: a microphone), for
    /// `getSelectedAudioDevice()`.
    var lastSelected = AudioDeviceInfo.Kind.microphone
    var listener: Meeting.AudioDeviceChangeListener?
    /// Reads the device list while a device listener is set.
    var poll: (any DispatchSourceTimer)?
    var lastDevices: [AudioDeviceInfo] = []
}

// MARK: Audio devices (device-switching guide semantics)

extension Meeting {
    /// The device listener's type: the selected microphone and every device, on the main actor.
    public typealias AudioDeviceChangeListener = @MainActor @Sendable (AudioDeviceInfo?, [AudioDeviceInfo]) -> Void

    /// The output first (`Speaker`), then every microphone (ALSA's capture devices, without its
    /// `null`, which records nothing).
    public func getMics() -> [AudioDeviceInfo] {
        [AudioDeviceInfo.speaker] + listMicrophones()
    }

    /// The device selected last, as a device-switching screen marks it: the `Speaker` entry after
    /// `setAudioDevice(.speaker)`, else (and again after `changeMic`) the microphone the meeting records
    /// from (or would, when it starts): the chosen device, the default one (the first microphone
    /// `getMics()` lists) for `.device(nil)`, an entry with id `custom` and the track's label for a
    /// custom track; nil without a microphone (`.none`, or no device at all).
    public func getSelectedAudioDevice() -> AudioDeviceInfo? {
        selectedDevice(microphones: listMicrophones)
    }

    /// The device selected last; `microphones` lists them, read only when a microphone is the answer.
    private func selectedDevice(microphones: () -> [AudioDeviceInfo]) -> AudioDeviceInfo? {
        switch core.withLock({ $0.devices.lastSelected }) {
        case .speaker: getSelectedAudioDevice(kind: .speaker)
        case .microphone: selectedMicrophone(among: microphones())
        }
    }

    /// The selected device of one kind: the output (`setAudioDevice`) or the microphone
    /// (`getSelectedAudioDevice()`).
    public func getSelectedAudioDevice(kind: AudioDeviceInfo.Kind) -> AudioDeviceInfo? {
        switch kind {
        case .speaker: core.withLock { $0.devices.selectedOutput }
        case .microphone: getSelectedAudioDevice()
        }
    }

    private func selectedMicrophone(among microphones: [AudioDeviceInfo]) -> AudioDeviceInfo? {
        switch core.withLock({ $0.machine.microphone }) {
        case .none: return nil
        case .custom(let track): return AudioDeviceInfo(deviceId: "custom", label: track.label, kind: .microphone)
        case .device(nil): return microphones.first
        case .device(let name?):
            return microphones.first { $0.deviceId == name } ?? AudioDeviceInfo(deviceId: name, label: name, kind: .microphone)
        }
    }

    /// Selects the audio output: one of the outputs `getMics()` lists (the `Speaker` entry: the
    /// configured `speaker` device, or ALSA `default` when that is `.none`). Joined and playing nothing,
    /// the meeting starts playing there; `getSelectedAudioDevice()` is then the `Speaker` entry.
    /// - Throws: `MeetingError` 3068 for a device that cannot play (a microphone), 3003 for an output
    ///   `getMics()` does not list, 3002 for an output that cannot be opened; each is also an `error`
    ///   event, and the selection stays as it was.
    public func setAudioDevice(_ device: AudioDeviceInfo) throws(MeetingError) {
        guard device.kind == .speaker else {
            throw reported(MeetingError(code: .actionNotSupported, "\(device.label) cannot play audio"))
        }
        guard device == .speaker else {
            throw reported(MeetingError(code: .invalidArgument, "no audio output \(device.deviceId): getMics() lists \(AudioDeviceInfo.speaker.deviceId)"))
        }
        let silent = core.withLock { $0.machine.phase == .joined && $0.player == nil }
        if silent {
            let output: SpeakerChoice = configuration.speaker == .none ? .device("default") : configuration.speaker
            if let error = startPlayback(output) { throw reported(error) }
        }
        core.withLock { c in
            c.devices.selectedOutput = device
            c.devices.lastSelected = .speaker
        }
        notifyDeviceListener()
    }

    /// Registers the one device listener, called on the main actor (the main queue) with the selected
    /// microphone (`getSelectedAudioDevice()`) and `getMics()`: at once, when a device is plugged in or
    /// removed (the list is read every `devicePollInterval` seconds while a listener is set), after
    /// `changeMic` and `setAudioDevice`. Calls come one at a time, in order. A later call replaces it;
    /// nil removes it and stops the polling.
    public func setAudioDeviceChangeListener(_ listener: AudioDeviceChangeListener?) {
        let interval = configuration.devicePollInterval
        core.withLock { c in
            c.devices.listener = listener
            c.devices.poll?.cancel()
            c.devices.poll = nil
            guard listener != nil, interval > 0 else { return }
            // The timer holds the meeting weakly; `deinit` cancels it.
            let poll = DispatchSource.makeTimerSource(queue: deviceQueue)
            poll.schedule(deadline: .now() + interval, repeating: interval)
            poll.setEventHandler { [weak self] in self?.refreshDevices() }
            poll.resume()
            c.devices.poll = poll
        }
        if listener != nil { notifyDeviceListener() }
    }

    /// Re-reads the device list now and tells the listener if it changed (the listener's polling
    /// does this every `devicePollInterval`).
    public func refreshDevices() {
        let devices = getMics()
        let changed = core.withLock { c in
            defer { c.devices.lastDevices = devices }
            return c.devices.lastDevices != devices
        }
        if changed { notifyDeviceListener(devices: devices) }
    }

    private func notifyDeviceListener(devices: [AudioDeviceInfo]? = nil) {
        let devices = devices ?? getMics()
        let selected = selectedDevice { Array(devices.dropFirst()) }
        let listener = core.withLock { c in
            c.devices.lastDevices = devices
            return c.devices.listener
        }
        guard let listener else { return }
        // The main queue runs its blocks one at a time, in the order they were queued.
        DispatchQueue.main.async { MainActor.assumeIsolated { listener(selected, devices) } }
    }

    /// Switches to another microphone: `deviceId`, or with nil the next one after the current.
    /// A live microphone is stopped and restarted, so its audio stream is disabled then enabled.
    /// - Returns: The microphone now in use (`getSelectedAudioDevice()`), once it runs.
    /// - Throws: `MeetingError` 3059 if there is no (such) microphone, 3002 if it cannot be opened; the
    ///   previous microphone then stays, and the error also goes to `onError`.
    @discardableResult
    public func changeMic(deviceId: String? = nil) async throws(MeetingError) -> AudioDeviceInfo? {
        let mics = listMicrophones()
        let current: String? = core.withLock { c in
            if case .device(let name) = c.machine.microphone { return name ?? mics.first?.deviceId }
            return nil
        }
        let target: String
        if let deviceId {
            guard mics.contains(where: { $0.deviceId == deviceId }) else {
                throw reported(MeetingError(code: .noMicrophoneFound, "no microphone device \(deviceId)"))
            }
            target = deviceId
        } else {
            guard !mics.isEmpty else { throw reported(MeetingError(code: .noMicrophoneFound, "no microphone device found")) }
            let index = current.flatMap { name in mics.firstIndex { $0.deviceId == name } }.map { ($0 + 1) % mics.count } ?? 0
            target = mics[index].deviceId
        }
        try switchMicrophone(to: .device(target))
        return getSelectedAudioDevice()
    }

    /// Switches to a custom microphone track (see `changeMic(deviceId:)`) and turns the microphone on,
    /// as a device-switching screen that offers a track expects (unless a moderator's mute holds it, or the
    /// participant is a subscriber: then the `error` event of `unmuteMic()`).
    /// - Returns: The track's entry (`getSelectedAudioDevice()`: id `custom`, the track's label).
    @discardableResult
    public func changeMic(customMicrophoneTrack track: CustomMicrophoneTrack) async throws(MeetingError) -> AudioDeviceInfo? {
        try switchMicrophone(to: .custom(track))
        if core.withLock({ $0.machine.phase == .joined && $0.machine.micMuted }) { handle(.unmute) }
        return getSelectedAudioDevice()
    }

    private func switchMicrophone(to choice: MicrophoneChoice) throws(MeetingError) {
        // Open the new source first: on failure the old microphone keeps running.
        let source: any MicrophoneSource
        switch Self.openSource(choice, microphones: listMicrophones) {
        case .success(let opened): source = opened
        case .failure(let error): throw reported(error)
        }
        do {
            try source.start()
        } catch {
            throw reported(MeetingError(code: .audioDeviceFailed, "\(error)"))
        }
        let (old, live, localID, client, muted, previous) = core.withLock { c in
            let previous = c.machine.microphone
            c.devices.lastSelected = .microphone
            _ = c.machine.handle(.microphoneChosen(choice), now: Self.now())
            let live = c.publisher != nil && c.machine.phase == .joined
            return (c.publisher, live, c.machine.localID, c.client, c.machine.micMuted, previous)
        }
        guard live, let old, let localID else {
            source.stop()
            notifyDeviceListener()
            return
        }
        old.stop()
        core.withLock { $0.publisher = nil }
        client?.send(ClientMessage.disableStream(.audio).json)
        eventQueue.emit(.streamDisabled(participantId: localID, kind: .audio))
        // The source opened above is published as it is (not closed and opened again).
        let failure = startPublishing(muted: muted, source: source)
        if failure != nil {
            // It failed after all: the previous microphone comes back.
            source.stop()
            core.withLock { _ = $0.machine.handle(.microphoneChosen(previous), now: Self.now()) }
            if let error = startPublishing(muted: muted, source: old.source) { eventQueue.emit(.error(error)) }
        }
        client?.send(ClientMessage.enableStream(.audio).json)
        eventQueue.emit(.streamEnabled(participantId: localID, kind: .audio))
        if let failure { throw reported(failure) }
        notifyDeviceListener()
    }

    /// Sends an error to `onError` and returns it for throwing.
    func reported(_ error: MeetingError) -> MeetingError {
        eventQueue.emit(.error(error))
        return error
    }

    static func openSource(
        _ choice: MicrophoneChoice, microphones: () -> [AudioDeviceInfo]
    ) -> Result<any MicrophoneSource, MeetingError> {
        switch choice {
        case .none:
            return .failure(MeetingError(code: .noMicrophoneFound, "no microphone was chosen"))
        case .custom(let track):
            return .success(track.source)
        case .device(let name):
            guard let device = name ?? microphones().first?.deviceId else {
                return .failure(MeetingError(code: .noMicrophoneFound, "no microphone device found"))
            }
            do {
                return .success(try ALSAMicrophone(device: device))
            } catch {
                return .failure(MeetingError(code: .audioDeviceFailed, "\(error)"))
            }
        }
    }

    // MARK: Cameras (signalled state only)

    /// The V4L2 devices, if any.
    public func getCameras() -> [CameraDevice] { DeviceCatalog.cameras() }

    /// Selects a webcam.
    /// - Throws: `MeetingError` 3010 "no webcam device found" for an unknown id.
    public func changeCam(deviceId: String) throws(MeetingError) {
        guard getCameras().contains(where: { $0.deviceId == deviceId }) else {
            throw reported(MeetingError(code: .noWebcamFound, "no webcam device found: \(deviceId)"))
        }
    }
}

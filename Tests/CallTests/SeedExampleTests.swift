import CallServer
import Foundation
import SpeakerIO
import Synchronization
import Testing
import TestSupport

@testable import CallClient

/// Issue 32, part 5: example apps in the seeds' styles, compiled and run against a server in this process.
/// Seed 000's screen is `SeedListenerTests`; here seed 002's device settings screen, a seed-003-style
/// controller that forwards to a weak delegate, and seed-004-style roles (a moderator, a publisher, a
/// subscriber). Each is written as an app writes it: `@MainActor` classes with plain `var`s, listeners
/// added in their initialisers, the `async` calls awaited where the seeds await them.
@Suite(.serialized, .realTime) struct SeedExampleTests {
    init() throws {
        try TestMicrophones.install()
    }

    static func meeting(
        _ server: RoomServer, _ participant: String, role: Role = .publisher, microphone: MicrophoneChoice, micEnabled: Bool = true
    ) -> Meeting {
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token(participant, role: role))
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = microphone
        configuration.micEnabled = micEnabled
        return Meeting(configuration: configuration)
    }

    // MARK: Seed 002: the device settings screen

    /// A device picker as seed 002 writes it: the list from `getMics()` (the `Speaker` output first),
    /// a check mark on `getSelectedAudioDevice()`, a tap selects the output or switches the microphone,
    /// a failure shows an alert; the device listener keeps the list fresh.
    final class DeviceSettingsViewController: MeetingEventListener {
        let meeting: Meeting
        var rows: [AudioDeviceInfo] = []
        var checked: AudioDeviceInfo?
        var alert: String?
        var errorsHeard: [Int] = []

        init(meeting: Meeting) {
            self.meeting = meeting
            meeting.addEventListener(self)
            meeting.setAudioDeviceChangeListener { [weak self] selected, devices in
                self?.rows = devices
                self?.checked = selected
            }
        }

        func didSelectRow(_ device: AudioDeviceInfo) async {
            do {
                if device.deviceId == "Speaker" {
                    try meeting.setAudioDevice(device)
                    checked = meeting.getSelectedAudioDevice()
                } else {
                    checked = try await meeting.changeMic(deviceId: device.deviceId)
                }
            } catch {
                alert = "\(error.code.rawValue): \(error.message)"
            }
        }

        func didTapUseRecording(_ track: CustomMicrophoneTrack) async {
            do {
                checked = try await meeting.changeMic(customMicrophoneTrack: track)
            } catch {
                alert = "\(error.code.rawValue): \(error.message)"
            }
        }

        func onError(_ error: MeetingError) { errorsHeard.append(error.code.rawValue) }
    }

    @MainActor @Test func seed002DeviceSettings() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let alice = Self.meeting(server, "alice", microphone: .device(TestMicrophones.quiet), micEnabled: false)
        try await alice.join()
        defer { alice.leave() }
        let screen = DeviceSettingsViewController(meeting: alice)
        #expect(await SeedListenerTests.until { screen.rows.first == .speaker && screen.rows.contains { $0.deviceId == TestMicrophones.voice } })
        #expect(screen.checked?.deviceId == TestMicrophones.quiet)

        let voice = try #require(screen.rows.first { $0.deviceId == TestMicrophones.voice })
        await screen.didSelectRow(voice)
        #expect(screen.checked == voice && screen.alert == nil)
        // The broken microphone: an alert, the error event too, and the voice stays.
        let broken = try #require(screen.rows.first { $0.deviceId == TestMicrophones.broken })
        await screen.didSelectRow(broken)
        #expect(screen.alert?.hasPrefix("3002") == true, "\(screen.alert ?? "no alert")")
        #expect(await SeedListenerTests.until { screen.errorsHeard == [3002] }, "\(screen.errorsHeard)")
        #expect(alice.getSelectedAudioDevice() == voice)
        // The recording: on, even though alice joined muted.
        let samples = try Resampler(inputRate: 16000, outputRate: 48000).process(Synthesis.voice(seconds: 2, f0: 200, levelDBFS: -22, seed: 3))
        await screen.didTapUseRecording(CustomMicrophoneTrack(source: FileMicrophone(samples: samples, loop: true), label: "recording"))
        #expect(screen.checked?.label == "recording" && alice.localParticipant?.micMuted == false)
        #expect(await SeedListenerTests.until { server.mediaStatistics.accepted > 25 })
        // The output row: the check mark moves there where it can play; this machine has no sound card.
        screen.alert = nil
        await screen.didSelectRow(.speaker)
        #expect(screen.checked == .speaker || screen.alert?.hasPrefix("3002") == true, "\(String(describing: screen.checked)) \(screen.alert ?? "")")
    }

    // MARK: Seed 003 style: a controller and its delegate

    /// The app's own delegate protocol, as seed 003 shapes its UI code: the controller listens to the
    /// meeting and tells its (weakly held) delegate in the app's words.
    @MainActor protocol CallControllerDelegate: AnyObject {
        func callController(_ controller: CallController, didHighlight participant: String?)
        func callController(_ controller: CallController, didUpdateTiles tiles: [String])
        func callControllerDidEnd(_ controller: CallController, reason: MeetingLeaveReason)
    }

    final class CallController: MeetingEventListener {
        let meeting: Meeting
        weak var delegate: (any CallControllerDelegate)?
        private var tiles: [String] = []

        init(meeting: Meeting) {
            self.meeting = meeting
            meeting.addEventListener(self)
        }

        func onParticipantJoined(_ participant: Participant) {
            tiles.append(participant.id)
            delegate?.callController(self, didUpdateTiles: tiles)
        }

        func onParticipantLeft(_ participant: Participant) {
            tiles.removeAll { $0 == participant.id }
            delegate?.callController(self, didUpdateTiles: tiles)
        }

        func onSpeakerChanged(participantId: String?) { delegate?.callController(self, didHighlight: participantId) }
        func onMeetingLeft(reason: MeetingLeaveReason) { delegate?.callControllerDidEnd(self, reason: reason) }
    }

    final class CallScreen: CallControllerDelegate {
        var highlighted: String?
        var tiles: [String] = []
        var ended: MeetingLeaveReason?

        func callController(_ controller: CallController, didHighlight participant: String?) { highlighted = participant }
        func callController(_ controller: CallController, didUpdateTiles tiles: [String]) { self.tiles = tiles }
        func callControllerDidEnd(_ controller: CallController, reason: MeetingLeaveReason) { ended = reason }
    }

    @MainActor @Test func seed003ControllerAndDelegate() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let carol = Self.meeting(server, "carol", microphone: .none)
        try await carol.join()
        defer { carol.leave() }
        let controller = CallController(meeting: Self.meeting(server, "alice", microphone: .none))
        let screen = CallScreen()
        controller.delegate = screen
        try await controller.meeting.join()
        let voice = MicrophoneChoice.custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true))
        let bob = Self.meeting(server, "bob", microphone: voice)
        try await bob.join()
        #expect(await SeedListenerTests.until { screen.tiles == ["carol", "bob"] }, "\(screen.tiles)")
        #expect(await SeedListenerTests.until { screen.highlighted == "bob" })
        bob.leave()
        #expect(await SeedListenerTests.until { screen.tiles == ["carol"] }, "\(screen.tiles)")
        controller.meeting.leave()
        #expect(await SeedListenerTests.until { screen.ended == .left })
    }

    // MARK: Seed 004 style: roles

    /// A participant's screen, as seed 004's roles use it: it shows why the meeting ended for it.
    final class ParticipantScreen: MeetingEventListener {
        var left: MeetingLeaveReason?

        init(meeting: Meeting) {
            meeting.addEventListener(self)
        }

        func onMeetingLeft(reason: MeetingLeaveReason) { left = reason }
    }

    @MainActor @Test func seed004Roles() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let moderator = Self.meeting(server, "mod", role: .moderator, microphone: .none)
        try await moderator.join()
        defer { moderator.leave() }
        let track = try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac"), loop: true)
        let bob = Self.meeting(server, "bob", microphone: .custom(track))
        try await bob.join()
        defer { bob.leave() }
        let viewer = Self.meeting(server, "viewer", role: .subscriber, microphone: .none)
        try await viewer.join()
        let viewerScreen = ParticipantScreen(meeting: viewer)

        // The moderator mutes bob: bob cannot unmute himself until the moderator lifts it.
        moderator.muteParticipant("bob")
        #expect(await SeedListenerTests.until { bob.localParticipant?.micMuted == true })
        do {
            try await bob.setMicMuted(false)
            Issue.record("bob unmuted a moderator's mute")
        } catch {
            #expect(error.code == .server(.notAllowed) && error.message.contains("mod"), "\(error)")
        }
        moderator.unmuteParticipant("bob")
        #expect(await SeedListenerTests.until { bob.localParticipant?.micMuted == false })
        #expect(await SeedListenerTests.until { moderator.participants.first { $0.id == "bob" }?.micMuted == false })

        // A subscriber cannot publish; a moderator can remove it.
        do {
            try await viewer.setMicMuted(false)
            Issue.record("a subscriber unmuted")
        } catch {
            #expect(error.code == .server(.notAllowed))
        }
        moderator.removeParticipant("viewer")
        #expect(await SeedListenerTests.until { viewerScreen.left == .removed })
        #expect(await SeedListenerTests.until { !moderator.participants.contains { $0.id == "viewer" } })
        // The others heard why it left: the SDK's one leave reason.
        #expect(await SeedListenerTests.until { bob.participants.map(\.id).sorted() == ["bob", "mod"] })
    }
}

import CallClient
import CallProtocol
import Foundation
import Synchronization
import Testing
import TestSupport

/// The README's SDK example, compiled and run against a server in this process.
@Suite(.realTime) struct ReadmeExampleTests {
    /// As in the README, but recording what it would print.
    final class Printer: MeetingEventListener {
        let lines = Mutex<[String]>([])
        func onMeetingJoined() { lines.withLock { $0.append("joined") } }
        func onSpeakerChanged(participantId: String?) { lines.withLock { $0.append("speaker: \(participantId ?? "nobody")") } }
        func onError(_ error: MeetingError) { lines.withLock { $0.append("error \(error.code.rawValue): \(error.message)") } }
    }

    @Test func theMeetingBotExampleRuns() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let token = CallTestServer.token("bot")

        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: token)
        configuration.microphone = .custom(try CustomMicrophoneTrack.file(FixturePaths.file("meetings/m1-clean/bob.flac")))
        configuration.displayName = "Meeting bot"
        let meeting = Meeting(configuration: configuration)
        let printer = Printer()
        meeting.addEventListener(printer)
        try await meeting.join()
        #expect(meeting.localParticipant?.displayName == "Meeting bot")

        var events: [MeetingEvent] = []
        for await event in meeting.events {
            events.append(event)
            if case .speakerChanged(let id) = event, id == "bot" { break }
        }
        meeting.leave()
        #expect(await Waiting.until { printer.lines.withLock { $0 }.prefix(2) == ["joined", "speaker: bot"] })
        #expect(events.contains(.speakerChanged(participantId: "bot")))
    }
}

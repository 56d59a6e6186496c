import CallClient
import CallProtocol
import Foundation
import Synchronization
import Testing
import TestSupport

/// The README's SDK examples, compiled and run against a server in this process: the listener in a
/// few lines (here recording what it would print) and the complete app (ReadmeExample.swift, which
/// imports only CallClient).
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
        configuration.speaker = .none  // no sound card on the test machines
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

    /// Issue 32, friction 7: a `displayName` beside a token that signs another name failed the join (4006,
    /// `.other`). The signed name wins; the join succeeds.
    @Test func aTokensSignedNameWinsOverTheConfiguredOne() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        let now = Int(Date().timeIntervalSince1970)
        let token = AccessToken(
            room: "room", participantID: "bot", displayName: "Signed Bot", role: .publisher, issuedAt: now, expiresAt: now + 600)
            .signed(with: CallTestServer.secret)
        #expect(AccessToken.unverifiedSignedName(of: token) == "Signed Bot")
        #expect(AccessToken.unverifiedSignedName(of: CallTestServer.token("bot")) == nil)
        var configuration = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: token)
        configuration.speaker = .none  // no sound card on the test machines
        configuration.microphone = .none
        configuration.displayName = "Meeting bot"
        let meeting = Meeting(configuration: configuration)
        try await meeting.join()
        #expect(meeting.localParticipant?.displayName == "Signed Bot")
        meeting.leave()
    }

    /// The ```swift block of the README that follows the line containing `marker`.
    static func readmeBlock(after marker: String) throws -> String {
        let readme = try String(contentsOfFile: FixturePaths.repositoryRoot.appendingPathComponent("README.md").path, encoding: .utf8)
        let start = try #require(readme.range(of: marker), "README has no \(marker)")
        let fence = try #require(readme.range(of: "```swift\n", range: start.upperBound..<readme.endIndex))
        let end = try #require(readme.range(of: "\n```", range: fence.upperBound..<readme.endIndex))
        return String(readme[fence.upperBound..<end.lowerBound])
    }

    @Test func theREADMEsAppIsTheCompiledOne() throws {
        let readme = try Self.readmeBlock(after: "Sources/MeetingBot/MeetingBot.swift")
        let source = try String(contentsOfFile: FixturePaths.repositoryRoot.appendingPathComponent("Tests/CallTests/ReadmeExample.swift").path, encoding: .utf8)
        // The file without its leading comment, the README without `@main`.
        let compiled = source.split(separator: "\n", omittingEmptySubsequences: false).drop { $0.hasPrefix("//") }.joined(separator: "\n")
        #expect(readme.replacingOccurrences(of: "@main struct", with: "struct") + "\n" == compiled)
        #expect(readme.contains("@main struct MeetingBot"))
        #expect(readme.hasPrefix("import CallClient\n\n"), "the app imports only CallClient")
        #expect(!compiled.contains("import CallProtocol"))
    }

    @Test func theREADMEsPackageLineNamesThisPackagesProduct() throws {
        let manifest = try Self.readmeBlock(after: "Package.swift` of an app")
        #expect(manifest.contains(#".package(path: "../ActiveSpeaker")"#))
        #expect(manifest.contains(#".product(name: "CallClient", package: "ActiveSpeaker")"#))
        #expect(manifest.contains(#"name: "MeetingBot""#))
        let ours = try String(contentsOfFile: FixturePaths.repositoryRoot.appendingPathComponent("Package.swift").path, encoding: .utf8)
        #expect(ours.contains(#"name: "ActiveSpeaker""#) && ours.contains(#".library(name: "CallClient", targets: ["CallClient"])"#))
    }

    @Test func theREADMEsAppRunsUntilTheRoomNamesItTheSpeaker() async throws {
        let server = try CallTestServer.server()
        defer { server.stop() }
        var watching = MeetingConfiguration(server: "ws://127.0.0.1:\(server.port)", roomId: "room", token: CallTestServer.token("watcher"))
        watching.speaker = .none  // no sound card on the test machines
        watching.microphone = .none
        let watcher = Meeting(configuration: watching)
        let botSeen = Atomic<Bool>(false)
        try await watcher.join()
        defer { watcher.leave() }
        let arguments = [
            "ws://127.0.0.1:\(server.port)", "room", CallTestServer.token("bot"), FixturePaths.file("meetings/m1-clean/bob.flac"),
        ]
        let finished = Atomic<Bool>(false)
        let failure = Mutex<(any Error)?>(nil)
        Task {
            do {
                try await MeetingBot.run(arguments)
            } catch {
                failure.withLock { $0 = error }
            }
            finished.store(true, ordering: .relaxed)
        }
        #expect(await Waiting.until(timeout: 10) {
            if watcher.participants.contains(where: { $0.id == "bot" }) { botSeen.store(true, ordering: .relaxed) }
            return botSeen.load(ordering: .relaxed)
        }, "the bot joined")
        #expect(await Waiting.until(timeout: 30) { finished.load(ordering: .relaxed) }, "the bot never heard itself named")
        #expect(failure.withLock { $0 } == nil)
        #expect(await Waiting.until(timeout: 5) { !watcher.participants.contains { $0.id == "bot" } }, "the bot left")
    }
}

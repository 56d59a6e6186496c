// The README's app example, word for word but for its `@main` (a test target has its own):
// ReadmeExampleTests checks that the two agree and runs it. It imports only CallClient, as an app does.
import CallClient

/// Prints whose tile to highlight, and the rest of what happens in the meeting. A listener is
/// `@MainActor` (every `MeetingEventListener` is), so it keeps its state in plain `var`s.
final class MeetingScreen: MeetingEventListener {
    let meeting: Meeting
    private(set) var highlighted: String?
    private(set) var tiles: [String] = []

    init(meeting: Meeting) {
        self.meeting = meeting
        meeting.addEventListener(self)  // held weakly: the screen owns the meeting, not the other way round
    }

    func onMeetingJoined() { print("joined") }
    func onParticipantJoined(_ participant: Participant) { tiles.append(participant.displayName) }  // those already there too
    func onSpeakerChanged(participantId: String?) {
        highlighted = participantId
        print("speaker:", participantId ?? "nobody")
    }
    func onParticipantsChanged(_ update: ParticipantListUpdate) { print("participants:", update.participants.map(\.displayName)) }
    func onStreamEnabled(participantId: String, kind: StreamKind) { print(participantId, kind, "on") }
    func onMessage(from participantId: String, body: MessageBody) { print("message from", participantId) }
    func onMeetingLeft(reason: MeetingLeaveReason) { print("left:", reason) }
    func onError(_ error: MeetingError) { print("error \(error.code.rawValue): \(error.message)") }
}

struct MeetingBot {
    static func main() async {
        do {
            try await run(Array(CommandLine.arguments.dropFirst()))
        } catch {
            print("error \(error.code.rawValue): \(error.message)")
        }
    }

    /// `MeetingBot SERVER ROOM TOKEN FILE`: joins with FILE as its microphone and leaves when the room
    /// names it the speaker.
    @MainActor static func run(_ arguments: [String]) async throws(MeetingError) {
        guard arguments.count == 4 else { return print("usage: MeetingBot SERVER ROOM TOKEN FILE") }
        var configuration = MeetingConfiguration(server: arguments[0], roomId: arguments[1], token: arguments[2])
        configuration.microphone = .custom(try CustomMicrophoneTrack.file(arguments[3]))  // or .device("hw:1,0")
        configuration.displayName = "Meeting bot"  // unless the token signs a name, which wins
        configuration.speaker = .none  // a bot plays nothing (the default plays on the default output)
        let screen = MeetingScreen(meeting: Meeting(configuration: configuration))
        try await screen.meeting.join()  // throws MeetingError: see joinFailure (invalid token, expired, …)
        let me = screen.meeting.localParticipant?.id
        for await event in screen.meeting.events {  // the same events as an AsyncStream, on any task
            if case .speakerChanged(let id) = event, id != nil, id == me { break }
        }
        screen.meeting.leave()
        print("tiles:", screen.tiles, "highlighted:", screen.highlighted ?? "nobody")
    }
}

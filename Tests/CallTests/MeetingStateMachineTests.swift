import CallProtocol
import Testing

@testable import CallClient

/// The meeting's rules, as a value, without sockets, threads or clocks: each test feeds inputs and
/// reads the effects (rendered as short labels) and the state.
@Suite struct MeetingStateMachineTests {
    typealias Machine = MeetingStateMachine

    static func configuration(fallbacks: [String] = [], micEnabled: Bool = true, reconnect: Bool = true) -> MeetingConfiguration {
        var configuration = MeetingConfiguration(server: "ws://a:1", roomId: "r", token: "t")
        configuration.fallbackServers = fallbacks
        configuration.micEnabled = micEnabled
        configuration.reconnect = reconnect
        configuration.reconnectTimeout = 30
        return configuration
    }

    static func info(_ id: String, role: Role = .publisher, muted: Bool = false, ssrc: UInt32? = nil) -> ParticipantInfo {
        ParticipantInfo(id: id, displayName: id, role: role, micMuted: muted, audio: !muted, video: false, ssrc: ssrc)
    }

    static let media = MediaDescription(rtpPort: 5004, ssrc: 7)

    static func room(_ me: String, _ others: [ParticipantInfo], meMuted: Bool = false, speaker: String? = nil, media: MediaDescription? = media) -> JoinedRoom {
        JoinedRoom(roomID: "r", participantID: me, participants: others + [info(me, muted: meMuted, ssrc: 7)], speakerID: speaker, media: media)
    }

    /// One label per effect: what a reader of the rules needs, not every field.
    static func labels(_ effects: [Machine.Effect]) -> [String] {
        effects.map { effect in
            switch effect {
            case .connect(let url, let generation, _, let index): "connect \(url) g\(generation) i\(index.map(String.init) ?? "-")"
            case .adoptConnection(let generation): "adopt g\(generation)"
            case .discardConnection(let generation): "discard g\(generation)"
            case .closeConnection: "close"
            case .send(let message): "send \(message.type.rawValue)" + (message.micFlag.map { " mic=\($0)" } ?? "")
            case .emit(let event): "emit \(label(event))"
            case .finishJoin(let error): "finishJoin \(error.map { "\($0.code.rawValue)" } ?? "ok")"
            case .answerMute(let waiter, let result):
                switch result {
                case .success(let me): "answer \(waiter) muted=\(me.micMuted)"
                case .failure(let error): "answer \(waiter) error \(error.code.rawValue)"
                }
            case .finishEvents: "finishEvents"
            case .bindMedia(let media): "bindMedia \(media == nil ? "none" : "\(media!.ssrc)")"
            case .startPublishing(let muted, _): "startPublishing muted=\(muted)"
            case .stopPublishing: "stopPublishing"
            case .setPublisherMuted(let muted): "publisherMuted \(muted)"
            case .startPings(let generation): "pings g\(generation)"
            case .stopPings: "stopPings"
            case .startPlayback: "playback"
            case .shutDown: "shutDown"
            case .after(let seconds, let input): "after \(seconds) \(inputLabel(input))"
            }
        }
    }

    static func inputLabel(_ input: Machine.Input) -> String {
        switch input {
        case .joinTimedOut: "joinTimedOut"
        case .reconnectDeadline(let episode): "deadline e\(episode)"
        case .attemptTimedOut(let generation, _, _): "attemptTimedOut g\(generation)"
        case .attemptDue(let url, _, let generation): "attemptDue \(url) g\(generation)"
        case .muteUnconfirmed(let waiter): "Input.muteUnconfirmed(waiter: \(waiter))"
        default: "\(input)"
        }
    }

    static func label(_ event: MeetingEvent) -> String {
        switch event {
        case .meetingJoined(let everyone): "joined \(everyone.map(\.id))"
        case .meetingLeft(let reason, let error): "left \(reason.rawValue) \(error.map { "\($0.code.rawValue)" } ?? "-")"
        case .participantJoined(let p): "participantJoined \(p.id)"
        case .participantLeft(let p, _): "participantLeft \(p.id)"
        case .participantsChanged(let update): "changed +\(update.added.map(\.id)) -\(update.removed.map(\.id)) ~\(update.updated.map(\.id))"
        case .speakerChanged(let id): "speaker \(id ?? "nobody")"
        case .error(let error): "error \(error.code.rawValue)"
        case .reconnecting: "reconnecting"
        case .reconnected(let everyone): "reconnected \(everyone.map(\.id))"
        case .micMuted(let id, let muted, let by): "micMuted \(id) \(muted) \(by ?? "-")"
        case .streamEnabled(let id, let kind): "streamEnabled \(id) \(kind)"
        case .streamDisabled(let id, let kind): "streamDisabled \(id) \(kind)"
        default: "\(event)"
        }
    }

    /// A machine joined as `me` beside `others`, its effects so far dropped.
    static func joinedMachine(_ me: String = "me", _ others: [ParticipantInfo] = [info("alice")], meMuted: Bool = false, configuration: MeetingConfiguration = configuration()) -> Machine {
        var machine = Machine(configuration: configuration, participantListeners: nil)
        _ = machine.handle(.join(microphoneListed: true), now: 0)
        _ = machine.handle(.connected(generation: 0, url: "ws://a:1/v1/signal?room=r", serverIndex: 0, rtpPort: 4000), now: 0)
        _ = machine.handle(.received(.joined(room(me, others, meMuted: meMuted)), generation: 0), now: 0)
        return machine
    }

    @Test func joiningConnectsSendsJoinAndRaisesThoseAlreadyThereThenReturns() {
        var machine = Machine(configuration: Self.configuration(), participantListeners: nil)
        #expect(Self.labels(machine.handle(.join(microphoneListed: true), now: 0)) == ["after 10.0 joinTimedOut", "connect ws://a:1/v1/signal?room=r g0 i0"])
        #expect(machine.handle(.join(microphoneListed: true), now: 0).isEmpty, "a second join does nothing")
        #expect(Self.labels(machine.handle(.connected(generation: 0, url: "ws://a:1/v1/signal?room=r", serverIndex: 0, rtpPort: 4000), now: 0))
            == ["adopt g0", "send join mic=true"])
        let effects = machine.handle(.received(.joined(Self.room("me", [Self.info("alice"), Self.info("carol")], speaker: "alice")), generation: 0), now: 1)
        #expect(Self.labels(effects) == [
            "bindMedia 7", "playback", "pings g0", "startPublishing muted=false",
            "emit joined [\"alice\", \"carol\", \"me\"]", "emit participantJoined alice", "emit participantJoined carol",
            "emit speaker alice", "finishJoin ok",
        ])
        #expect(machine.phase == .joined && machine.localID == "me" && machine.speaker == "alice" && !machine.micMuted)
        #expect(machine.localParticipant?.isLocal == true)
    }

    @Test func joiningTriesTheFallbacksThenFailsWithEveryReason() {
        var machine = Machine(configuration: Self.configuration(fallbacks: ["ws://b:2"]), participantListeners: nil)
        _ = machine.handle(.join(microphoneListed: true), now: 0)
        #expect(Self.labels(machine.handle(.connectFailed(generation: 0, serverIndex: 0, MeetingError(code: .network, "a down")), now: 0))
            == ["connect ws://b:2/v1/signal?room=r g0 i1"])
        let effects = machine.handle(.connectFailed(generation: 0, serverIndex: 1, MeetingError(code: .network, "b down")), now: 0)
        #expect(Self.labels(effects) == ["shutDown", "finishEvents", "finishJoin 3001"])
        if case .finishJoin(let error?) = effects.last { #expect(error.message == "a down; b down") } else { Issue.record("no finishJoin") }
        #expect(machine.phase == .left)
        // A connection of the given-up join that opens late is closed.
        #expect(Self.labels(machine.handle(.connected(generation: 0, url: "ws://b:2", serverIndex: 1, rtpPort: nil), now: 1)) == ["discard g0"])
    }

    @Test func aMalformedServerOrATokenErrorFailsTheJoinAtOnce() {
        var machine = Machine(configuration: Self.configuration(fallbacks: ["ws://b:2"]), participantListeners: nil)
        _ = machine.handle(.join(microphoneListed: true), now: 0)
        #expect(Self.labels(machine.handle(.connectFailed(generation: 0, serverIndex: 0, MeetingError(code: .invalidArgument, "bad url")), now: 0)).last == "finishJoin 3003")
        var refused = Machine(configuration: Self.configuration(), participantListeners: nil)
        _ = refused.handle(.join(microphoneListed: true), now: 0)
        _ = refused.handle(.connected(generation: 0, url: "ws://a:1", serverIndex: 0, rtpPort: nil), now: 0)
        #expect(Self.labels(refused.handle(.received(.error(CallError(.invalidToken, "bad")), generation: 0), now: 0)) == ["shutDown", "finishEvents", "finishJoin 4001"])
        var silent = Machine(configuration: Self.configuration(), participantListeners: nil)
        _ = silent.handle(.join(microphoneListed: true), now: 0)
        #expect(Self.labels(silent.handle(.joinTimedOut, now: 10)).last == "finishJoin 3001")
    }

    @Test func joiningWithTheDefaultMicrophoneOnAndNoneThereFailsBeforeConnecting() {
        var machine = Machine(configuration: Self.configuration(), participantListeners: nil)
        #expect(Self.labels(machine.handle(.join(microphoneListed: false), now: 0)) == ["shutDown", "finishEvents", "finishJoin 3059"])
        var muted = Machine(configuration: Self.configuration(micEnabled: false), participantListeners: nil)
        #expect(Self.labels(muted.handle(.join(microphoneListed: false), now: 0)).last?.hasPrefix("connect") == true, "joining muted needs none yet")
    }

    @Test func joiningMutedOrWithoutAMicrophone() {
        var muted = Machine(configuration: Self.configuration(micEnabled: false), participantListeners: nil)
        _ = muted.handle(.join(microphoneListed: true), now: 0)
        #expect(Self.labels(muted.handle(.connected(generation: 0, url: "ws://a:1", serverIndex: 0, rtpPort: 1), now: 0)).last == "send join mic=false")
        #expect(Self.labels(muted.handle(.received(.joined(Self.room("me", [], meMuted: true)), generation: 0), now: 0)).contains("startPublishing muted=true"))
        var configuration = Self.configuration()
        configuration.microphone = .none
        var none = Machine(configuration: configuration, participantListeners: nil)
        _ = none.handle(.join(microphoneListed: true), now: 0)
        #expect(Self.labels(none.handle(.connected(generation: 0, url: "ws://a:1", serverIndex: 0, rtpPort: 1), now: 0)).last == "send join mic=false")
        #expect(!Self.labels(none.handle(.received(.joined(Self.room("me", [], meMuted: true)), generation: 0), now: 0)).contains { $0.hasPrefix("startPublishing") })
    }

    @Test func remoteParticipantsJoinChangeAndLeave() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.received(.participantJoined(Self.info("bob", ssrc: 9)), generation: 0), now: 1))
            == ["emit participantJoined bob", "emit changed +[\"bob\"] -[] ~[]"])
        #expect(machine.owners[9] == "bob")
        #expect(Self.labels(machine.handle(.received(.micMuted("bob", muted: true, by: nil), generation: 0), now: 1))
            == ["emit micMuted bob true -", "emit changed +[] -[] ~[\"bob\"]"])
        #expect(Self.labels(machine.handle(.received(.streamDisabled("bob", .audio), generation: 0), now: 1))
            == ["emit streamDisabled bob audio", "emit changed +[] -[] ~[\"bob\"]"])
        #expect(machine.participants["bob"]?.audioEnabled == false)
        #expect(Self.labels(machine.handle(.received(.participantLeft("bob", reason: .left), generation: 0), now: 1))
            == ["emit participantLeft bob", "emit changed +[] -[\"bob\"] ~[]"])
        #expect(machine.everyone.map(\.id) == ["alice", "me"])
        #expect(Self.labels(machine.handle(.received(.speakerChanged(nil, time: 2), generation: 0), now: 2)) == ["emit speaker nobody"])
        // The local participant's own stream echo is not raised again.
        #expect(machine.handle(.received(.streamEnabled("me", .video), generation: 0), now: 2).isEmpty)
        // A message of an earlier connection changes nothing.
        #expect(machine.handle(.received(.participantJoined(Self.info("eve")), generation: 5), now: 2).isEmpty)
        #expect(machine.participants["eve"] == nil)
    }

    @Test func muteAndUnmuteRules() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.mute, now: 1)) == ["publisherMuted true", "send mute-mic"])
        #expect(machine.micMuted && machine.localParticipant?.micMuted == true)
        #expect(machine.handle(.mute, now: 1).isEmpty, "muting a muted microphone does nothing")
        #expect(Self.labels(machine.handle(.unmute, now: 1)) == ["publisherMuted false", "send unmute-mic"])
        // A moderator's mute holds until a moderator lifts it.
        _ = machine.handle(.received(.micMuted("me", muted: true, by: "mod"), generation: 0), now: 2)
        #expect(machine.micMuted && machine.micMutedBy == "mod")
        #expect(Self.labels(machine.handle(.unmute, now: 2)) == ["emit error 4006"])
        _ = machine.handle(.received(.micMuted("me", muted: false, by: "mod"), generation: 0), now: 3)
        #expect(!machine.micMuted && machine.micMutedBy == nil)
        // A subscriber cannot publish.
        var configuration = Self.configuration(micEnabled: false)
        configuration.microphone = .none
        var listener = Machine(configuration: configuration, participantListeners: nil)
        _ = listener.handle(.join(microphoneListed: true), now: 0)
        _ = listener.handle(.connected(generation: 0, url: "ws://a:1", serverIndex: 0, rtpPort: nil), now: 0)
        let room = JoinedRoom(roomID: "r", participantID: "sub", participants: [Self.info("sub", role: .subscriber, muted: true)], speakerID: nil, media: nil)
        _ = listener.handle(.received(.joined(room), generation: 0), now: 0)
        #expect(Self.labels(listener.handle(.unmute, now: 1)) == ["emit error 4006"])
        #expect(listener.micMuted)
    }

    @Test func unmutingStartsTheMicrophoneAndTellsTheServerOnlyWhenItRuns() {
        var machine = Self.joinedMachine(meMuted: true, configuration: Self.configuration(micEnabled: false))
        // Joined muted: the microphone was started muted; say it failed to open then.
        _ = machine.handle(.published(.joinedMuted, failure: MeetingError(code: .audioDeviceFailed, "busy")), now: 0)
        #expect(!machine.publishing)
        #expect(Self.labels(machine.handle(.unmute, now: 1)) == ["startPublishing muted=false"])
        #expect(!machine.micMuted, "unmuted when the call returns")
        #expect(Self.labels(machine.handle(.published(.unmute, failure: MeetingError(code: .audioDeviceFailed, "busy")), now: 1)) == ["emit error 3002"])
        #expect(machine.micMuted && !machine.publishing)
        _ = machine.handle(.unmute, now: 2)
        #expect(Self.labels(machine.handle(.published(.unmute, failure: nil), now: 2)) == ["send unmute-mic"])
        // Joined live but the microphone failed: the server, told "on", is told "muted".
        var live = Self.joinedMachine()
        #expect(Self.labels(live.handle(.published(.joinedLive, failure: MeetingError(code: .noMicrophoneFound, "none")), now: 0))
            == ["emit error 3059", "publisherMuted true", "send mute-mic"])
        #expect(live.micMuted)
    }

    @Test func theAsyncMuteIsAnsweredByTheServersWord() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.setMicMuted(true, waiter: 1), now: 1))
            == ["publisherMuted true", "send mute-mic", "after 10.0 Input.muteUnconfirmed(waiter: 1)"])
        #expect(machine.handle(.received(.micMuted("alice", muted: true, by: nil), generation: 0), now: 1).allSatisfy { !Self.isAnswer($0) },
                "another's mute answers nothing")
        let echo = machine.handle(.received(.micMuted("me", muted: true, by: nil), generation: 0), now: 1.1)
        #expect(Self.labels(echo).contains("answer 1 muted=true"))
        // Already so on the server: at once.
        #expect(Self.labels(machine.handle(.setMicMuted(true, waiter: 2), now: 2)) == ["answer 2 muted=true"])
        // Unmuting, unanswered in time.
        _ = machine.handle(.setMicMuted(false, waiter: 3), now: 3)
        #expect(Self.labels(machine.handle(.muteUnconfirmed(waiter: 3), now: 13)) == ["answer 3 error 3001"])
        #expect(machine.handle(.muteUnconfirmed(waiter: 3), now: 13).isEmpty)
        // A moderator's mute refuses a waiting unmute, and later unmutes.
        _ = machine.handle(.received(.micMuted("me", muted: false, by: nil), generation: 0), now: 14)
        _ = machine.handle(.setMicMuted(true, waiter: 4), now: 15)
        _ = machine.handle(.received(.micMuted("me", muted: true, by: nil), generation: 0), now: 15)
        _ = machine.handle(.setMicMuted(false, waiter: 5), now: 16)
        #expect(Self.labels(machine.handle(.received(.micMuted("me", muted: true, by: "mod"), generation: 0), now: 16)).contains("answer 5 error 4006"))
        #expect(Self.labels(machine.handle(.setMicMuted(false, waiter: 6), now: 17)) == ["emit error 4006", "answer 6 error 4006"])
        // Leaving answers whoever still waits.
        _ = machine.handle(.received(.micMuted("me", muted: false, by: "mod"), generation: 0), now: 18)
        _ = machine.handle(.setMicMuted(true, waiter: 7), now: 19)
        #expect(Self.labels(machine.handle(.leave, now: 19)).last == "answer 7 error 3001")
        var idle = Machine(configuration: Self.configuration(), participantListeners: nil)
        #expect(Self.labels(idle.handle(.setMicMuted(true, waiter: 8), now: 0)) == ["answer 8 error 3003"])
    }

    @Test func anAsyncUnmuteWhoseMicrophoneFailsThrows() {
        var machine = Self.joinedMachine(meMuted: true, configuration: Self.configuration(micEnabled: false))
        _ = machine.handle(.published(.joinedMuted, failure: MeetingError(code: .audioDeviceFailed, "busy")), now: 0)
        #expect(Self.labels(machine.handle(.setMicMuted(false, waiter: 1), now: 1)).first == "startPublishing muted=false")
        #expect(Self.labels(machine.handle(.published(.unmute, failure: MeetingError(code: .audioDeviceFailed, "busy")), now: 1))
            == ["emit error 3002", "answer 1 error 3002"])
    }

    static func isAnswer(_ effect: Machine.Effect) -> Bool {
        if case .answerMute = effect { return true }
        return false
    }

    @Test func webcamAndMessagesOnlyWhileJoined() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.setWebcam(true), now: 1)) == ["send enable-stream", "emit streamEnabled me video", "emit changed +[] -[] ~[\"me\"]"])
        #expect(machine.handle(.setWebcam(true), now: 1).isEmpty)
        #expect(Self.labels(machine.handle(.sendWhileJoined(.muteParticipant("alice")), now: 1)) == ["send mute-participant"])
        var idle = Machine(configuration: Self.configuration(), participantListeners: nil)
        #expect(idle.handle(.sendWhileJoined(.ping), now: 0).isEmpty)
        #expect(idle.handle(.setWebcam(true), now: 0).isEmpty)
        #expect(idle.handle(.leave, now: 0).isEmpty, "leaving before joining does nothing")
    }

    @Test func aLostConnectionReconnectsAndTheRejoinRaisesTheDifferences() {
        var machine = Self.joinedMachine("me", [Self.info("alice"), Self.info("bob")])
        _ = machine.handle(.mute, now: 1)
        #expect(Self.labels(machine.handle(.closed(generation: 0, reason: "gone"), now: 10)) == [
            "stopPings", "stopPublishing", "bindMedia none", "close", "emit reconnecting", "after 30.0 deadline e1",
            "after 0.25 attemptDue ws://a:1/v1/signal?room=r g1",
        ])
        #expect(machine.phase == .reconnecting && machine.participants.count == 3, "the participants stay")
        #expect(machine.handle(.mute, now: 10).isEmpty)
        #expect(Self.labels(machine.handle(.attemptDue(url: "ws://a:1/v1/signal?room=r", serverIndex: 0, generation: 1), now: 10.25))
            == ["connect ws://a:1/v1/signal?room=r g1 i0"])
        // The attempt fails: the next one after a longer backoff.
        #expect(Self.labels(machine.handle(.connectFailed(generation: 1, serverIndex: 0, MeetingError(code: .network, "refused")), now: 10.3))
            == ["after 0.5 attemptDue ws://a:1/v1/signal?room=r g2"])
        _ = machine.handle(.attemptDue(url: "ws://a:1/v1/signal?room=r", serverIndex: 0, generation: 2), now: 10.8)
        #expect(Self.labels(machine.handle(.connected(generation: 2, url: "ws://a:1/v1/signal?room=r", serverIndex: 0, rtpPort: 4000), now: 10.9))
            == ["adopt g2", "send join mic=false", "after 5.0 attemptTimedOut g2"])
        // Bob left meanwhile, carol came; alice unchanged; the rejoin is muted as the user left it.
        let room = Self.room("me2", [Self.info("alice"), Self.info("carol")], meMuted: true, speaker: "carol")
        #expect(Self.labels(machine.handle(.received(.joined(room), generation: 2), now: 11)) == [
            "bindMedia 7", "pings g2", "startPublishing muted=true",
            "emit participantLeft bob", "emit changed +[] -[\"bob\"] ~[]",
            "emit participantJoined carol", "emit changed +[\"carol\"] -[] ~[]",
            "emit speaker carol", "emit reconnected [\"alice\", \"carol\", \"me2\"]",
        ])
        #expect(machine.phase == .joined && machine.localID == "me2")
        // The old episode's deadline and the attempt's timeout come later and change nothing.
        #expect(machine.handle(.reconnectDeadline(episode: 1), now: 40).isEmpty)
        #expect(machine.handle(.attemptTimedOut(generation: 2, server: "ws://a:1", seconds: 5), now: 16).isEmpty)
    }

    @Test func reconnectingGivesUpAtTheDeadlineOrOnARefusal() {
        var machine = Self.joinedMachine()
        _ = machine.handle(.closed(generation: 0, reason: ""), now: 10)
        _ = machine.handle(.connectFailed(generation: 1, serverIndex: 0, MeetingError(code: .network, "refused")), now: 11)
        #expect(Self.labels(machine.handle(.reconnectDeadline(episode: 1), now: 40))
            == ["shutDown", "emit error 3001", "emit left connection-lost 3001", "finishEvents"])
        #expect(machine.phase == .left)
        // 5003 is retried; a token error ends it with the server's error.
        var refused = Self.joinedMachine()
        _ = refused.handle(.closed(generation: 0, reason: ""), now: 10)
        _ = refused.handle(.connected(generation: 1, url: "ws://a:1", serverIndex: 0, rtpPort: nil), now: 10.3)
        #expect(Self.labels(refused.handle(.received(.error(CallError(.unavailable, "busy")), generation: 1), now: 10.4))
            == ["close", "after 0.5 attemptDue ws://a:1/v1/signal?room=r g2"])
        _ = refused.handle(.connected(generation: 2, url: "ws://a:1", serverIndex: 0, rtpPort: nil), now: 11)
        #expect(Self.labels(refused.handle(.received(.error(CallError(.tokenExpired, "old")), generation: 2), now: 11.1))
            == ["shutDown", "emit error 4002", "emit left connection-lost 4002", "finishEvents"])
    }

    @Test func anUnansweredReconnectAttemptIsAbandonedForTheNext() {
        var machine = Self.joinedMachine()
        _ = machine.handle(.closed(generation: 0, reason: ""), now: 10)
        _ = machine.handle(.attemptDue(url: "ws://a:1/v1/signal?room=r", serverIndex: 0, generation: 1), now: 10.25)
        _ = machine.handle(.connected(generation: 1, url: "ws://a:1/v1/signal?room=r", serverIndex: 0, rtpPort: 1), now: 10.3)
        #expect(Self.labels(machine.handle(.attemptTimedOut(generation: 1, server: "ws://a:1", seconds: 5), now: 15.3))
            == ["close", "after 0.5 attemptDue ws://a:1/v1/signal?room=r g2"])
        // The abandoned connection's late answer changes nothing.
        #expect(machine.handle(.received(.joined(Self.room("me", [])), generation: 1), now: 15.4).isEmpty)
        #expect(machine.phase == .reconnecting)
    }

    @Test func anUndecodableMessageIsReportedAndCountsAsHearingTheServer() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.undecodable(MeetingError(code: .invalidArgument, "bad json"), generation: 0), now: 10)) == ["emit error 3003"])
        #expect(Self.labels(machine.handle(.pingTick(generation: 0), now: 24)) == ["send ping"], "heard at 10 s: 14 s of silence")
        #expect(machine.handle(.undecodable(MeetingError(code: .invalidArgument, "late"), generation: 7), now: 24).isEmpty)
    }

    @Test func withoutReconnectingALostConnectionEndsTheMeeting() {
        var machine = Self.joinedMachine(configuration: Self.configuration(reconnect: false))
        #expect(Self.labels(machine.handle(.closed(generation: 0, reason: "reset"), now: 5))
            == ["shutDown", "emit error 3001", "emit left connection-lost 3001", "finishEvents"])
        #expect(machine.handle(.closed(generation: 0, reason: "again"), now: 5).isEmpty)
    }

    @Test func aRemovalOrAClosedRoomEndsTheMeetingWhenTheServerCloses() {
        var machine = Self.joinedMachine()
        #expect(machine.handle(.received(.error(CallError(.removed, "by mod")), generation: 0), now: 1).isEmpty)
        #expect(Self.labels(machine.handle(.closed(generation: 0, reason: ""), now: 1)) == ["shutDown", "emit left removed 4011", "finishEvents"])
        var closed = Self.joinedMachine()
        _ = closed.handle(.received(.error(CallError(.roomClosed, "bye")), generation: 0), now: 1)
        #expect(Self.labels(closed.handle(.closed(generation: 0, reason: ""), now: 1)).dropFirst().first == "emit left room-closed 4013")
        // Any other server error is only reported.
        var other = Self.joinedMachine()
        #expect(Self.labels(other.handle(.received(.error(CallError(.rateLimited, "slow")), generation: 0), now: 1)) == ["emit error 4015"])
    }

    @Test func silenceBeyondThePingTimeoutCountsAsALostConnection() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.pingTick(generation: 0), now: 5)) == ["send ping"])
        _ = machine.handle(.received(.pong, generation: 0), now: 6)
        #expect(Self.labels(machine.handle(.pingTick(generation: 0), now: 20)) == ["send ping"], "14 s of silence is within 15 s")
        #expect(Self.labels(machine.handle(.pingTick(generation: 0), now: 22)).contains("emit reconnecting"))
        #expect(machine.handle(.pingTick(generation: 0), now: 23).isEmpty, "the old generation's timer does nothing")
    }

    @Test func redirectsAreFollowedAtMostFiveTimesInARow() {
        var machine = Machine(configuration: Self.configuration(), participantListeners: nil)
        _ = machine.handle(.join(microphoneListed: true), now: 0)
        var generation = 0
        for hop in 1...5 {
            _ = machine.handle(.connected(generation: generation, url: "ws://n\(hop - 1):1", serverIndex: nil, rtpPort: nil), now: 0)
            let effects = Self.labels(machine.handle(.received(.redirect(Redirect(url: "ws://n\(hop):1", nodeId: "n\(hop)", roomId: "r")), generation: generation), now: 0))
            generation += 1
            #expect(effects == ["close", "connect ws://n\(hop):1 g\(generation) i-"])
        }
        _ = machine.handle(.connected(generation: generation, url: "ws://n5:1", serverIndex: nil, rtpPort: nil), now: 0)
        let sixth = Self.labels(machine.handle(.received(.redirect(Redirect(url: "ws://n6:1", nodeId: "n6", roomId: "r")), generation: generation), now: 0))
        #expect(sixth == ["close", "shutDown", "finishEvents", "finishJoin 3001"])
        // Joined: a redirect is a reconnect that tries its URL first.
        var joined = Self.joinedMachine()
        let effects = Self.labels(joined.handle(.received(.redirect(Redirect(url: "ws://b:2/v1/signal?room=r", nodeId: "b", roomId: "r")), generation: 0), now: 3))
        #expect(effects.contains("emit reconnecting") && effects.last == "connect ws://b:2/v1/signal?room=r g1 i-")
    }

    @Test func changingTheMicrophoneIsRememberedForTheRejoin() {
        var machine = Self.joinedMachine()
        _ = machine.handle(.microphoneChosen(.device("hw:1,0")), now: 1)
        guard case .device("hw:1,0") = machine.microphone else { Issue.record("microphone not chosen"); return }
        _ = machine.handle(.microphoneChosen(.none), now: 1)
        _ = machine.handle(.closed(generation: 0, reason: ""), now: 2)
        _ = machine.handle(.attemptDue(url: "ws://a:1", serverIndex: 0, generation: 1), now: 2.25)
        #expect(Self.labels(machine.handle(.connected(generation: 1, url: "ws://a:1", serverIndex: 0, rtpPort: 1), now: 2.3))[1] == "send join mic=false",
                "no microphone: the rejoin says off")
    }

    @Test func leavingSendsLeaveStopsEverythingAndEndsTheEvents() {
        var machine = Self.joinedMachine()
        #expect(Self.labels(machine.handle(.leave, now: 1)) == ["send leave", "shutDown", "emit left left -", "finishEvents"])
        #expect(machine.handle(.leave, now: 1).isEmpty, "idempotent")
        #expect(machine.handle(.received(.speakerChanged("alice", time: 1), generation: 0), now: 1).isEmpty)
        // While joining, once connected: join() is answered too.
        var joining = Machine(configuration: Self.configuration(), participantListeners: nil)
        _ = joining.handle(.join(microphoneListed: true), now: 0)
        #expect(joining.handle(.leave, now: 0).isEmpty, "not connected yet: nothing to leave")
        _ = joining.handle(.connected(generation: 0, url: "ws://a:1", serverIndex: 0, rtpPort: nil), now: 0)
        #expect(Self.labels(joining.handle(.leave, now: 0)).last == "finishJoin 3003")
    }
}

extension ClientMessage {
    /// The `mic` flag of a `join`, for the labels.
    fileprivate var micFlag: Bool? {
        if case .join(_, let mic, _, _, _) = self { return mic }
        return nil
    }
}

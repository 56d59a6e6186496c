import Foundation
import SpeakerEval
import SpeakerFiles
import Testing
import TestSupport

/// `activespeaker detect` on synthetic rooms whose talk intervals are known.
@Suite struct DetectTests {
    /// Runs `detect` on the Alice-and-Bob room (see `TestAudio.aliceAndBob`) plus `options`.
    private func runAliceAndBob(
        _ options: [String] = []
    ) throws -> (result: CLI.Result, directory: TemporaryDirectory, talks: [String: [ClosedRange<Double>]]) {
        let directory = try TemporaryDirectory()
        let (files, talks) = try TestAudio.writeRoom(TestAudio.aliceAndBob, in: directory)
        return (try CLI.run(["detect"] + options + files, in: directory.url), directory, talks)
    }

    /// Checks detected speech against where speech is audible: each talk is at least 70 % covered by its
    /// talker's segments, and no segment strays more than 0.3 s from a talk of its stream.
    private func checkSpeech(
        _ output: DetectOutput, talks: [String: [ClosedRange<Double>]], sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let segments = output.speechSegments
        for (stream, intervals) in talks {
            let own = segments.filter { $0.speaker == stream }
            for talk in intervals {
                let covered = own.reduce(0.0) { sum, segment in
                    sum + max(0, min(segment.end, talk.upperBound) - max(segment.start, talk.lowerBound))
                }
                #expect(
                    covered >= 0.7 * (talk.upperBound - talk.lowerBound), "\(stream) \(talk): \(own)",
                    sourceLocation: sourceLocation)
            }
            for segment in own {
                #expect(
                    intervals.contains { segment.start >= $0.lowerBound - 0.3 && segment.end <= $0.upperBound + 0.3 },
                    "\(stream): \(segment) is not within a talk of \(intervals)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func eventsFollowTheSchemaAndFindTheTalks() throws {
        let (result, directory, talks) = try runAliceAndBob()
        defer { directory.remove() }
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        #expect(result.stdout.hasSuffix("\n"))
        let output = try DetectOutput(lines: result.lines)
        output.checkInvariants(ids: ["alice", "bob"])
        #expect(output.summary == nil && output.levelEvents.isEmpty, "only events unless asked")
        checkSpeech(output, talks: talks)
        // In the middle of each talk, the talker holds the floor.
        for (stream, intervals) in talks {
            for talk in intervals {
                let middle = (talk.lowerBound + talk.upperBound) / 2
                #expect(output.dominant(at: middle) == stream, "\(stream) at \(middle)")
            }
        }
    }

    /// `detect` decodes its files as they play; its decisions are those of the whole files decoded first (the
    /// path it took before), replayed in-process: same events in the same order, same times, same summary.
    @Test func decodingAsItPlaysKeepsTheDecisionsOfWholeFiles() throws {
        let folder = FixturePaths.file("meetings/m1-clean")
        let paths = ["alice", "bob", "carol"].map { "\(folder)/\($0).flac" }
        let result = try CLI.run(["detect", "--summary", "--levels", "500"] + paths)
        #expect(result.status == 0, "\(result.stderr)")
        let output = try DetectOutput(lines: result.lines)

        let streams = try loadStreams(paths: paths).map { ReplayStream(id: $0.id, samples: $0.samples) }
        let replay = try RoomReplay(streams: streams, roomName: "m1-clean")
        var expected: [DetectOutput.Event] = []
        func drain() {
            replay.consumeEvents { event in
                switch event {
                case .speech(let stream, let active, let time, let since):
                    expected.append(.speech(t: time, stream: streams[stream].id, active: active, since: since))
                case .dominant(let stream, let time):
                    expected.append(.dominant(t: time, stream: stream.map { streams[$0].id }))
                }
            }
        }
        while !replay.isAtEnd {
            replay.tick()
            drain()
            if replay.ticks % 50 == 0 {
                let levels = replay.presentStreams.map { (streams[$0].id, Double(replay.level(of: $0)!)) }
                expected.append(.levels(t: replay.time, levels: Dictionary(uniqueKeysWithValues: levels)))
            }
        }
        replay.finish()
        drain()

        try #require(output.events.count == expected.count)
        for (got, want) in zip(output.events, expected) {
            switch (got, want) {
            case (.speech(let t, let stream, let active, let since), .speech(let t2, let stream2, let active2, let since2)):
                #expect(stream == stream2 && active == active2 && abs(t - t2) < 0.0006 && abs(since - since2) < 0.0006)
            case (.dominant(let t, let stream), .dominant(let t2, let stream2)):
                #expect(stream == stream2 && abs(t - t2) < 0.0006)
            case (.levels(let t, let levels), .levels(let t2, let levels2)):
                #expect(abs(t - t2) < 0.0006 && levels.keys == levels2.keys)
                for (id, level) in levels { #expect(abs(level - levels2[id]!) <= 0.05 + 1e-9, "\(id) at \(t)") }
            default:
                Issue.record("\(got) where \(want) was expected")
            }
        }
        let summary = try #require(output.summary)
        #expect(abs(summary.duration - replay.duration) < 0.0006)
        #expect(summary.streams.map(\.id) == streams.map(\.id))
        for (index, stream) in summary.streams.enumerated() {
            #expect(abs(stream.statistics.speech - replay.statistics(of: index).speechTime) < 0.0006)
        }
    }

    @Test func outputIsReproducible() throws {
        let (first, directory, _) = try runAliceAndBob(["--levels", "50", "--summary"])
        defer { directory.remove() }
        let second = try CLI.run(["detect", "--levels", "50", "--summary", directory.path("alice.wav"), directory.path("bob.wav")])
        #expect(first.status == 0)
        #expect(!first.stdout.isEmpty)
        #expect(first.stdout == second.stdout)
    }

    /// 130 streams (3 s each, the fixture meeting's three talkers over and over): `--jobs 2` lets two
    /// threads share the room (one per 64 streams) and prints exactly what one thread prints.
    @Test func jobsShareALargeRoomAndChangeNoDecision() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var files: [String] = []
        for (index, name) in ["alice", "bob", "carol"].enumerated() {
            let samples = try loadStreams(paths: [FixturePaths.file("meetings/m1-clean/\(name).flac")])[0].samples
            let path = directory.path("\(name).wav")
            try TestAudio.writeWAV([Array(samples[(index * 16000)..<(index * 16000 + 48000)])], to: path)
            files.append(path)
        }
        let arguments = (0..<130).flatMap { ["--id", "s\($0)"] } + (0..<130).map { files[$0 % 3] }
        let one = try CLI.run(["detect", "--jobs", "1", "--summary", "--levels", "100"] + arguments)
        let two = try CLI.run(["detect", "--jobs", "2", "--summary", "--levels", "100"] + arguments)
        #expect(one.status == 0 && two.status == 0, "\(one.stderr) \(two.stderr)")
        #expect(one.stdout.split(separator: "\n").count > 100)
        #expect(one.stdout == two.stdout)
    }

    @Test func rttmHoldsTheSpeechSegmentsOfTheEvents() throws {
        let (result, directory, _) = try runAliceAndBob(["--rttm", "out.rttm", "--name", "m1"])
        defer { directory.remove() }
        #expect(result.status == 0)
        let output = try DetectOutput(lines: result.lines)
        let text = try String(contentsOfFile: directory.path("out.rttm"), encoding: .utf8)
        let segments = try RTTM.parse(text)
        let expected = output.speechSegments.sorted { ($0.start, $0.speaker) < ($1.start, $1.speaker) }
        #expect(segments.count == expected.count)
        #expect(segments.count >= 3, "three talks")
        for (written, event) in zip(segments, expected) {
            #expect(written.speaker == event.speaker)
            #expect(abs(written.start - event.start) < 0.0005 && abs(written.end - event.end) < 0.0015, "\(written) vs \(event)")
        }
        let lines = text.split(separator: "\n")
        #expect(lines.allSatisfy { $0.hasPrefix("SPEAKER m1 1 ") }, "recording id from --name")
        #expect(try directory.contents() == ["alice.wav", "bob.wav", "out.rttm"], "no temporary file left")
    }

    /// The recording id is the meeting folder's name, as in the meeting's reference RTTM (so
    /// pyannote.metrics pairs hypothesis and reference); a space in it becomes `_`.
    @Test func rttmRecordingIdDefaultsToTheFolderName() throws {
        let (result, directory, _) = try runAliceAndBob(["--quiet", "--rttm", "speech.rttm"])
        defer { directory.remove() }
        #expect(result.status == 0)
        #expect(result.stdout.isEmpty, "--quiet writes no events")
        let text = try String(contentsOfFile: directory.path("speech.rttm"), encoding: .utf8)
        #expect(!text.isEmpty)
        let folder = directory.url.lastPathComponent
        #expect(text.split(separator: "\n").allSatisfy { $0.hasPrefix("SPEAKER \(folder) 1 ") }, "\(text)")

        let meeting = directory.url.appendingPathComponent("team meeting")
        try FileManager.default.createDirectory(at: meeting, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: directory.path("alice.wav"), toPath: meeting.appendingPathComponent("alice.wav").path)
        let spaced = try CLI.run(["detect", "--quiet", "--rttm", "spaced.rttm", "team meeting/alice.wav"], in: directory.url)
        #expect(spaced.status == 0, "\(spaced.stderr)")
        #expect(try String(contentsOfFile: directory.path("spaced.rttm"), encoding: .utf8).hasPrefix("SPEAKER team_meeting 1 "))
        // Files of different folders: no meeting to name.
        let mixed = try CLI.run(
            ["detect", "--quiet", "--rttm", "mixed.rttm", "team meeting/alice.wav", "bob.wav"], in: directory.url)
        #expect(mixed.status == 0, "\(mixed.stderr)")
        #expect(try String(contentsOfFile: directory.path("mixed.rttm"), encoding: .utf8).hasPrefix("SPEAKER detect 1 "))
    }

    /// `--id` names the streams, one per FILE in order, in events, summary and RTTM.
    @Test func idNamesTheStreams() throws {
        let (result, directory, talks) = try runAliceAndBob(["--id", "Alice_Smith", "--id", "bob2", "--rttm", "out.rttm", "--summary"])
        defer { directory.remove() }
        #expect(result.status == 0, "\(result.stderr)")
        let output = try DetectOutput(lines: result.lines)
        output.checkInvariants(ids: ["Alice_Smith", "bob2"])
        let renamed = Dictionary(uniqueKeysWithValues: talks.map { ($0.key == "alice" ? "Alice_Smith" : "bob2", $0.value) })
        checkSpeech(output, talks: renamed)
        let speakers = Set(try RTTM.parse(try String(contentsOfFile: directory.path("out.rttm"), encoding: .utf8)).map(\.speaker))
        #expect(speakers == ["Alice_Smith", "bob2"])
        // The same file twice is two streams once they have names of their own.
        let twice = try CLI.run(["detect", "--summary", "--id", "a", "--id", "b", "alice.wav", "alice.wav"], in: directory.url)
        #expect(twice.status == 0, "\(twice.stderr)")
        #expect(twice.lines.last?.contains(#""streams":{"a":"#) == true && twice.lines.last?.contains(#""b":"#) == true)
    }

    /// `-` is standard input: the same events as the file, from stream `stdin` (or its `--id`).
    @Test(arguments: ["wav", "flac"])
    func standardInputIsAFile(format: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (files, _) = try TestAudio.writeRoom(TestAudio.aliceAndBob, in: directory)
        let input = format == "flac" ? FixturePaths.file("meetings/m1-clean/alice.flac") : files[0]
        let fromFile = try CLI.run(["detect", "--summary", input, files[1]])
        let fromInput = try CLI.run(["detect", "--summary", "-", files[1]], input: input)
        #expect(fromFile.status == 0 && fromInput.status == 0, "\(fromInput.stderr)")
        #expect(fromInput.stdout == fromFile.stdout.replacingOccurrences(of: #""alice""#, with: #""stdin""#))
        let named = try CLI.run(["detect", "--summary", "--id", "alice", "--id", "bob", "-", files[1]], input: input)
        #expect(named.stdout == fromFile.stdout)
        #expect(try directory.contents() == ["alice.wav", "bob.wav"])
    }

    /// A format libsndfile cannot read is named, with the command that converts it.
    @Test func anM4AFileIsNamedWithAConversionHint() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // The first box of an M4A file (ftyp, brand M4A), then bytes no audio library would take.
        let path = directory.path("talk.m4a")
        try Data([0, 0, 0, 0x20] + Array("ftypM4A ".utf8) + [UInt8](repeating: 0x41, count: 200)).write(to: URL(fileURLWithPath: path))
        let result = try CLI.run(["detect", path])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines == [
            "activespeaker: \(path): MP4/M4A (AAC or ALAC) audio cannot be read (WAV, FLAC, Ogg Vorbis and Ogg Opus can); "
                + "convert it first, e.g. ffmpeg -i \(path) talk.wav"
        ])
        let piped = try CLI.run(["detect", "-"], input: path)
        #expect(piped.status == 1)
        #expect(piped.stderr.hasPrefix("activespeaker: standard input: MP4/M4A"), "\(piped.stderr)")
        #expect(piped.stderr.contains("ffmpeg -i in.m4a -f wav - | activespeaker detect -"))
        // Text is still "not an audio file", with libsndfile's words.
        try Data("hello\n".utf8).write(to: URL(fileURLWithPath: directory.path("text.wav")))
        let text = try CLI.run(["detect", directory.path("text.wav")])
        #expect(text.stderr.contains("not an audio file (libsndfile: "), "\(text.stderr)")
    }

    @Test func aStreamLeavesWhenItsFileEnds() throws {
        // Carol's file ends at 5.005 s, in the middle of her talk: the last hop is partial (80 samples),
        // so she leaves at t = 5.010, her utterance ends then, and the floor she held goes to nobody.
        // Alice is still talking when her file, the longest, ends at 8 s: her utterance ends with the run.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let room = [
            TestAudio.Participant(
                name: "alice", seconds: 8,
                talks: [.init(at: 0.3, text: "hello carol"), .init(at: 6.5, text: "are you still there carol I cannot hear you")],
                voice: "en-gb+f3", seed: 5),
            TestAudio.Participant(
                name: "carol", seconds: 5.005,
                talks: [.init(at: 2.5, text: "yes I am here and I was saying that the network seems to be dropping again")],
                voice: "en-us+m3", seed: 6),
        ]
        let (files, talks) = try TestAudio.writeRoom(room, in: directory)
        let result = try CLI.run(["detect", "--levels", "10"] + files)
        #expect(result.status == 0)
        let output = try DetectOutput(lines: result.lines)
        output.checkInvariants(ids: ["alice", "carol"])
        checkSpeech(output, talks: talks)

        let carolEnd = output.events.last { if case .speech(_, "carol", false, _) = $0 { true } else { false } }
        #expect(carolEnd == .speech(t: 5.01, stream: "carol", active: false, since: 5.01))
        #expect(output.events.contains(.dominant(t: 5.01, stream: nil)))
        let carolLast = output.events.last { event in
            switch event {
            case .speech(_, let stream, _, _), .dominant(_, let stream?): stream == "carol"
            case .levels(_, let levels): levels["carol"] != nil
            default: false
            }
        }
        #expect(carolLast?.t == 5.01, "nothing about carol after she left")
        #expect(output.speechSegments.contains { $0.speaker == "alice" && $0.start > 5.5 }, "alice goes on alone")
        #expect(output.levelEvents.last?.t == 8.0, "the run lasts as long as the longest file")
        let aliceEnd = output.events.last { if case .speech(_, "alice", false, _) = $0 { true } else { false } }
        #expect(aliceEnd?.t == 8.0, "the utterance open at the end of the run ends")
        #expect(output.events.last == .dominant(t: 8.0, stream: nil), "and the room is left empty")
    }

    @Test func hangoverConfigurationReachesTheEngine() throws {
        // An utterance ends once `vad.hangover` seconds have passed without speech, so each end is decided
        // hangover after its `since` (the end of the last speech hop), to within one hop.
        let defaults = try CLI.run(["detect", "--print-config"])
        let defaultHangover = try #require(
            defaults.lines.first { $0.hasPrefix("vad.hangover=") }.flatMap { Double($0.dropFirst("vad.hangover=".count)) })
        let (standard, directory, _) = try runAliceAndBob()
        defer { directory.remove() }
        // Another hangover, 0.15 s away; shorter if possible so no end is pushed past the end of a file.
        let other = ((defaultHangover > 0.2 ? defaultHangover - 0.15 : defaultHangover + 0.15) * 100).rounded() / 100
        let changed = try CLI.run(
            ["detect", "--config", "vad.hangover=\(other)", directory.path("alice.wav"), directory.path("bob.wav")])
        #expect(standard.status == 0 && changed.status == 0)
        for (result, hangover) in [(standard, defaultHangover), (changed, other)] {
            // Ends decided because a file ended (Bob's at 6 s, Alice's at 9 s) do not wait for the hangover.
            let delays = try DetectOutput(lines: result.lines).events.compactMap { event -> Double? in
                if case .speech(let t, _, false, let since) = event, t != 6, t != 9 { return t - since } else { return nil }
            }
            #expect(delays.count >= 3)
            for delay in delays { #expect(abs(delay - hangover) <= 0.0105, "hangover \(hangover): delay \(delay)") }
        }
    }

    @Test func configurationFileWorksLikeKeyValue() throws {
        let (keyValue, directory, _) = try runAliceAndBob(["--config", "vad.hangover=0.6"])
        defer { directory.remove() }
        try Data(#"{"vad":{"hangover":0.6}}"#.utf8).write(to: directory.url.appendingPathComponent("config.json"))
        let file = try CLI.run(
            ["detect", "--config", "config.json", "alice.wav", "bob.wav"], in: directory.url)
        #expect(file.status == 0)
        #expect(file.stdout == keyValue.stdout)
        let (standard, other, _) = try runAliceAndBob()
        defer { other.remove() }
        #expect(standard.stdout != keyValue.stdout, "the setting changes the result")
    }

    @Test func printConfigListsEverySettingWithItsValue() throws {
        let defaults = try CLI.run(["detect", "--print-config"])
        #expect(defaults.status == 0)
        #expect(defaults.lines.count > 5)
        #expect(defaults.lines.allSatisfy { $0.split(separator: "=").count == 2 }, "KEY=VALUE lines")
        #expect(defaults.lines.contains { $0.hasPrefix("vad.hangover=") })
        let changed = try CLI.run(["detect", "--print-config", "--config", "vad.hangover=1.25"])
        #expect(changed.lines.contains("vad.hangover=1.25"))
        #expect(changed.lines.count == defaults.lines.count)
    }

    @Test func levelsComeEveryHundredMilliseconds() throws {
        let (result, directory, talks) = try runAliceAndBob(["--levels", "100"])
        defer { directory.remove() }
        #expect(result.status == 0)
        let output = try DetectOutput(lines: result.lines)
        output.checkInvariants(ids: ["alice", "bob"])
        let levels = output.levelEvents.compactMap { event -> (t: Double, levels: [String: Double])? in
            if case .levels(let t, let levels) = event { (t, levels) } else { nil }
        }
        #expect(levels.count == 90, "9 s of audio")
        for (index, line) in levels.enumerated() {
            #expect(abs(line.t - Double(index + 1) * 0.1) < 1e-9)
            // Bob's file ends at 6 s: he is reported up to then, and not after.
            #expect(Set(line.levels.keys) == (line.t <= 6.0 + 1e-9 ? ["alice", "bob"] : ["alice"]), "t = \(line.t)")
        }
        // Alice's level is far higher while she talks than in her pause.
        let talk = try #require(talks["alice"]?.first)
        let middle = ((talk.lowerBound + talk.upperBound) / 2 * 10).rounded() / 10
        let talking = try #require(levels.first { abs($0.t - middle) < 1e-9 }?.levels["alice"])
        let pausing = try #require(levels.first { abs($0.t - 5.0) < 1e-9 }?.levels["alice"])
        #expect(talking > pausing + 20, "\(talking) vs \(pausing) dB")
    }

    @Test func summaryAgreesWithTheEvents() throws {
        let (result, directory, talks) = try runAliceAndBob(["--summary"])
        defer { directory.remove() }
        #expect(result.status == 0)
        let output = try DetectOutput(lines: result.lines)
        let summary = try #require(output.summary)
        #expect(summary.duration == 9.0)
        #expect(summary.streams.map(\.id) == ["alice", "bob"], "input order")
        #expect(summary.dominantChanges == output.dominantEvents.count)
        var totalDominant = 0.0
        for (id, statistics) in summary.streams {
            let starts = output.speechEvents.filter { if case .speech(_, id, true, _) = $0 { true } else { false } }
            let turns = output.dominantEvents.filter { $0 == .dominant(t: $0.t, stream: id) }
            #expect(statistics.utterances == starts.count, "\(id)")
            #expect(statistics.turns == turns.count, "\(id)")
            #expect(statistics.speech > 0 && statistics.speech <= summary.duration, "\(id)")
            #expect(statistics.dominant <= summary.duration, "\(id)")
            totalDominant += statistics.dominant
        }
        #expect(totalDominant <= summary.duration)
        // Speech time counts the hops inside utterances: most of the talks, plus a hangover per utterance.
        let alice = try #require(summary.streams.first { $0.id == "alice" }?.statistics)
        let talking = (talks["alice"] ?? []).reduce(0.0) { $0 + $1.upperBound - $1.lowerBound }
        #expect(alice.speech > 0.7 * talking && alice.speech < talking + Double(alice.utterances) * 0.6, "\(alice.speech) s")
    }

    @Test func quietWithSummaryPrintsOnlyTheSummary() throws {
        let (result, directory, _) = try runAliceAndBob(["-q", "--summary", "--levels", "100"])
        defer { directory.remove() }
        #expect(result.status == 0)
        #expect(result.lines.count == 1)
        let output = try DetectOutput(lines: result.lines)
        #expect(output.events.isEmpty)
        #expect(output.summary != nil)
    }

    @Test func multichannelFilesGiveOneStreamPerChannelUnlessDownmixed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let voice = try TestAudio.Participant(
            name: "", seconds: 4, talks: [.init(at: 1, text: "left channel speaking")], voice: "en-us", seed: 7
        ).render().samples
        let quiet = Synthesis.noise(seconds: 4, levelDBFS: -60, seed: 8)
        try TestAudio.writeWAV([voice, quiet], to: directory.path("pair.wav"))
        let split = try CLI.run(["detect", "--levels", "1000", directory.path("pair.wav")])
        #expect(split.status == 0)
        let splitOutput = try DetectOutput(lines: split.lines)
        splitOutput.checkInvariants(ids: ["pair-ch1", "pair-ch2"])
        #expect(Set(splitOutput.speechSegments.map(\.speaker)) == ["pair-ch1"])
        guard case .levels(_, let firstLevels)? = splitOutput.levelEvents.first else {
            Issue.record("no levels")
            return
        }
        #expect(Set(firstLevels.keys) == ["pair-ch1", "pair-ch2"])

        let mixed = try CLI.run(["detect", "--downmix", "--levels", "1000", directory.path("pair.wav")])
        #expect(mixed.status == 0)
        let mixedOutput = try DetectOutput(lines: mixed.lines)
        mixedOutput.checkInvariants(ids: ["pair"])
        #expect(Set(mixedOutput.speechSegments.map(\.speaker)) == ["pair"])
    }

    @Test func streamIdsAreEscapedInJSON() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let name = "o\"brien\\ü\t€"
        let participant = TestAudio.Participant(
            name: name, seconds: 3, talks: [.init(at: 0.5, text: "my name has quotes")], voice: "en-gb", seed: 9)
        let files = try TestAudio.writeRoom([participant], in: directory).paths
        let result = try CLI.run(["detect", "--levels", "500"] + files)
        #expect(result.status == 0)
        #expect(result.stdout.contains(#""stream":"o\"brien\\ü\t€""#), "quote, backslash and tab escaped; UTF-8 kept")
        let output = try DetectOutput(lines: result.lines)
        output.checkInvariants(ids: [name])
        #expect(Set(output.speechSegments.map(\.speaker)) == [name])
    }

    @Test func rttmRefusesStreamIdsWithSpaces() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let files = [try TestAudio.writeNoise("mary ann", seconds: 2, in: directory)]
        let result = try CLI.run(["detect", "--rttm", directory.path("out.rttm")] + files)
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.errorLines.count == 1)
        #expect(result.stderr.contains("mary ann"))
        #expect(try directory.contents() == ["mary ann.wav"])
        #expect(result.stderr.contains("--id"), "says how to name the stream")
        let withoutRTTM = try CLI.run(["detect"] + files)
        #expect(withoutRTTM.status == 0, "JSON can carry any id")
        let named = try CLI.run(["detect", "--rttm", directory.path("out.rttm"), "--id", "mary_ann"] + files)
        #expect(named.status == 0, "\(named.stderr)")
    }

    @Test func noProgressWhenStandardErrorIsNotATerminal() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let long = TestAudio.Participant(
            name: "long", seconds: 65, talks: [.init(at: 10, text: "a long recording")], voice: "en-us", seed: 11)
        let files = try TestAudio.writeRoom([long], in: directory).paths
        let result = try CLI.run(["detect", "--quiet", "--summary"] + files)
        #expect(result.status == 0)
        #expect(result.stderr.isEmpty)
        let summary = try #require(try DetectOutput(lines: result.lines).summary)
        #expect(summary.duration == 65.0)
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: FixturePaths.file("formats/speech-s16.wav"))))
    func speechFixtureIsDetected() throws {
        let path = FixturePaths.file("formats/speech-s16.wav")
        let result = try CLI.run(["detect", "--summary", path])
        #expect(result.status == 0)
        let output = try DetectOutput(lines: result.lines)
        output.checkInvariants(ids: ["speech-s16"])
        #expect(!output.speechSegments.isEmpty)
        #expect(output.summary?.streams.first?.statistics.utterances ?? 0 >= 1)
    }
}

import Foundation
import Testing
import TestSupport

/// The dashboard page of `serve`, in a real headless Chromium, while three `join` clients take turns.
@Suite("serve's dashboard in headless Chromium", .serialized, .realTime)
struct DashboardTests {
    static let secret = "dashboard-test-secret-16"
    static let room = "demo"

    /// Leak-free tracks of 16 s: each participant speaks alone in its slot (bob 1–4 s, alice 6–9 s,
    /// carol 11–14 s) over −60 dBFS noise.
    static let participants = [
        TestAudio.Participant(
            name: "bob", seconds: 16, talks: [.init(at: 1, text: "hello this is bob with the quarterly numbers")],
            voice: "en+m3", seed: 31),
        TestAudio.Participant(
            name: "alice", seconds: 16, talks: [.init(at: 6, text: "thanks bob here is the marketing update")],
            voice: "en+f3", seed: 32),
        TestAudio.Participant(
            name: "carol", seconds: 16, talks: [.init(at: 11, text: "and carol closing with the engineering status")],
            voice: "en-us", seed: 33),
    ]
    static let displayNames = ["bob": "Bob", "alice": "Alice", "carol": "Carol"]

    /// What the page shows, read from its DOM by `probe`.
    struct PageState: Decodable {
        struct Tile: Decodable {
            var id: String
            var name: String
            /// The level meter's width, percent.
            var meter: Double
            var speaking: Bool
        }

        var status: String
        var speakerName: String
        /// `#history`: `participantId@t`, or `-@t` for nobody.
        var history: [String]
        var tiles: [Tile]

        /// The participant of each history entry (nil: nobody).
        var historyIDs: [String?] { history.map { $0.split(separator: "@").first.map(String.init).flatMap { $0 == "-" ? nil : $0 } } }
        /// The id of the last history entry, if anybody.
        var currentSpeaker: String? { historyIDs.last ?? nil }
        func tile(_ participant: String) -> Tile? { tiles.first { $0.id == "tile-" + participant } }
    }

    /// Reads `PageState` out of the page's DOM, as JSON (status `loading` until the page is there).
    static let probe = """
        JSON.stringify({
          status: document.getElementById("status")?.textContent ?? "loading",
          speakerName: document.getElementById("speaker-name")?.textContent ?? "",
          history: Array.from(document.querySelectorAll("#history li"), (li) => li.textContent),
          tiles: Array.from(document.querySelectorAll(".tile"), (t) => ({
            id: t.id, name: t.querySelector(".name")?.textContent ?? "", speaking: t.classList.contains("speaking"),
            meter: parseFloat(t.querySelector(".meter>div")?.style.width) || 0 }))
        })
        """

    static func state(_ browser: HeadlessChromium, _ session: String) throws -> PageState {
        try JSONDecoder().decode(PageState.self, from: Data(try browser.evaluate(probe, session: session).utf8))
    }

    /// Polls the page every 100 ms until `done` holds, at most `timeout` seconds; returns every state seen.
    static func watch(
        _ browser: HeadlessChromium, _ session: String, timeout: Double, until done: (PageState) -> Bool,
        each: (PageState) throws -> Void = { _ in }
    ) throws -> [PageState] {
        let deadline = Date().addingTimeInterval(timeout)
        var states: [PageState] = []
        repeat {
            let state = try Self.state(browser, session)
            states.append(state)
            try each(state)
            if done(state) { break }
            Thread.sleep(forTimeInterval: 0.1)
        } while Date() < deadline
        return states
    }

    @Test(.enabled(
        if: LiveRunner.runsEverything || HeadlessChromium.executable != nil,
        "no chromium on PATH (or $ACTIVESPEAKER_CHROMIUM is not executable); tools/install-deps.sh installs it"))
    func theDashboardFollowsThreeSpeakersTakingTurns() throws {
        try #require(HeadlessChromium.executable != nil, "no chromium on PATH: bash tools/install-deps.sh")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let (paths, talks) = try TestAudio.writeRoom(Self.participants, in: directory)
        for (participant, slot) in [("bob", 1.0...4.5), ("alice", 6.0...9.5), ("carol", 11.0...14.5)] {
            let talk = try #require(talks[participant]?.first)
            try #require(slot.contains(talk.lowerBound) && slot.contains(talk.upperBound), "\(participant) speaks at \(talk), outside \(slot)")
        }

        // Every process is stopped at the end, whatever happened; --duration bounds them even if
        // this runner dies first.
        var processes: [LiveRunner.Running] = []
        defer {
            for process in processes {
                if process.process.isRunning { process.process.terminate() }
                process.process.waitUntilExit()
                process.directory.remove()
            }
        }
        let server = try LiveRunner.Running([
            "serve", "--listen", "127.0.0.1:0", "--secret", Self.secret, "--room", Self.room, "--duration", "55",
        ])
        processes.append(server)
        try #require(server.waitForOutput(#""type":"listening""#, timeout: 10), "serve did not start: \(server.stdout)")
        let listening = try #require(server.stdout.split(separator: "\n").first { $0.contains(#""type":"listening""#) })
        let port = try #require(
            (try JSONSerialization.jsonObject(with: Data(listening.utf8)) as? [String: Any])?["http"] as? Int, "\(listening)")

        func token(_ participant: String, _ extra: [String]) throws -> String {
            let result = try CLI.run(["token", "--secret", Self.secret, "--room", Self.room, "--participant", participant] + extra)
            try #require(result.status == 0, "\(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        let browser = try HeadlessChromium(width: 900, height: 400)
        defer { browser.close() }
        let viewer = try token("viewer", ["--name", "Viewer", "--role", "subscriber"])
        let session = try browser.open("http://127.0.0.1:\(port)/rooms/\(Self.room)?token=\(viewer)")
        let connecting = try Self.watch(browser, session, timeout: 15) { $0.status == "connected" }
        try #require(connecting.last?.status == "connected", "the page did not connect: \(connecting.last.map { "\($0)" } ?? "")")

        // The three files play in step from a common instant a few seconds ahead, however long each
        // client takes to start and join on a busy machine.
        let startAt = String(format: "%.3f", Date().timeIntervalSince1970 + 6)
        for (participant, path) in zip(Self.participants.map(\.name), paths) {
            let joinToken = try token(participant, ["--name", Self.displayNames[participant]!])
            processes.append(try LiveRunner.Running([
                "join", "--server", "ws://127.0.0.1:\(port)", "--room", Self.room, "--token", joinToken, "--mic", path,
                "--silence-after", "3", "--start-at", startAt,
            ]))
        }
        let joins = processes.dropFirst()

        // Until carol's turn has ended (the 16 s tracks, plus latency); a screenshot in alice's turn,
        // once the highlight's transition is over.
        var aliceTurn: [PageState] = []
        var screenshot: Data?
        let states = try Self.watch(browser, session, timeout: 30) { state in
            state.historyIDs.contains("carol") && state.currentSpeaker == nil
        } each: { state in
            guard state.currentSpeaker == "alice" else { return }
            aliceTurn.append(state)
            if screenshot == nil, aliceTurn.count >= 5, (state.tile("alice")?.meter ?? 0) > 0 { screenshot = try browser.screenshot(session: session) }
        }
        let final = try #require(states.last)
        let dom = try browser.evaluate("document.documentElement.outerHTML", session: session)
        let diagnostics = "page: \(final)\nserve:\n\(server.stdout)\njoins:\n\(joins.map(\.stdout).joined(separator: "\n"))"

        // The history, parsed out of the serialized DOM: bob, alice, carol (nobody in between is fine).
        let items = try NSRegularExpression(pattern: #"<li>([^<]*)</li>"#)
        let historyHTML = try #require(dom.range(of: #"<ol id="history"[^>]*>.*?</ol>"#, options: .regularExpression).map { String(dom[$0]) })
        let history = items.matches(in: historyHTML, range: NSRange(historyHTML.startIndex..., in: historyHTML)).map {
            String(historyHTML[Range($0.range(at: 1), in: historyHTML)!])
        }
        #expect(history == final.history)
        // A pause inside a turn may show as nobody then the same speaker again: count each turn once.
        let speakers = history.compactMap { $0.split(separator: "@").first.map(String.init) }.filter { $0 != "-" }
            .reduce(into: [String]()) { if $0.last != $1 { $0.append($1) } }
        #expect(speakers == ["bob", "alice", "carol"], "\(diagnostics)")

        // Each entry is a speaker-changed event of the room, in the server's order and room time.
        let logged = server.stdout.split(separator: "\n").compactMap { line -> String? in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["type"] as? String == "speaker-changed", let t = event["t"] as? Double
            else { return nil }
            return "\(event["participant"] as? String ?? "-")@\(String(format: "%.2f", t))"
        }
        let shown = history.dropFirst().map { entry in  // the first entry is the state at joining
            let parts = entry.split(separator: "@")
            return "\(parts[0])@\(String(format: "%.2f", Double(parts.last ?? "") ?? -1))"
        }
        #expect(Array(shown) == Array(logged.prefix(shown.count)), "\(diagnostics)")
        // The turns start 5 s apart; the engine takes 0.3–1 s to decide each.
        let starts = ["bob", "alice", "carol"].compactMap { id in
            history.first { $0.hasPrefix(id + "@") }.flatMap { Double($0.split(separator: "@").last ?? "") }
        }
        if starts.count == 3 {
            #expect(abs(starts[1] - starts[0] - 5) <= 1 && abs(starts[2] - starts[1] - 5) <= 1, "turns at \(starts)")
        }

        // The page watched without joining: nobody saw a "viewer" join.
        #expect(!server.stdout.contains(#""participant":"viewer""#), "\(diagnostics)")
        // The tiles: all three with their display names, and not the viewer's.
        #expect(final.tiles.map(\.id).sorted() == ["tile-alice", "tile-bob", "tile-carol"], "\(diagnostics)")
        for (participant, name) in Self.displayNames {
            #expect(final.tile(participant)?.name == name)
            #expect(dom.contains(#"id="tile-\#(participant)""#))
        }
        #expect(final.speakerName == "nobody" && !final.tiles.contains(where: \.speaking))

        // In alice's turn: her tile alone is highlighted, named as the speaker, and her meter moves
        // while the others' (noise at −60 dBFS) stay near zero.
        try #require(!aliceTurn.isEmpty, "the page never showed alice speaking: \(diagnostics)")
        let wrong = aliceTurn.first { state in
            state.tiles.filter(\.speaking).map(\.id) != ["tile-alice"] || state.speakerName != "Alice" || state.tiles.count != 3
        }
        #expect(wrong == nil, "in alice's turn the page showed \(wrong.map { "\($0)" } ?? "")")
        let peak = { (participant: String) in aliceTurn.compactMap { $0.tile(participant)?.meter }.max() ?? 0 }
        #expect(peak("alice") >= 30, "alice's meter peaked at \(peak("alice"))%")
        #expect(peak("bob") <= 15 && peak("carol") <= 15, "bob \(peak("bob"))%, carol \(peak("carol"))% in alice's turn")

        let png = try #require(screenshot, "no screenshot in alice's turn")
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        // Set ACTIVESPEAKER_DASHBOARD_SCREENSHOT=FILE to keep it and look at the page.
        if let path = ProcessInfo.processInfo.environment["ACTIVESPEAKER_DASHBOARD_SCREENSHOT"] {
            try png.write(to: URL(fileURLWithPath: path))
        }
    }
}

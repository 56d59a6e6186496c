import Foundation
import Testing
import ConfigurationOverrides
import SpeakerCore

@Suite struct ConfigurationTests {
    @Test func partialJSONKeepsTheOtherDefaults() throws {
        let json = Data(#"{"vad":{"hangover":0.4},"selection":{"releaseAfter":1.5}}"#.utf8)
        let configuration = try EngineConfiguration().overriding(json: json)
        #expect(configuration.vad.hangover == 0.4)
        #expect(configuration.selection.releaseAfter == 1.5)
        #expect(configuration.vad.voicedSNR == VoiceActivityConfiguration().voicedSNR)
    }

    @Test func dottedSettingsOfEachType() throws {
        let configuration = try EngineConfiguration()
            .setting("vad.onsetFrames", to: "2")
            .setting("leakage.enabled", to: "false")
            .setting("leakage.margin", to: "9.5")
        #expect(configuration.vad.onsetFrames == 2)
        #expect(configuration.leakage.enabled == false)
        #expect(configuration.leakage.margin == 9.5)
    }

    /// `--config` arguments, in order: a JSON file, then a setting over it; each bad one is named.
    @Test func commandLineArgumentsApplyInOrder() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(#"{"vad":{"hangover":0.4,"onsetFrames":2}}"#.utf8).write(to: file)
        let configuration = try EngineConfiguration().applying(arguments: [file.path, "vad.hangover=0.3"])
        #expect(configuration.vad.hangover == 0.3 && configuration.vad.onsetFrames == 2)
        let messages = [
            ("vad.hangover", "--config vad.hangover: expected FILE.json or KEY=VALUE"),
            ("missing.json", "--config missing.json: cannot read the file"),
            ("vad.nosuch=1", "--config vad.nosuch=1: configuration: unknown key vad.nosuch"),
        ]
        for (argument, message) in messages {
            let error = #expect(throws: EngineConfiguration.OverrideError.self) { try EngineConfiguration().applying(arguments: [argument]) }
            #expect(error?.description == message)
        }
        let range = #expect(throws: EngineConfiguration.OverrideError.self) { try EngineConfiguration().applying(arguments: ["vad.hangover=9"]) }
        #expect(range?.description.hasPrefix("--config vad.hangover=9: ") == true && range?.description.contains("0…5 s") == true, "\(String(describing: range))")
    }

    @Test(arguments: ["nosuch.key", "vad.nosuch", "vad"])
    func unknownKeysAreRejected(key: String) {
        #expect(throws: EngineConfiguration.OverrideError.self) { try EngineConfiguration().setting(key, to: "1") }
    }

    @Test func outOfRangeValuesAreRejected() {
        let error = #expect(throws: ConfigurationError.self) {
            try EngineConfiguration().setting("vad.hangover", to: "9")
        }
        #expect(error?.key == "vad.hangover" && error?.allowed == "0…5 s")
        var configuration = EngineConfiguration()
        configuration.vad.onsetFrames = 9
        #expect(throws: ConfigurationError.self) { try Engine(configuration: configuration) }
    }

    @Test func everyKeyIsListed() throws {
        let keys = try EngineConfiguration().flattened().map(\.key)
        #expect(keys.contains("vad.hangover"))
        #expect(keys.contains("selection.releaseAfter"))
        #expect(keys.contains("leakage.margin"))
        #expect(keys.count >= 25)
    }
}

@Suite struct ConfigurationRoundTripTests {
    @Test func everyListedSettingReadsBack() throws {
        var configuration = EngineConfiguration()
        for (key, value) in try EngineConfiguration().flattened() {
            configuration = try configuration.setting(key, to: value)
        }
        #expect(configuration == EngineConfiguration())
        #expect(try EngineConfiguration().flattened().contains { $0.key == "leakage.enabled" && $0.value == "true" })
    }

    @Test func unknownKeyIsNamedInFull() {
        #expect(throws: EngineConfiguration.OverrideError.self) { try EngineConfiguration().setting("vad.nosuch", to: "1") }
        do {
            _ = try EngineConfiguration().setting("nosuch.key", to: "1")
        } catch {
            #expect("\(error)".contains("nosuch.key"))
        }
    }
}

/// The cascade's switch is a setting like the others (`--config analysis.cascade=false`).
@Suite struct CascadeSettingTests {
    @Test func theCascadeKeyIsAConfigurationSetting() throws {
        let off = try EngineConfiguration().setting("analysis.cascade", to: "false")
        #expect(off.analysis.cascade == false)
        #expect(EngineConfiguration().analysis.cascade)
        #expect(try EngineConfiguration().flattened().contains { $0.key == "analysis.cascade" && $0.value == "true" })
    }
}

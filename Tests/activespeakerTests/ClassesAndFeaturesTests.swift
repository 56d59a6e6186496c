import Foundation
import Testing
import TestSupport

/// `detect --classes` and `activespeaker features`: the sound classifier seen from the command line.
@Suite struct ClassesAndFeaturesTests {
    private let meeting = ["alice", "bob"].map { FixturePaths.file("meetings/m3-music/\($0).flac") }

    @Test func classesComeEveryIntervalForEveryStreamAndAddUpToOne() throws {
        let result = try CLI.run(["detect", "--classes", "100"] + meeting)
        #expect(result.status == 0)
        let lines = result.lines.filter { $0.contains(#""type":"classes""#) }
        #expect(lines.count == 200, "20 s of audio, a line every 0.1 s")
        let pattern = #/^\{"t":\d+\.\d{3},"type":"classes","classes":\{"alice":\{"none":\d\.\d\d,"speech":\d\.\d\d,"music":\d\.\d\d,"sound":\d\.\d\d\},"bob":\{.*\}\}\}$/#
        for line in lines { #expect(line.wholeMatch(of: pattern) != nil, "\(line)") }
        for line in lines {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let classes = try #require(object["classes"] as? [String: [String: Double]])
            for (stream, probabilities) in classes {
                let sum = probabilities.values.reduce(0, +)
                #expect(abs(sum - 1) <= 0.021, "\(stream): \(probabilities)")  // four values rounded to 0.01
            }
        }
    }

    @Test func classesMustBeAMultipleOfTenMilliseconds() throws {
        let result = try CLI.run(["detect", "--classes", "15"] + meeting)
        #expect(result.status == 64)
        #expect(result.stderr.contains("--classes 15"))
    }

    @Test func featuresWritesOneRowPerFrame() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try CLI.run(["features", "--out", directory.path("out")] + meeting)
        #expect(result.status == 0, "\(result.stderr)")
        for name in ["alice", "bob"] {
            let data = try Data(contentsOf: URL(fileURLWithPath: directory.path("out/\(name).f32")))
            #expect(data.count == 2000 * 64 * 4, "20 s = 2,000 frames of 64 float32 values")
            let values = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let finite = values.allSatisfy { $0.isFinite }
            #expect(finite)
            // Column 51: the share of sounding frames over about 0.5 s, 0…1; somebody talks in each file.
            let sounding = stride(from: 51, to: values.count, by: 64).map { values[$0] }
            let inRange = sounding.allSatisfy { $0 >= 0 && $0 <= 1 }
            #expect(inRange)
            let loudest = try #require(sounding.max())
            #expect(loudest > 0.5)
        }
    }

    @Test func frameLayoutWritesEachFramesOwnFeatures() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try CLI.run(["features", "--layout", "frame", "--out", directory.path("out")] + meeting)
        #expect(result.status == 0, "\(result.stderr)")
        let width = 42
        let data = try Data(contentsOf: URL(fileURLWithPath: directory.path("out/alice.f32")))
        #expect(data.count == 2000 * width * 4, "20 s = 2,000 frames of 42 float32 values")
        let values = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        // Column 32 is the hop's energy in dBFS, column 39 the periodicity (0…1): a talker is heard.
        let energies = stride(from: 32, to: values.count, by: width).map { values[$0] }
        let periodicities = stride(from: 39, to: values.count, by: width).map { values[$0] }
        #expect(try #require(energies.max()) > -40)
        #expect(periodicities.allSatisfy { $0 >= 0 && $0 <= 1 })
        #expect(try #require(periodicities.max()) > 0.5)
    }

    @Test func anUnknownLayoutIsAUsageError() throws {
        let result = try CLI.run(["features", "--layout", "rows", "--out", "/tmp/unused"] + meeting)
        #expect(result.status == 64)
        #expect(result.stderr.contains("--layout"))
    }

    /// The speech model runs through the whole CLI and changes what is found (it replaces the classifier).
    @Test func theSpeechModelCanBeTurnedOn() throws {
        let plain = try CLI.run(["detect", "--classes", "100"] + meeting)
        let model = try CLI.run(["detect", "--classes", "100", "--config", "vad.speechModel=true"] + meeting)
        #expect(plain.status == 0 && model.status == 0, "\(model.stderr)")
        #expect(model.stdout.contains("\"type\":\"dominant\",\"stream\":\"alice\""))
        #expect(model.stdout.contains("\"type\":\"classes\""))
        #expect(plain.stdout != model.stdout)  // the classes come from the model, not the classifier
    }

    @Test func featuresOfABadFileFailsAndWritesNothing() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let result = try CLI.run(["features", "--out", directory.path("out"), FixturePaths.file("formats/not-audio.wav")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("not-audio.wav"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("out/not-audio.f32")))
    }

    @Test func featuresNeedsAnOutputFolder() throws {
        let result = try CLI.run(["features"] + meeting)
        #expect(result.status == 64)
        #expect(result.stderr.contains("--out"))
    }
}

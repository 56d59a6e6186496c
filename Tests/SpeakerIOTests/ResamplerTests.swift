import SpeakerIO
import Testing
import TestSupport

@Suite("Resampler")
struct ResamplerTests {
    static let sourceRates = [8000, 11025, 22050, 24000, 32000, 44100, 48000, 96000]

    @Test("length is round(n × 16000 / rate) and a 1 kHz tone keeps its level within 0.1 dB", arguments: sourceRates)
    func toneLevel(rate: Int) throws {
        let input = Signals.tone(frequency: 1000, sampleRate: rate, count: rate)  // 1 s
        let output = try Resampler.resample(input, from: rate, to: 16000)
        #expect(output.count == 16000)
        // Steady state away from the ends, where the filter sees zeros.
        let level = Signals.decibels(Signals.rms(output, 1600..<14400), relativeTo: 0.5 / 2.0.squareRoot())
        #expect(abs(level) < 0.1, "\(level) dB")
    }

    @Test("tones above 8 kHz at 48 kHz are ≥ 60 dB down at 16 kHz (no aliasing)", arguments: [8500.0, 12000, 20000])
    func aliasRejection(frequency: Double) throws {
        // 8.5 kHz would fold to 7.5 kHz, 12 and 20 kHz to 4 kHz, if not filtered out.
        let input = Signals.tone(frequency: frequency, sampleRate: 48000, count: 48000)
        let output = try Resampler.resample(input, from: 48000, to: 16000)
        let level = Signals.decibels(Signals.rms(output, 1600..<14400), relativeTo: 0.5 / 2.0.squareRoot())
        #expect(level < -60, "\(level) dB")
    }

    @Test("a 7.5 kHz tone lies in SOXR_HQ's transition band (7.3–8 kHz) and passes, slightly attenuated")
    func transitionBand() throws {
        let input = Signals.tone(frequency: 7500, sampleRate: 48000, count: 48000)
        let output = try Resampler.resample(input, from: 48000, to: 16000)
        let level = Signals.decibels(Signals.rms(output, 1600..<14400), relativeTo: 0.5 / 2.0.squareRoot())
        #expect(level < -0.1 && level > -3, "\(level) dB")
    }

    @Test("an impulse stays at its time within 1 ms", arguments: sourceRates)
    func impulseAlignment(rate: Int) throws {
        var input = [Float](repeating: 0, count: rate)
        let position = rate * 3 / 10  // 0.3 s
        input[position] = 1
        let output = try Resampler.resample(input, from: rate, to: 16000)
        let expected = Double(position) * 16000 / Double(rate)
        #expect(abs(Double(Signals.peakIndex(output)) - expected) <= 16, "within 16 samples = 1 ms")
    }

    @Test("a tone onset stays at its time within 1 ms", arguments: [44100, 48000])
    func onsetAlignment(rate: Int) throws {
        let start = rate / 4  // 0.25 s
        let input = Signals.tone(frequency: 440, sampleRate: rate, count: rate, startingAt: start)
        let output = try Resampler.resample(input, from: rate, to: 16000)
        let onset = try #require(Signals.onset(output, threshold: 0.25))
        let inputOnset = try #require(Signals.onset(input, threshold: 0.25))
        let expected = Double(inputOnset) * 16000 / Double(rate)
        #expect(abs(Double(onset) - expected) <= 16, "onset \(onset), expected \(expected)")
    }

    @Test("streaming in uneven blocks plus flush gives the whole-signal result", arguments: [44100, 48000])
    func streamingMatchesWhole(rate: Int) throws {
        var random = SeededGenerator(seed: 42)
        let input = (0..<rate).map { _ in random.nextSignedUnit() * 0.5 }
        let whole = try Resampler.resample(input, from: rate, to: 16000)

        let resampler = try Resampler(inputRate: rate, outputRate: 16000)
        #expect(resampler.latency == 0)
        var streamed: [Float] = []
        var start = 0
        while start < input.count {
            let end = min(input.count, start + 1 + Int(random.next() % 2000))
            streamed += resampler.process(Array(input[start..<end]))
            start = end
        }
        #expect(resampler.latency > 0, "samples are held inside until flushed")
        streamed += resampler.flush()
        #expect(abs(streamed.count - whole.count) <= 1)
        let common = min(streamed.count, whole.count)
        let difference = zip(streamed[..<common], whole[..<common]).map { abs($0 - $1) }.max() ?? 0
        #expect(difference < 1e-5)
    }

    @Test("an output buffer too small loses nothing: the rest comes out later")
    func smallOutputBuffer() throws {
        let input = Signals.tone(frequency: 1000, sampleRate: 48000, count: 48000)
        let resampler = try Resampler(inputRate: 48000)
        var output = [Float](repeating: 0, count: 50)
        var collected: [Float] = []
        for start in stride(from: 0, to: input.count, by: 960) {
            let written = input[start..<start + 960].withUnsafeBufferPointer { block in
                output.withUnsafeMutableBufferPointer { resampler.process(block, into: $0) }
            }
            #expect(written <= 50)
            collected += output[..<written]
        }
        while true {
            let written = output.withUnsafeMutableBufferPointer { resampler.flush(into: $0) }
            if written == 0 { break }
            collected += output[..<written]
        }
        #expect(collected.count == 16000)
        #expect(collected == (try Resampler.resample(input, from: 48000, to: 16000)))
    }

    @Test("reset starts a new stream with the same rates")
    func resetStartsOver() throws {
        let input = Signals.tone(frequency: 300, sampleRate: 48000, count: 4800)
        let resampler = try Resampler(inputRate: 48000)
        let first = resampler.process(input) + resampler.flush()
        resampler.reset()
        #expect(resampler.latency == 0)
        let second = resampler.process(input) + resampler.flush()
        #expect(first == second)
        #expect(first.count == 1600)
    }
}

import Foundation
import SpeakerIO
import Testing

@testable import SpeakerFiles

@Suite("FileStreamReader")
struct FileStreamReaderTests {
    /// Reads every stream of `reader` to its end, the streams in step, `chunk` samples at a time (a replay's hop).
    static func readAll(_ reader: FileStreamReader, chunk: Int) throws -> [[Float]] {
        var streams = [[Float]](repeating: [], count: reader.streamCount)
        var buffer = [Float](repeating: 0, count: chunk)
        var ended = false
        while !ended {
            ended = true
            for index in streams.indices {
                let count = try buffer.withUnsafeMutableBufferPointer { try reader.read(stream: index, into: $0) }
                streams[index] += buffer[..<count]
                if count > 0 { ended = false }
            }
        }
        return streams
    }

    @Test(
        "streamed samples are loadStreams' samples, bit for bit, whatever the chunk",
        arguments: FormatFixtures.readable.map(\.name), [false, true])
    func sameSamplesAsLoadStreams(name: String, downmix: Bool) throws {
        let path = FormatFixtures.path(name)
        let whole = try loadStreams(paths: [path], downmix: downmix)
        for chunk in [160, 1000, 7] {
            let reader = try FileStreamReader(path: path, downmix: downmix)
            #expect(reader.streamCount == whole.count)
            #expect(reader.sourceRate == whole[0].sourceRate)
            #expect(reader.sourceDescriptions == whole.map(\.sourceDescription))
            #expect(reader.sampleCount == whole[0].samples.count)
            let streamed = try Self.readAll(reader, chunk: chunk)
            for (index, stream) in whole.enumerated() {
                #expect(streamed[index].count == stream.samples.count, "\(name) stream \(index), chunk \(chunk)")
                // Bit patterns, so that -0 and NaN would count as differences too.
                #expect(
                    streamed[index].map(\.bitPattern) == stream.samples.map(\.bitPattern),
                    "\(name) stream \(index), chunk \(chunk)")
            }
        }
    }

    @Test("a stream at its end reads 0, and a stereo file's channels may be read at different times")
    func endAndUnevenReads() throws {
        let path = FormatFixtures.path("stereo-48k.wav")
        let whole = try loadStreams(paths: [path])
        let reader = try FileStreamReader(path: path)
        var buffer = [Float](repeating: 0, count: 4000)
        var first: [Float] = []
        while true {
            let count = try buffer.withUnsafeMutableBufferPointer { try reader.read(stream: 0, into: $0) }
            if count == 0 { break }
            first += buffer[..<count]
        }
        let second = try Self.readAll(reader, chunk: 333)[1]
        #expect(first == whole[0].samples)
        #expect(second == whole[1].samples)
    }

    @Test("a file cut short fails when it is read, not when it is opened", arguments: ["speech.flac"])
    func truncatedFileFailsWhileReading(name: String) throws {
        let directory = try FormatFixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let data = try Data(contentsOf: URL(fileURLWithPath: FormatFixtures.path(name)))
        let cut = directory.appendingPathComponent(name)
        try data.prefix(data.count / 2).write(to: cut)
        let reader = try FileStreamReader(path: cut.path)
        #expect(throws: SpeakerIOError.self) { _ = try Self.readAll(reader, chunk: 160) }
    }

    #if DEBUG
        /// A reader handed to another thread.
        final class Shared: @unchecked Sendable {
            let reader: FileStreamReader
            init(_ reader: FileStreamReader) { self.reader = reader }
        }

        /// A read from a second thread while the first is inside the reader stops the process (debug builds,
        /// `ConfinementCheck`).
        @Test("a read from a second thread during a read stops the process")
        func aReadFromASecondThreadDuringAReadStops() async {
            await #expect(processExitsWith: .failure) {
                let reader = try! FileStreamReader(path: FormatFixtures.path("stereo-48k.wav"))
                reader.confinement.enter("a test's read")
                let shared = Shared(reader)
                Thread {
                    var buffer = [Float](repeating: 0, count: 160)
                    _ = buffer.withUnsafeMutableBufferPointer { try? shared.reader.read(stream: 0, into: $0) }
                }.start()
                for _ in 0..<600 { usleep(100_000) }
            }
        }
    #endif
}

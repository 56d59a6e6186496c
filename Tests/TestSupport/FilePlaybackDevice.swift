import Foundation

/// An ALSA playback device without sound hardware: a `type file` PCM over `null` that writes every
/// sample it is given to a file (raw 16-bit little-endian), defined in an alsa-lib configuration file of
/// its own, in a temporary folder.
public struct FilePlaybackDevice: Sendable {
    /// The PCM's name.
    public let name: String
    /// The alsa-lib configuration file that defines it (for `ALSAPlayback(configurationFile:)`).
    public let configuration: String
    /// Where the played samples go.
    public let output: String
    private let folder: URL

    public init(name: String) throws {
        self.name = name
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("playback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        output = folder.appendingPathComponent("\(name).raw").path
        configuration = folder.appendingPathComponent("asoundrc").path
        try """
            pcm.\(name) {
                type file
                slave.pcm "null"
                file "\(output)"
                format "raw"
            }
            """.write(toFile: configuration, atomically: true, encoding: .utf8)
    }

    /// The samples played so far.
    public func played() throws -> [Int16] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: output)))
        return stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
    }

    /// Deletes the folder.
    public func remove() { try? FileManager.default.removeItem(at: folder) }
}

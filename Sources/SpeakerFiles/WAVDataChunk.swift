internal import CSndFile

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the size a RIFF/WAVE header declares for its `data` chunk.
///
/// libsndfile silently clips a WAV file's frame count to the bytes actually present: a file whose `data`
/// chunk header promises 96000 bytes but holds 24000 opens without error and reports the shorter count
/// (its log says `data : 96000 (should be 24000)`). Comparing the declared size with what libsndfile reports
/// is how `AudioFile` detects a cut-off WAV file.
enum WAVDataChunk {
    /// The `data` chunk size in bytes as the header states it, or `nil` if the file is not RIFF/WAVE, the chunk
    /// is not found, or the size is a placeholder (`0` or `0xFFFFFFFF`, written by streaming recorders).
    static func declaredByteCount(path: String) -> Int? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var header = [UInt8](repeating: 0, count: 12)
        guard fread(&header, 1, 12, file) == 12,
            header[0..<4].elementsEqual("RIFF".utf8), header[8..<12].elementsEqual("WAVE".utf8)
        else { return nil }
        var chunkHeader = [UInt8](repeating: 0, count: 8)
        // Walk the chunks: 4-byte id, 4-byte little-endian size, payload padded to an even length.
        while fread(&chunkHeader, 1, 8, file) == 8 {
            let size = chunkHeader[4..<8].reversed().reduce(0) { $0 << 8 | Int($1) }
            if chunkHeader[0..<4].elementsEqual("data".utf8) {
                return size == 0 || size == 0xFFFF_FFFF ? nil : size
            }
            guard fseeko(file, off_t(size + (size & 1)), SEEK_CUR) == 0 else { return nil }
        }
        return nil
    }

    /// Bytes per frame for the uncompressed libsndfile subtypes, `nil` for compressed ones.
    static func bytesPerFrame(subtype: Int, channelCount: Int) -> Int? {
        let bytesPerSample: Int
        switch subtype {
        case SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8, SF_FORMAT_ULAW, SF_FORMAT_ALAW: bytesPerSample = 1
        case SF_FORMAT_PCM_16: bytesPerSample = 2
        case SF_FORMAT_PCM_24: bytesPerSample = 3
        case SF_FORMAT_PCM_32, SF_FORMAT_FLOAT: bytesPerSample = 4
        case SF_FORMAT_DOUBLE: bytesPerSample = 8
        default: return nil
        }
        return bytesPerSample * channelCount
    }
}

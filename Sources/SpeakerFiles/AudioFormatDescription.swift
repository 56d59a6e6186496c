internal import CSndFile

/// Short human-readable names for libsndfile format codes: "WAV 16-bit PCM", "FLAC", "Ogg Opus".
enum AudioFormatDescription {
    /// The name for an `SF_INFO.format` value (major type | subtype).
    static func name(format: Int32) -> String {
        let major = Int(format) & SF_FORMAT_TYPEMASK
        let subtype = Int(format) & SF_FORMAT_SUBMASK
        switch major {
        case SF_FORMAT_FLAC: return "FLAC"
        case SF_FORMAT_MPEG: return subtype == SF_FORMAT_MPEG_LAYER_III ? "MP3" : "MPEG audio"
        case SF_FORMAT_OGG:
            switch subtype {
            case SF_FORMAT_VORBIS: return "Ogg Vorbis"
            case SF_FORMAT_OPUS: return "Ogg Opus"
            default: return "Ogg \(libraryName(subtype))"
            }
        default:
            let container =
                switch major {
                case SF_FORMAT_WAV, SF_FORMAT_WAVEX: "WAV"
                case SF_FORMAT_RF64: "RF64"
                case SF_FORMAT_W64: "W64"
                case SF_FORMAT_AIFF: "AIFF"
                case SF_FORMAT_CAF: "CAF"
                default: libraryName(major)
                }
            return "\(container) \(encodingName(subtype))"
        }
    }

    private static func encodingName(_ subtype: Int) -> String {
        switch subtype {
        case SF_FORMAT_PCM_S8: "8-bit PCM"
        case SF_FORMAT_PCM_U8: "8-bit unsigned PCM"
        case SF_FORMAT_PCM_16: "16-bit PCM"
        case SF_FORMAT_PCM_24: "24-bit PCM"
        case SF_FORMAT_PCM_32: "32-bit PCM"
        case SF_FORMAT_FLOAT: "32-bit float"
        case SF_FORMAT_DOUBLE: "64-bit float"
        case SF_FORMAT_ULAW: "µ-law"
        case SF_FORMAT_ALAW: "A-law"
        default: libraryName(subtype)
        }
    }

    /// libsndfile's own name for a major type or subtype (`SFC_GET_FORMAT_INFO`), or the hex code.
    private static func libraryName(_ code: Int) -> String {
        var info = SF_FORMAT_INFO(format: Int32(code), name: nil, extension: nil)
        let status = sf_command(nil, Int32(SFC_GET_FORMAT_INFO), &info, Int32(MemoryLayout<SF_FORMAT_INFO>.size))
        if status == 0, let name = info.name { return String(cString: name) }
        return "format 0x" + String(code, radix: 16)
    }
}

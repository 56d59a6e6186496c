#if canImport(Glibc)
import Glibc
#endif

/// A server's TLS identity: its certificate chain and private key, as PEM files (OpenSSL reads them).
///
/// With one, a `WebServer` serves only TLS (https and wss) on its port; a plain HTTP or ws request
/// there fails the TLS handshake (it is not redirected).
public struct TLSIdentity: Sendable, Hashable {
    /// The server's certificate first, then any intermediate certificates (PEM).
    public var certificateChainPath: String
    /// The private key of the server's certificate (PEM, unencrypted).
    public var privateKeyPath: String

    public init(certificateChainPath: String, privateKeyPath: String) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
    }
}

/// Checks of the PEM files given for TLS, so that a missing or wrong file is named in the error
/// (libwebsockets logs only "problem getting cert", and for a client's CA file goes on without it).
enum PEMFile {
    /// What a PEM file must hold.
    enum Content {
        case certificate
        case privateKey

        var what: String {
            switch self {
            case .certificate: "a PEM certificate (-----BEGIN CERTIFICATE-----)"
            case .privateKey: "a PEM private key (-----BEGIN … PRIVATE KEY-----)"
            }
        }

        func isFound(in text: String) -> Bool {
            switch self {
            case .certificate:
                return text.contains("-----BEGIN CERTIFICATE-----")
            case .privateKey:
                // PKCS #8 ("PRIVATE KEY"), RSA or EC ("RSA PRIVATE KEY", "EC PRIVATE KEY"); not encrypted.
                return text.split(separator: "\n").contains {
                    $0.hasPrefix("-----BEGIN ") && $0.hasSuffix("PRIVATE KEY-----") && !$0.contains("ENCRYPTED")
                }
            }
        }
    }

    /// The largest file read: certificate bundles are tens of kilobytes; the system's is about 200 KB.
    static let maximumBytes = 4 << 20

    /// Nil when `path` is a readable file holding `content`; else why not, naming the file.
    static func problem(_ path: String, _ content: Content, role: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "\(role) \(path): cannot read (\(String(cString: strerror(errno))))" }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count < maximumBytes {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return "\(role) \(path): cannot read (\(String(cString: strerror(errno))))"
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[..<count])
        }
        guard content.isFound(in: String(decoding: bytes, as: UTF8.self)) else {
            return "\(role) \(path): expected \(content.what)"
        }
        return nil
    }
}

import Foundation

/// A certificate authority made at test time with the `openssl` command, in a temporary folder, and
/// server certificates it signs: for testing TLS (https, wss) without any fixed key in the repository.
///
/// Keys are P-256 (EC), certificates valid from now for two days. Call `remove()` when done.
public struct TestCertificateAuthority: Sendable {
    /// A server's certificate and private key, PEM files.
    public struct Server: Sendable {
        public let certificate: String
        public let privateKey: String
    }

    /// The folder holding every file.
    public let directory: String
    /// The authority's own (self-signed) certificate, PEM: what a client trusts (`--ca`, `curl --cacert`).
    public var certificate: String { directory + "/ca.pem" }
    private var privateKey: String { directory + "/ca.key" }

    /// Whether `openssl` is on PATH (tools/install-deps.sh installs it).
    public static var isAvailable: Bool { commandPath("openssl") != nil }

    /// Makes the authority's key and certificate in a new temporary folder.
    /// - Throws: `TestCertificateError` when `openssl` is missing or fails (its standard error is kept).
    public init(name: String = "ActiveSpeaker test CA") throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("activespeaker-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        directory = folder.path
        try Self.openssl(in: directory, [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=\(name)",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }

    /// Issues a server certificate signed by this authority.
    /// - Parameters:
    ///   - name: the file name stem (`NAME.pem`, `NAME.key`) and the certificate's common name.
    ///   - subjectAltNames: what the certificate is valid for, as OpenSSL writes it:
    ///     `["IP:127.0.0.1", "DNS:localhost"]` (the default).
    /// - Throws: `TestCertificateError` when `openssl` fails.
    public func issue(_ name: String = "server", subjectAltNames: [String] = ["IP:127.0.0.1", "DNS:localhost"]) throws -> Server {
        let extensions = """
            basicConstraints = critical, CA:FALSE
            keyUsage = critical, digitalSignature
            extendedKeyUsage = serverAuth
            subjectAltName = \(subjectAltNames.joined(separator: ", "))

            """
        try extensions.write(toFile: directory + "/\(name).ext", atomically: true, encoding: .utf8)
        try Self.openssl(in: directory, [
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", "\(name).key", "-out", "\(name).csr", "-subj", "/CN=\(name)",
        ])
        try Self.openssl(in: directory, [
            "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", "\(UInt32.random(in: 1...UInt32.max))",
            "-days", "2", "-extfile", "\(name).ext", "-out", "\(name).pem",
        ])
        return Server(certificate: directory + "/\(name).pem", privateKey: directory + "/\(name).key")
    }

    /// Deletes the folder and everything in it.
    public func remove() { try? FileManager.default.removeItem(atPath: directory) }

    private static func openssl(in directory: String, _ arguments: [String]) throws {
        guard let executable = commandPath("openssl") else {
            throw TestCertificateError(message: "no openssl on PATH (tools/install-deps.sh installs it)")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestCertificateError(message: "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(text)")
        }
    }

    private static func commandPath(_ tool: String) -> String? {
        (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .map { "\($0)/\(tool)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// `openssl` was missing or failed while making test certificates.
public struct TestCertificateError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

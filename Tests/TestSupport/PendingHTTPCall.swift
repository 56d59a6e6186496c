import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One plain HTTP/1.1 request to 127.0.0.1, sent before `init` returns (it is in the server's socket
/// by then) and answered on a thread of its own: for tests that need a call to be waiting at the
/// server while they do something else.
public final class PendingHTTPCall: Sendable {
    /// The status code once answered (0 when the connection failed or closed without a status line).
    private let result = Mutex<Int?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Connects to 127.0.0.1:`port` and writes `method path` with `headers` and `Connection: close`.
    /// - Throws: `POSIXError` when the connection cannot be made.
    public init(port: Int, method: String = "GET", path: String, headers: [String: String] = [:]) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8)
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { break }
            offset += sent
        }
        Thread { [self] in
            var answer: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count <= 0 { break }
                answer += buffer[..<count]
            }
            Glibc.close(fd)
            // "HTTP/1.1 200 OK": the second word.
            let statusLine = String(decoding: answer.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
            result.withLock { $0 = statusLine.count >= 2 ? Int(statusLine[1]) ?? 0 : 0 }
            done.signal()
        }.start()
    }

    /// The status code if the answer has come (the server closed the connection after it), else nil.
    public var status: Int? { result.withLock { $0 } }

    /// Waits for the answer, at most `timeout` seconds; returns its status code (nil: not in time).
    public func wait(timeout: Double = Waiting.defaultTimeout) -> Int? {
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        done.signal()
        return status
    }
}

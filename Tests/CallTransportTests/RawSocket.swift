import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP client on POSIX sockets, for speaking raw HTTP and WebSocket frames to the server.
final class RawSocket {
    let fd: Int32

    /// Connects to `host` (numeric IPv4 or IPv6) and `port`, from the local address `source` (numeric,
    /// any port; nil: the system's choice); nil if the connection fails.
    init?(host: String, port: Int, from source: String? = nil) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else { return nil }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { return nil }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, source, &local.sin_addr) == 1,
                  withUnsafePointer(to: &local, {
                      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                  }) == 0
            else {
                Glibc.close(fd)
                return nil
            }
        }
        guard Glibc.connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            Glibc.close(fd)
            return nil
        }
        self.fd = fd
    }

    deinit { Glibc.close(fd) }

    /// Whether the peer has closed the connection (end of stream or an error is waiting); never blocks.
    var peerClosed: Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, 0) > 0 else { return false }
        if descriptor.revents & Int16(POLLERR | POLLHUP) != 0 { return true }
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) <= 0
    }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    func write(_ text: String) { write(Array(text.utf8)) }

    /// Ends the sending direction (the peer reads end of stream); reading goes on.
    func shutdownWrite() { _ = shutdown(fd, Int32(SHUT_WR)) }

    /// Reads what is available, waiting at most `timeout` seconds; empty at end of stream or timeout.
    func read(timeout: Double) -> [UInt8] {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, Int32(timeout * 1000)) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        return count > 0 ? Array(buffer.prefix(count)) : []
    }

    /// Reads until the peer closes, at most `timeout` seconds in all.
    func readToEnd(timeout: Double) -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        var all: [UInt8] = []
        while Date() < deadline {
            let part = read(timeout: max(0.01, deadline.timeIntervalSinceNow))
            if part.isEmpty { break }
            all += part
        }
        return all
    }

    /// Reads exactly `count` bytes unless the stream ends or `timeout` passes first.
    func read(exactly count: Int, into pending: inout [UInt8], timeout: Double) -> [UInt8]? {
        let deadline = Date().addingTimeInterval(timeout)
        while pending.count < count {
            guard Date() < deadline else { return nil }
            let part = read(timeout: max(0.01, deadline.timeIntervalSinceNow))
            if part.isEmpty { return nil }
            pending += part
        }
        let result = Array(pending.prefix(count))
        pending.removeFirst(count)
        return result
    }
}

/// A parsed HTTP/1.1 response.
struct RawHTTPResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }

    /// Sends one request (with `Connection: close`) and reads the response until the server closes.
    /// - Parameter sendBody: false sends only the head (its `Content-Length` still announces `body`).
    static func exchange(host: String = "127.0.0.1", port: Int, method: String, target: String,
                         headers: [(String, String)] = [], body: [UInt8] = [], sendBody: Bool = true) -> RawHTTPResponse? {
        guard let socket = RawSocket(host: host, port: port) else { return nil }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host.contains(":") ? "[\(host)]" : host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        socket.write(Array(head.utf8) + (sendBody ? body : []))
        return parse(socket.readToEnd(timeout: 10))
    }

    /// Sends `request` exactly as given and reads the response until the server closes.
    static func exchange(host: String = "127.0.0.1", port: Int, raw request: String) -> RawHTTPResponse? {
        guard let socket = RawSocket(host: host, port: port) else { return nil }
        socket.write(request)
        return parse(socket.readToEnd(timeout: 10))
    }

    static func parse(_ bytes: [UInt8]) -> RawHTTPResponse? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else { return nil }
        let head = String(decoding: bytes[..<end], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return RawHTTPResponse(status: status, headers: headers, body: Array(bytes[(end + 4)...]))
    }
}

/// A WebSocket client on a raw socket that can send what `WebSocketClient` never would:
/// fragments, binary frames, invalid UTF-8, half a frame.
final class RawWebSocket {
    let socket: RawSocket
    private var pending: [UInt8] = []

    /// Connects and performs the upgrade on `path`; nil if the server does not answer 101.
    init?(host: String = "127.0.0.1", port: Int, path: String = "/v1/signal") {
        guard let socket = RawSocket(host: host, port: port) else { return nil }
        self.socket = socket
        socket.write("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let deadline = Date().addingTimeInterval(10)
        let separator: [UInt8] = [13, 10, 13, 10]
        while Date() < deadline {
            if let end = pending.indices.first(where: { pending[$0...].starts(with: separator) }) {
                let head = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeFirst(end + 4)
                guard head.hasPrefix("HTTP/1.1 101") else { return nil }
                return
            }
            let part = socket.read(timeout: 1)
            if part.isEmpty && pending.isEmpty { continue }
            pending += part
        }
        return nil
    }

    /// Sends one frame, masked as a client must unless `masked` is false, or only its first `truncateTo` bytes.
    func sendFrame(opcode: UInt8, final: Bool, payload: [UInt8], masked: Bool = true, truncateTo limit: Int? = nil) {
        var frame: [UInt8] = [(final ? 0x80 : 0) | opcode]
        let maskBit: UInt8 = masked ? 0x80 : 0
        if payload.count < 126 {
            frame.append(maskBit | UInt8(payload.count))
        } else if payload.count <= 0xFFFF {
            frame += [maskBit | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        } else {
            frame.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((payload.count >> shift) & 0xFF)) }
        }
        if masked {
            let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
            frame += mask
            frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        } else {
            frame += payload
        }
        socket.write(limit.map { Array(frame.prefix($0)) } ?? frame)
    }

    /// Reads frames until the stream ends, at most `timeout` seconds: every frame's opcode, in order.
    func readOpcodesToEnd(timeout: Double = 10) -> [UInt8] {
        var opcodes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline, let frame = readFrame(timeout: max(0.01, deadline.timeIntervalSinceNow)) {
            opcodes.append(frame.opcode)
        }
        return opcodes
    }

    /// Reads the next frame from the server: (opcode, payload); nil at end of stream or timeout.
    func readFrame(timeout: Double = 10) -> (opcode: UInt8, payload: [UInt8])? {
        guard let head = socket.read(exactly: 2, into: &pending, timeout: timeout) else { return nil }
        var length = Int(head[1] & 0x7F)
        if length == 126 {
            guard let bytes = socket.read(exactly: 2, into: &pending, timeout: timeout) else { return nil }
            length = Int(bytes[0]) << 8 | Int(bytes[1])
        } else if length == 127 {
            guard let bytes = socket.read(exactly: 8, into: &pending, timeout: timeout) else { return nil }
            length = bytes.reduce(0) { $0 << 8 | Int($1) }
        }
        guard let payload = socket.read(exactly: length, into: &pending, timeout: timeout) else { return nil }
        return (head[0] & 0x0F, payload)
    }

    /// Reads frames until a close frame and returns its code (nil if the stream ends first).
    func readCloseCode(timeout: Double = 10) -> UInt16? {
        while let frame = readFrame(timeout: timeout) {
            if frame.opcode == 8 {
                return frame.payload.count >= 2 ? UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) : 1005
            }
        }
        return nil
    }
}

/// Sends a WebSocket upgrade request for `path` and returns the status line and headers of the answer
/// (nil if none comes within 10 s).
func upgradeAnswer(port: Int, path: String) -> RawHTTPResponse? {
    guard let socket = RawSocket(host: "127.0.0.1", port: port) else { return nil }
    socket.write("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    let deadline = Date().addingTimeInterval(10)
    var bytes: [UInt8] = []
    while Date() < deadline {
        if let response = RawHTTPResponse.parse(bytes),
           response.status == 101 || response.body.count >= Int(response.headers["content-length"] ?? "0") ?? 0 {
            return response
        }
        let part = socket.read(timeout: max(0.01, deadline.timeIntervalSinceNow))
        if part.isEmpty { break }
        bytes += part
    }
    return RawHTTPResponse.parse(bytes)
}

/// A listening socket on 127.0.0.1 that never accepts: connections complete in the kernel's backlog
/// and then hear nothing, like an unresponsive server.
final class SilentListener {
    let fd: Int32
    let port: Int

    init?() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            Glibc.close(fd)
            return nil
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { Glibc.close(fd) }
}

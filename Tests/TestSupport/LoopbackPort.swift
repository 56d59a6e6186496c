import Foundation

/// TCP ports of 127.0.0.1 for tests: the kernel's choice for a socket bound to port 0.
public enum LoopbackPort {
    /// A TCP socket bound to a free port of 127.0.0.1 (listening when `listening`); the caller closes it.
    public static func bind(listening: Bool) throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackPortError(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, length) == 0 && (!listening || listen(descriptor, 1) == 0)
                    && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw LoopbackPortError(message: "cannot bind 127.0.0.1: \(reason)")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A port of 127.0.0.1 free a moment ago (nothing listens on it now).
    public static func free() throws -> Int {
        let (descriptor, port) = try bind(listening: false)
        close(descriptor)
        return port
    }
}

public struct LoopbackPortError: Error, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and a UDP port: who sent a datagram, or where to send one.
///
/// Stored as plain values (family, 16 address bytes in network order, port, IPv6 scope), so equality
/// and hashing are a few integer operations and a value can key a dictionary on the packet path.
/// An IPv4 address fills the first 4 of the 16 bytes; the rest are zero.
///
/// `description` is `HOST:PORT` with a numeric host, `[HOST]:PORT` for IPv6 (`127.0.0.1:5004`,
/// `[::1]:5004`), the form `UDPSocket(address:)` and `SocketAddress(_:)` accept.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address family.
    public enum Family: Sendable, Hashable {
        case ipv4
        case ipv6
    }

    /// IPv4 or IPv6.
    public let family: Family
    /// Address bytes 0…7 and 8…15 in network order, as they lie in memory.
    private let high: UInt64, low: UInt64
    /// The port in host order.
    private let portNumber: UInt16
    /// The IPv6 scope (interface index) of a link-local address; 0 otherwise.
    public let scopeID: UInt32

    /// The port, 0…65535.
    public var port: Int { Int(portNumber) }
    /// True for an IPv6 address.
    public var isIPv6: Bool { family == .ipv6 }

    /// The unspecified address (`0.0.0.0` or `::`) with port 0.
    init(family: Family) {
        self.family = family
        high = 0
        low = 0
        portNumber = 0
        scopeID = 0
    }

    /// Makes an address from a numeric host (`192.0.2.1`, `::1`, `fe80::1%eth0`) or a name the resolver
    /// knows (`localhost`; the first address `getaddrinfo` returns).
    ///
    /// The corresponding C functions are `inet_pton` and, for names, `getaddrinfo`.
    ///
    /// - Parameters:
    ///   - host: A numeric IPv4 or IPv6 address (without brackets) or a host name.
    ///   - port: 0…65535.
    /// - Returns: Nil for a port out of range or a host that does not resolve.
    public init?(host: String, port: Int) {
        guard (0...65535).contains(port), !host.isEmpty else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr = v4
            address.sin_port = UInt16(port).bigEndian
            self.init(ipv4: address)
            return
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else { return nil }
        defer { freeaddrinfo(list) }
        guard let address = SocketAddress(info.pointee.ai_addr) else { return nil }
        self = address
    }

    /// Makes an address from a numeric host only (`192.0.2.1`, `::1`, `fe80::1%eth0`): never asks a
    /// resolver, so it never blocks.
    ///
    /// The corresponding C functions are `inet_pton` and `getaddrinfo` with `AI_NUMERICHOST`.
    /// - Returns: Nil for a port out of range or a host that is not a numeric address.
    public init?(numericHost host: String, port: Int) {
        guard (0...65535).contains(port), !host.isEmpty else { return nil }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let info = list else { return nil }
        defer { freeaddrinfo(list) }
        guard let address = SocketAddress(info.pointee.ai_addr) else { return nil }
        self = address
    }

    /// Parses `HOST:PORT` or `[IPV6]:PORT` with a numeric host (`127.0.0.1:5004`, `[::1]:5004`); never
    /// asks a resolver.
    public init?(numeric text: String) {
        guard let (host, port) = try? UDPSocket.split(text), let number = Int(port) else { return nil }
        self.init(numericHost: host, port: number)
    }

    /// Parses `HOST:PORT` or `[IPV6]:PORT` (`127.0.0.1:5004`, `[::1]:5004`, `localhost:5004`).
    /// - Returns: Nil if the text is malformed, the port is out of range or the host does not resolve.
    public init?(_ text: String) {
        guard let (host, port) = try? UDPSocket.split(text), let number = Int(port) else { return nil }
        self.init(host: host, port: number)
    }

    /// The numeric host: `127.0.0.1`, `::1`, `fe80::1%2` (an IPv6 scope as its interface index).
    ///
    /// The corresponding C function is `inet_ntop`.
    public var host: String {
        // INET6_ADDRSTRLEN is 46 bytes including the terminating zero.
        var text = [CChar](repeating: 0, count: 64)
        var bytes = (high, low)
        let ok = withUnsafeBytes(of: &bytes) { raw in
            inet_ntop(family == .ipv6 ? AF_INET6 : AF_INET, raw.baseAddress, &text, socklen_t(text.count)) != nil
        }
        guard ok else { return "?" }
        let numeric = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return scopeID == 0 ? numeric : "\(numeric)%\(scopeID)"
    }

    /// `HOST:PORT`, or `[HOST]:PORT` for IPv6, with a numeric host.
    public var description: String {
        family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    // MARK: sockaddr conversions (C types stay inside SpeakerIO)

    private init(ipv4 address: sockaddr_in) {
        family = .ipv4
        var bytes: (UInt64, UInt64) = (0, 0)
        var v4 = address.sin_addr
        withUnsafeMutableBytes(of: &bytes) { target in
            withUnsafeBytes(of: &v4) { target.copyMemory(from: $0) }
        }
        (high, low) = bytes
        portNumber = UInt16(bigEndian: address.sin_port)
        scopeID = 0
    }

    private init(ipv6 address: sockaddr_in6) {
        family = .ipv6
        var bytes = address.sin6_addr
        (high, low) = withUnsafeBytes(of: &bytes) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        portNumber = UInt16(bigEndian: address.sin6_port)
        scopeID = address.sin6_scope_id
    }

    /// The address in a `sockaddr` of family `AF_INET` or `AF_INET6`; nil for other families.
    init?(_ pointer: UnsafePointer<sockaddr>?) {
        guard let pointer else { return nil }
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            self.init(ipv4: UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in.self))
        case AF_INET6:
            self.init(ipv6: UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in6.self))
        default:
            return nil
        }
    }

    /// The address in a `sockaddr_storage` filled by `recvfrom` or `getsockname`.
    init?(storage: sockaddr_storage) {
        var storage = storage
        let address = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) }
        }
        guard let address else { return nil }
        self = address
    }

    /// Calls `body` with the address as a `sockaddr` and its length. Allocates nothing.
    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        switch family {
        case .ipv4:
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = portNumber.bigEndian
            var bytes = (high, low)
            withUnsafeBytes(of: &bytes) { source in
                withUnsafeMutableBytes(of: &address.sin_addr) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[..<4])) }
            }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6:
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = portNumber.bigEndian
            address.sin6_scope_id = scopeID
            var bytes = (high, low)
            withUnsafeBytes(of: &bytes) { source in
                withUnsafeMutableBytes(of: &address.sin6_addr) { $0.copyMemory(from: source) }
            }
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }
}

extension SocketAddress {
    /// The same host with another port; `withPort(0)` compares hosts alone.
    public func withPort(_ port: Int) -> SocketAddress {
        precondition((0...65535).contains(port), "port out of range")
        return SocketAddress(copying: self, port: UInt16(port))
    }

    private init(copying other: SocketAddress, port: UInt16) {
        family = other.family
        high = other.high
        low = other.low
        portNumber = port
        scopeID = other.scopeID
    }
}

extension SocketAddress {
    /// True for a loopback address: `127.0.0.0/8`, `::1`, or an IPv4-mapped `::ffff:127.x.y.z`.
    public var isLoopback: Bool {
        let address = unmapped
        if address.family == .ipv4 { return address.byte(0) == 127 }
        return address.high == 0 && address.low == UInt64(1).bigEndian
    }

    /// True for the unspecified address: `0.0.0.0`, `::` or `::ffff:0.0.0.0`. Linux delivers a datagram
    /// sent to it to the sending host itself.
    public var isUnspecified: Bool {
        let address = unmapped
        return address.high == 0 && address.low == 0
    }

    /// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, as a dual-stack socket reports an IPv4 peer) as the
    /// IPv4 address it carries, with the same port; any other address unchanged.
    public var unmapped: SocketAddress {
        guard family == .ipv6, high == 0, byte(8) == 0, byte(9) == 0, byte(10) == 0xFF, byte(11) == 0xFF else { return self }
        var ipv4: UInt64 = 0
        withUnsafeMutableBytes(of: &ipv4) { target in
            for index in 0..<4 { target[index] = byte(12 + index) }
        }
        return SocketAddress(family: .ipv4, high: ipv4, low: 0, portNumber: portNumber, scopeID: 0)
    }

    /// Address byte `index` (0…15) in network order.
    private func byte(_ index: Int) -> UInt8 {
        withUnsafeBytes(of: index < 8 ? high : low) { $0[index % 8] }
    }

    private init(family: Family, high: UInt64, low: UInt64, portNumber: UInt16, scopeID: UInt32) {
        self.family = family
        self.high = high
        self.low = low
        self.portNumber = portNumber
        self.scopeID = scopeID
    }

    /// The addresses of this host's network interfaces (IPv4 and IPv6, port 0) as they are now; empty if
    /// they cannot be listed.
    ///
    /// The corresponding C function is `getifaddrs`.
    static func interfaceAddresses() -> [SocketAddress] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return [] }
        defer { freeifaddrs(list) }
        var addresses: [SocketAddress] = []
        var entry = list
        while let current = entry {
            if let address = SocketAddress(UnsafePointer(current.pointee.ifa_addr)) { addresses.append(address.withPort(0)) }
            entry = current.pointee.ifa_next
        }
        return addresses
    }
}

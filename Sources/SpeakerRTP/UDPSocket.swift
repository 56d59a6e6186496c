#if canImport(Glibc)
import Glibc
#endif
import SpeakerIO

/// A bound UDP socket (IPv4 or IPv6) that receives and sends without blocking, for RTP.
///
/// Addresses are `HOST:PORT`: `127.0.0.1:5004`, `[::1]:5004`, `localhost:5004`, `0.0.0.0:5004`,
/// `[::]:5004`; port 0 picks a free port (see `port`). The receive buffer is enlarged to 4 MiB (as far
/// as the system allows) so that bursts wait in the kernel while events are written. Closed in `deinit`.
///
/// A socket talks to peers of its own family: an IPv4 socket to IPv4 addresses, an IPv6 socket to IPv6
/// addresses (no IPv4-mapped addresses are produced or expected). One thread receives, one thread
/// sends (they may differ: `recvfrom` and `sendto` on one descriptor are thread-safe in the kernel).
public final class UDPSocket: Sendable {
    // Sendable: every stored property is an immutable value; the descriptor is used only through
    // system calls, which the kernel serialises.
    /// The address as given.
    public let address: String
    /// The bound port (the system's choice for port 0).
    public let port: Int
    /// The socket's file descriptor, for `poll`.
    public let descriptor: Int32
    /// True for an IPv6 socket.
    public let isIPv6: Bool
    /// The bound address (`0.0.0.0` or `::` for a wildcard bind), with the bound port.
    public let localAddress: SocketAddress

    /// Binds a socket to `address`.
    /// - Throws: `SpeakerIOError` with subject `.address(address)`: `.invalidAddress` for a malformed
    ///   address or unknown host, `.socketFailed` if `socket` or `bind` fails (port in use, …).
    public init(address: String) throws {
        let (host, portText) = try Self.split(address)
        self.address = address
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host.isEmpty ? nil : host, portText, &hints, &list)
        guard resolved == 0, let info = list else {
            throw SpeakerIOError(
                .address(address), .invalidAddress("cannot resolve \(host.isEmpty ? "the host" : host)"),
                library: "system", code: Int(resolved), libraryMessage: String(cString: gai_strerror(resolved)))
        }
        defer { freeaddrinfo(list) }
        let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard fd >= 0 else { throw Self.failure(address, "socket") }
        var size: Int32 = 4 << 20
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let error = Self.failure(address, "bind")
            close(fd)
            throw error
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let bound = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        isIPv6 = info.pointee.ai_family == AF_INET6
        let requested = SocketAddress(info.pointee.ai_addr)
        if bound == 0, let local = SocketAddress(storage: storage) {
            localAddress = local
        } else {
            localAddress = requested ?? SocketAddress(family: isIPv6 ? .ipv6 : .ipv4)
        }
        port = localAddress.port
        descriptor = fd
    }

    deinit {
        close(descriptor)
    }

    /// Receives one datagram into `buffer` without waiting.
    /// - Returns: Its length (a longer datagram is cut to `buffer.count`), or nil if none is waiting.
    /// - Complexity: One system call. Allocates nothing.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        while true {
            let count = recv(descriptor, buffer.baseAddress, buffer.count, 0)
            if count >= 0 { return count }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Receives one datagram into `buffer` without waiting, and who sent it.
    ///
    /// The corresponding C function is `recvfrom`.
    ///
    /// - Parameters:
    ///   - buffer: Receives the datagram (a longer one is cut to `buffer.count`).
    ///   - address: Set to the sender's address when a datagram is returned; untouched otherwise.
    /// - Returns: The datagram's length, or nil if none is waiting.
    /// - Complexity: One system call. Allocates nothing.
    public func receive(into buffer: UnsafeMutableRawBufferPointer, from address: inout SocketAddress) -> Int? {
        var storage = sockaddr_storage()
        while true {
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let count = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    recvfrom(descriptor, buffer.baseAddress, buffer.count, 0, $0, &length)
                }
            }
            if count >= 0 {
                if let sender = SocketAddress(storage: storage) { address = sender }
                return count
            }
            if errno == EINTR { continue }
            return nil
        }
    }

    /// Sends one datagram to `address` without waiting.
    ///
    /// The corresponding C function is `sendto`.
    ///
    /// - Parameters:
    ///   - bytes: The datagram (at most 65507 bytes over IPv4).
    ///   - address: The receiver; of the socket's family.
    /// - Returns: True if the kernel took the whole datagram; false if it would have to wait (`EAGAIN`:
    ///   the send buffer is full), the address is of the other family, the network is unreachable, or
    ///   the peer's port refused an earlier datagram (`ECONNREFUSED`, reported once). Nothing is counted.
    /// - Complexity: One system call. Allocates nothing.
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to address: SocketAddress) -> Bool {
        guard address.isIPv6 == isIPv6 else { return false }
        while true {
            let sent = address.withSockaddr { pointer, length in
                sendto(descriptor, bytes.baseAddress, bytes.count, 0, pointer, length)
            }
            if sent >= 0 { return sent == bytes.count }
            if errno == EINTR { continue }
            return false
        }
    }

    /// Waits until one of `receivers` has a datagram, at most `timeout` seconds.
    /// - Returns: False on timeout.
    public static func wait(_ receivers: [UDPSocket], timeout: Double) -> Bool {
        var descriptors = receivers.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
        let milliseconds = Int32(max(0, min(timeout, 60)) * 1000 + 0.999)
        return poll(&descriptors, nfds_t(descriptors.count), milliseconds) > 0
    }

    /// Splits `HOST:PORT` / `[V6]:PORT`.
    static func split(_ address: String) throws -> (host: String, port: String) {
        let host: Substring, port: Substring
        if address.hasPrefix("[") {
            guard let close = address.firstIndex(of: "]"), address[address.index(after: close)...].hasPrefix(":") else {
                throw SpeakerIOError(.address(address), .invalidAddress("expected [IPv6]:PORT"))
            }
            host = address[address.index(after: address.startIndex)..<close]
            port = address[address.index(close, offsetBy: 2)...]
        } else {
            guard let colon = address.lastIndex(of: ":"), address.firstIndex(of: ":") == colon else {
                throw SpeakerIOError(.address(address), .invalidAddress("expected HOST:PORT (IPv6 as [ADDRESS]:PORT)"))
            }
            host = address[..<colon]
            port = address[address.index(after: colon)...]
        }
        guard let number = Int(port), (0...65535).contains(number) else {
            throw SpeakerIOError(.address(address), .invalidAddress("port must be 0…65535"))
        }
        return (String(host), String(number))
    }

    private static func failure(_ address: String, _ operation: String) -> SpeakerIOError {
        let code = errno
        return SpeakerIOError(
            .address(address), .socketFailed(operation: operation), library: "system", code: Int(code),
            libraryMessage: String(cString: strerror(code)))
    }
}

extension UDPSocket {
    /// The addresses at which a datagram reaches one bound socket, for a relay that must never send to
    /// itself nor take its own datagrams back.
    ///
    /// That is the bound port on: the bound host; the unspecified address (`0.0.0.0`, `::`: Linux delivers
    /// a datagram sent there to the sending host); and, for a wildcard bind, every loopback address
    /// (`127.0.0.0/8`, `::1`) and each address of the host's interfaces as listed when the value was made.
    /// IPv4-mapped addresses count as the IPv4 address they carry. The answer errs on the side of yes:
    /// `[::1]:PORT` counts for a wildcard IPv4 socket, though that socket cannot send there.
    public struct OwnAddresses: Sendable, Hashable {
        /// The bound port.
        public let port: Int
        /// The bound host (port 0); the unspecified address for a wildcard bind.
        public let host: SocketAddress
        /// For a wildcard bind, the host's interface addresses (port 0); empty otherwise.
        public let interfaceHosts: Set<SocketAddress>

        /// - Parameters:
        ///   - bound: The socket's bound address, port included (`UDPSocket.localAddress`).
        ///   - interfaceHosts: The host's interface addresses, used for a wildcard bind; their ports are ignored.
        public init(bound: SocketAddress, interfaceHosts: some Sequence<SocketAddress> = [SocketAddress]()) {
            port = bound.port
            host = bound.unmapped.withPort(0)
            self.interfaceHosts = host.isUnspecified ? Set(interfaceHosts.map { $0.unmapped.withPort(0) }) : []
        }

        /// True when a datagram sent to `address` arrives on the socket.
        /// - Complexity: O(1): a port comparison decides for every other port. Allocates nothing.
        public func contains(_ address: SocketAddress) -> Bool {
            guard address.port == port else { return false }
            let candidate = address.unmapped.withPort(0)
            if candidate.isUnspecified || candidate == host { return true }
            return host.isUnspecified && (candidate.isLoopback || interfaceHosts.contains(candidate))
        }
    }

    /// Where datagrams reach this socket now (see `OwnAddresses`). For a wildcard bind this lists the
    /// host's interfaces (`getifaddrs`): call it when a new peer is added, not per datagram.
    public func ownAddresses() -> OwnAddresses {
        OwnAddresses(bound: localAddress, interfaceHosts: localAddress.isUnspecified ? SocketAddress.interfaceAddresses() : [])
    }
}

import Foundation
import SpeakerIO
import SpeakerRTP
import Testing

@Suite("UDP socket")
struct UDPSocketTests {
    /// Sends `bytes` to the receiver's port on loopback.
    static func send(_ bytes: [UInt8], to port: Int, ipv6: Bool) throws {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        let sent: Int
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            address.sin6_addr = in6addr_loopback
            sent = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            sent = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        #expect(sent == bytes.count)
    }

    @Test("binds and receives", arguments: ["127.0.0.1:0", "[::1]:0", "localhost:0"])
    func receives(address: String) throws {
        let receiver = try UDPSocket(address: address)
        #expect(receiver.port > 0)
        let packet = RTPBuilder.packet(sequence: 7)
        try Self.send(packet, to: receiver.port, ipv6: receiver.isIPv6)
        #expect(UDPSocket.wait([receiver], timeout: 2))
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = buffer.withUnsafeMutableBytes { receiver.receive(into: $0) }
        #expect(count == packet.count)
        #expect(Array(buffer[..<packet.count]) == packet)
        #expect(buffer.withUnsafeMutableBytes { receiver.receive(into: $0) } == nil, "nothing else is waiting")
    }

    @Test("rejects bad addresses", arguments: ["5004", "127.0.0.1", "127.0.0.1:70000", "[::1:5004", "::1:5004", "no.such.host.invalid:5004"])
    func rejects(address: String) {
        #expect(throws: SpeakerIOError.self) { try UDPSocket(address: address) }
    }

    @Test func aPortInUseIsAClearError() throws {
        let first = try UDPSocket(address: "127.0.0.1:0")
        let error = #expect(throws: SpeakerIOError.self) { try UDPSocket(address: "127.0.0.1:\(first.port)") }
        #expect(error?.kind == .socketFailed(operation: "bind"))
        #expect(error?.description.hasPrefix("127.0.0.1:\(first.port): bind failed (system: ") == true)
    }

    @Test("sends and receives with the sender's address", arguments: [("127.0.0.1", false), ("::1", true)])
    func sendsAndReceivesFrom(host: String, ipv6: Bool) throws {
        let bracketed = ipv6 ? "[\(host)]" : host
        let server = try UDPSocket(address: "\(bracketed):0")
        let client = try UDPSocket(address: "\(bracketed):0")
        #expect(server.isIPv6 == ipv6 && client.isIPv6 == ipv6)
        #expect(client.localAddress == SocketAddress(host: host, port: client.port))
        let serverAddress = try #require(SocketAddress(host: host, port: server.port))
        let packet = RTPBuilder.packet(sequence: 9)
        #expect(packet.withUnsafeBytes { client.send($0, to: serverAddress) })
        #expect(UDPSocket.wait([server], timeout: 2))
        var buffer = [UInt8](repeating: 0, count: 2048)
        var sender = SocketAddress(host: "192.0.2.1", port: 1)!
        let count = buffer.withUnsafeMutableBytes { server.receive(into: $0, from: &sender) }
        #expect(count == packet.count)
        #expect(Array(buffer[..<packet.count]) == packet)
        #expect(sender == SocketAddress(host: host, port: client.port))
        #expect(sender.host == host && sender.port == client.port && sender.isIPv6 == ipv6)
        #expect(sender.description == "\(bracketed):\(client.port)")

        // The reply goes back to the address the datagram came from.
        let reply: [UInt8] = [1, 2, 3]
        #expect(reply.withUnsafeBytes { server.send($0, to: sender) })
        #expect(UDPSocket.wait([client], timeout: 2))
        var from = sender
        #expect(buffer.withUnsafeMutableBytes { client.receive(into: $0, from: &from) } == 3)
        #expect(Array(buffer[..<3]) == reply && from == serverAddress)
        let before = from
        #expect(buffer.withUnsafeMutableBytes { client.receive(into: $0, from: &from) } == nil)
        #expect(from == before, "no datagram leaves the address untouched")
    }

    @Test func aSocketDoesNotSendToTheOtherFamily() throws {
        let v4 = try UDPSocket(address: "127.0.0.1:0")
        let v6 = try UDPSocket(address: "[::1]:0")
        let bytes: [UInt8] = [0x80]
        #expect(!bytes.withUnsafeBytes { v4.send($0, to: v6.localAddress) })
        #expect(!bytes.withUnsafeBytes { v6.send($0, to: v4.localAddress) })
    }

    @Test func socketAddressesParsePrintAndHash() throws {
        let v4 = try #require(SocketAddress(host: "192.0.2.7", port: 5004))
        #expect(v4.family == .ipv4 && v4.host == "192.0.2.7" && v4.port == 5004 && v4.description == "192.0.2.7:5004")
        let v6 = try #require(SocketAddress(host: "2001:db8::1", port: 65535))
        #expect(v6.family == .ipv6 && v6.host == "2001:db8::1" && v6.description == "[2001:db8::1]:65535")
        #expect(SocketAddress("[2001:db8::1]:65535") == v6)
        #expect(SocketAddress("192.0.2.7:5004") == v4)
        #expect(SocketAddress("localhost:80").map { $0.host == "127.0.0.1" || $0.host == "::1" } == true)
        #expect(SocketAddress(host: "192.0.2.7", port: 5005) != v4)
        #expect(SocketAddress(host: "192.0.2.8", port: 5004) != v4)
        #expect(Set([v4, v6, SocketAddress(host: "192.0.2.7", port: 5004)!]).count == 2)
        #expect(SocketAddress(host: "192.0.2.7", port: 70000) == nil)
        #expect(SocketAddress(host: "no.such.host.invalid", port: 1) == nil)
        #expect(SocketAddress("::1:5004") == nil)
    }

    @Test func loopbackUnspecifiedAndMappedAddresses() throws {
        for host in ["127.0.0.1", "127.255.0.3", "::1", "::ffff:127.0.0.1"] {
            #expect(SocketAddress(host: host, port: 1)?.isLoopback == true, "\(host)")
        }
        for host in ["128.0.0.1", "126.255.255.255", "::2", "10.0.0.1", "::ffff:10.0.0.1", "0.0.0.0"] {
            #expect(SocketAddress(host: host, port: 1)?.isLoopback == false, "\(host)")
        }
        for host in ["0.0.0.0", "::", "::ffff:0.0.0.0"] { #expect(SocketAddress(host: host, port: 1)?.isUnspecified == true, "\(host)") }
        for host in ["0.0.0.1", "::1", "10.0.0.0"] { #expect(SocketAddress(host: host, port: 1)?.isUnspecified == false, "\(host)") }
        #expect(SocketAddress(host: "::ffff:192.0.2.1", port: 5004)?.unmapped == SocketAddress(host: "192.0.2.1", port: 5004))
        let v6 = try #require(SocketAddress(host: "2001:db8::ffff:c000:201", port: 5004))
        #expect(v6.unmapped == v6)
    }

    /// Receives one datagram within 2 s and returns its first byte.
    static func firstByte(_ socket: UDPSocket) -> UInt8? {
        guard UDPSocket.wait([socket], timeout: 2) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 64)
        guard let count = buffer.withUnsafeMutableBytes({ socket.receive(into: $0) }), count > 0 else { return nil }
        return buffer[0]
    }

    @Test func aSpecificallyBoundSocketIsReachedAtItsHostAndTheUnspecifiedAddress() throws {
        let socket = try UDPSocket(address: "127.0.0.1:0")
        let own = socket.ownAddresses()
        let sender = try UDPSocket(address: "127.0.0.1:0")
        let port = socket.port
        for (index, host) in ["127.0.0.1", "0.0.0.0"].enumerated() {
            let address = try #require(SocketAddress(host: host, port: port))
            #expect(own.contains(address), "\(address)")
            #expect([UInt8(index)].withUnsafeBytes { sender.send($0, to: address) })
            #expect(Self.firstByte(socket) == UInt8(index), "\(address) does not reach the socket")
        }
        // Another loopback address does not reach a socket bound to 127.0.0.1: the datagram sent right
        // after it is the next one to arrive.
        let other = try #require(SocketAddress(host: "127.0.0.2", port: port))
        #expect(!own.contains(other))
        // (From another socket: a port that refuses may fail the sender's next send.)
        let stray = try UDPSocket(address: "127.0.0.1:0")
        _ = [UInt8(7)].withUnsafeBytes { stray.send($0, to: other) }
        #expect([UInt8(8)].withUnsafeBytes { sender.send($0, to: socket.localAddress) })
        #expect(Self.firstByte(socket) == 8)
        #expect(!own.contains(socket.localAddress.withPort(port == 65535 ? 1 : port + 1)))
        #expect(!own.contains(try #require(SocketAddress(host: "192.0.2.1", port: port))))
    }

    /// Every address a wildcard-bound socket counts as its own (loopback, the interfaces' IPv4 addresses)
    /// does reach it.
    @Test func aWildcardBoundSocketIsReachedAtEveryAddressItCountsAsItsOwn() throws {
        let socket = try UDPSocket(address: "0.0.0.0:0")
        let own = socket.ownAddresses()
        let sender = try UDPSocket(address: "0.0.0.0:0")
        let hosts = [SocketAddress(host: "127.0.0.1", port: 0)!, SocketAddress(host: "127.0.0.2", port: 0)!]
            + own.interfaceHosts.filter { $0.family == .ipv4 }.sorted { $0.description < $1.description }
        #expect(own.interfaceHosts.contains(SocketAddress(host: "127.0.0.1", port: 0)!), "getifaddrs lists lo")
        for (index, host) in hosts.enumerated() {
            let address = host.withPort(socket.port)
            #expect(own.contains(address), "\(address)")
            #expect([UInt8(index)].withUnsafeBytes { sender.send($0, to: address) })
            #expect(Self.firstByte(socket) == UInt8(index), "\(address) does not reach the socket")
        }
        #expect(!own.contains(SocketAddress(host: "192.0.2.1", port: socket.port)!))
        #expect(!own.contains(SocketAddress(host: "127.0.0.1", port: socket.port == 65535 ? 1 : socket.port + 1)!))
    }
}

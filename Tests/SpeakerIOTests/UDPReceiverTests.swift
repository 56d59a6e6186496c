import Foundation
import SpeakerIO
import Testing

@Suite("UDP receiver")
struct UDPReceiverTests {
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
        let receiver = try UDPReceiver(address: address)
        #expect(receiver.port > 0)
        let packet = RTPBuilder.packet(sequence: 7)
        try Self.send(packet, to: receiver.port, ipv6: receiver.isIPv6)
        #expect(UDPReceiver.wait([receiver], timeout: 2))
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = buffer.withUnsafeMutableBytes { receiver.receive(into: $0) }
        #expect(count == packet.count)
        #expect(Array(buffer[..<packet.count]) == packet)
        #expect(buffer.withUnsafeMutableBytes { receiver.receive(into: $0) } == nil, "nothing else is waiting")
    }

    @Test("rejects bad addresses", arguments: ["5004", "127.0.0.1", "127.0.0.1:70000", "[::1:5004", "::1:5004", "no.such.host.invalid:5004"])
    func rejects(address: String) {
        #expect(throws: SpeakerIOError.self) { try UDPReceiver(address: address) }
    }

    @Test func aPortInUseIsAClearError() throws {
        let first = try UDPReceiver(address: "127.0.0.1:0")
        let error = #expect(throws: SpeakerIOError.self) { try UDPReceiver(address: "127.0.0.1:\(first.port)") }
        #expect(error?.kind == .socketFailed(operation: "bind"))
        #expect(error?.description.hasPrefix("127.0.0.1:\(first.port): bind failed (system: ") == true)
    }
}

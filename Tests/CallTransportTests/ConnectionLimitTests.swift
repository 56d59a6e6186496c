import Foundation
@testable import CallTransport
import Testing
import TestSupport

/// Hardening item 3: 500 idle or slowloris connections (the header pool was 256, its timeout 10 s)
/// delayed every legitimate request by 8–10 s. Peers are told apart by their loopback source address
/// (all of 127.0.0.0/8 reaches this host).
@Suite("Connection limits", .serialized)
struct ConnectionLimitTests {
    /// Opens `count` connections from `source`; every other one sends half a request's headers.
    static func slowloris(_ port: Int, from source: String, count: Int) -> [RawSocket] {
        (0..<count).compactMap { index in
            let socket = RawSocket(host: "127.0.0.1", port: port, from: source)
            if index % 2 == 1 { socket?.write("GET /v1/health HTTP/1.1\r\nHost: x\r\n") }
            return socket
        }
    }

    @Test("300 slow connections from one address: 64 are held, the rest closed, and others are served at once")
    func slowPeersCannotStarveOthers() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let attackers = Self.slowloris(server.port, from: "127.0.0.2", count: 300)
        try #require(attackers.count == 300, "127.0.0.2 is not usable as a source address here")
        // The server closes every connection past the limit as soon as it accepts it.
        #expect(Waiting.until { attackers.count { !$0.peerClosed } == 64 }, "\(attackers.count { !$0.peerClosed }) still open")
        let response = try #require(RawHTTPResponse.exchange(port: server.port, method: "GET", target: "/v1/health"))
        #expect(response.status == 200)
        // Served without waiting for the slow peers to time out: the 64 are still open after the answer.
        #expect(attackers.count { !$0.peerClosed } == 64)
        // Another address has its own 64.
        let more = Self.slowloris(server.port, from: "127.0.0.3", count: 80)
        #expect(Waiting.until { more.count { !$0.peerClosed } == 64 })
    }

    @Test("Connections that end give their place back")
    func closedConnectionsAreUncounted() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        for round in 1...3 {
            var held = Self.slowloris(server.port, from: "127.0.0.4", count: 64)
            #expect(Waiting.until { held.count { !$0.peerClosed } == 64 }, "round \(round)")
            held.removeAll()
            // The server has seen all 64 close once a new connection from the address is admitted and served.
            let answered = Waiting.until {
                guard let socket = RawSocket(host: "127.0.0.1", port: server.port, from: "127.0.0.4") else { return false }
                socket.write("GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                return RawHTTPResponse.parse(socket.readToEnd(timeout: 5))?.status == 200
            }
            #expect(answered, "round \(round)")
            #expect(Waiting.until { server.connectionCount(from: "127.0.0.4") == 0 }, "round \(round)")
        }
    }

    @Test("A peer that sends no complete headers is closed after the header timeout")
    func slowHeadersTimeOut() throws {
        let delegate = RecordingDelegate(echoes: true)
        let server = try WebServer(host: "127.0.0.1", webSocketPaths: ["/v1/signal"], headerTimeout: 1, delegate: delegate)
        delegate.server.withLock { $0 = server }
        server.start()
        defer { delegate.finish() }
        let slow = try #require(RawSocket(host: "127.0.0.1", port: server.port, from: "127.0.0.5"))
        slow.write("GET /v1/health HTTP/1.1\r\nHost: x\r\n")
        let idle = try #require(RawSocket(host: "127.0.0.1", port: server.port, from: "127.0.0.5"))
        #expect(Waiting.until(timeout: 20) { slow.peerClosed && idle.peerClosed })
    }
}

@testable import CallTransport
import Foundation
import Synchronization
import Testing
import TestSupport

@Suite("WebSocket server and client")
struct WebSocketTests {
    @Test("Echo through WebSocketClient; path, query and peer reach the delegate",
          arguments: [("127.0.0.1", "ws://127.0.0.1"), ("::1", "ws://[::1]"), ("127.0.0.1", "ws://localhost")])
    func echo(host: String, base: String) throws {
        let (server, delegate) = try RecordingDelegate.serve(host: host)
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "\(base):\(server.port)/v1/signal?token=a%2Bb%20c&room=standup")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        client.send(#"{"type":"ping"}"#)
        client.send("héllo wörld ✓")
        #expect(Waiting.until { recorder.messages.count == 2 })
        #expect(recorder.messages == [#"{"type":"ping"}"#, "héllo wörld ✓"])
        let opened = try #require(delegate.opened.first)
        #expect(opened.path == "/v1/signal")
        #expect(opened.query == ["token": "a+b c", "room": "standup"])
        #expect(opened.peer.host == (host == "::1" ? "::1" : "127.0.0.1"))
        #expect(opened.peer.port == client.localAddress?.port)
        #expect(client.peer?.port == server.port)
        client.close()
        #expect(Waiting.until { delegate.closed == [opened.connection] })
        #expect(recorder.closed?.code == 1000)
        #expect(Waiting.until { server.connectionCount == 0 })
    }

    @Test("The messages stream delivers in order and finishes when the server closes the connection")
    func messagesStream() async throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        try client.connect(timeout: 10)
        #expect(await Waiting.until { delegate.opened.count == 1 })
        let id = try #require(delegate.opened.first?.connection)
        for index in 0..<50 { server.send("m\(index)", to: id) }
        server.close(id, code: 4013, reason: "room closed")
        var received: [String] = []
        for await message in client.messages { received.append(message) }
        #expect(received == (0..<50).map { "m\($0)" })
        #expect(await Waiting.until { delegate.closed == [id] })
        client.close()
    }

    @Test("Close code and reason from the server reach the client's handler")
    func serverCloseCode() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        #expect(Waiting.until { delegate.opened.count == 1 })
        let id = try #require(delegate.opened.first?.connection)
        server.send("bye", to: id)
        server.close(id, code: 4011, reason: "removed by a moderator")
        #expect(Waiting.until { recorder.closed != nil })
        #expect(recorder.messages == ["bye"])
        #expect(recorder.closed?.code == 4011)
        #expect(recorder.closed?.reason == "removed by a moderator")
        // Sending to and closing the closed id are ignored.
        server.send("late", to: id)
        server.close(id)
        server.send("never", to: ConnectionID(rawValue: 9999))
        let other = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let otherRecorder = ClientRecorder()
        otherRecorder.attach(to: other)
        try other.connect(timeout: 10)
        other.send("still serving")
        #expect(Waiting.until { otherRecorder.messages == ["still serving"] })
        other.close()
        client.close()
    }

    @Test("Messages of many frames are assembled; a large message (60 000 bytes) passes the limit")
    func fragments() throws {
        let (server, delegate) = try RecordingDelegate.serve(echoes: false)
        defer { delegate.finish() }
        let raw = try #require(RawWebSocket(port: server.port))
        raw.sendFrame(opcode: 1, final: false, payload: Array("Hel".utf8))
        raw.sendFrame(opcode: 0, final: false, payload: Array("lo, ".utf8))
        raw.sendFrame(opcode: 0, final: true, payload: Array("world".utf8))
        #expect(Waiting.until { delegate.received.count == 1 })
        #expect(delegate.received.first?.1 == "Hello, world")

        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        try client.connect(timeout: 10)
        let large = String(repeating: "0123456789", count: 6000)
        client.send(large)
        #expect(Waiting.until { delegate.received.count == 2 })
        #expect(delegate.received.last?.1 == large)
        client.close()
    }

    @Test("A message over the limit closes that connection with 1009; another client is still served")
    func tooLarge() throws {
        let (server, delegate) = try RecordingDelegate.serve(maximumMessageBytes: 1000)
        defer { delegate.finish() }
        let bystander = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let bystanderRecorder = ClientRecorder()
        bystanderRecorder.attach(to: bystander)
        try bystander.connect(timeout: 10)

        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        client.send(String(repeating: "x", count: 1001))
        #expect(Waiting.until { recorder.closed != nil })
        #expect(recorder.closed?.code == 1009)

        bystander.send("fine")
        #expect(Waiting.until { bystanderRecorder.messages == ["fine"] })
        #expect(bystanderRecorder.closed == nil)
        bystander.close()
        client.close()
    }

    @Test("The client refuses a message over its own limit with 1009")
    func clientLimit() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal", maximumMessageBytes: 100)
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        client.send(String(repeating: "y", count: 100))
        #expect(Waiting.until { recorder.messages.count == 1 })
        client.send(String(repeating: "z", count: 101))  // echoed back: one byte too many for the client
        #expect(Waiting.until { recorder.closed != nil })
        #expect(recorder.closed?.code == 1009)
        #expect(recorder.messages.count == 1)
        #expect(Waiting.until { delegate.closed.count == 1 })
        client.close()
    }

    @Test("A fragmented message over the limit is refused with 1009")
    func tooLargeInFragments() throws {
        let (server, delegate) = try RecordingDelegate.serve(maximumMessageBytes: 1000)
        defer { delegate.finish() }
        let raw = try #require(RawWebSocket(port: server.port))
        raw.sendFrame(opcode: 1, final: false, payload: [UInt8](repeating: 65, count: 600))
        raw.sendFrame(opcode: 0, final: false, payload: [UInt8](repeating: 65, count: 600))
        #expect(raw.readCloseCode() == 1009)
        #expect(delegate.received.isEmpty)
    }

    @Test("A fragmented message over the default 64 KiB limit is refused with 1009",
          arguments: [[30_000, 30_000, 30_000], [65_536, 1], [70_000, 10], Array(repeating: 1_000, count: 70)])
    func tooLargeInFragmentsAtTheDefaultLimit(fragments: [Int]) throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let raw = try #require(RawWebSocket(port: server.port))
        for (index, count) in fragments.enumerated() {
            raw.sendFrame(opcode: index == 0 ? 1 : 0, final: index == fragments.count - 1,
                          payload: [UInt8](repeating: 65, count: count))
        }
        #expect(raw.readCloseCode() == 1009)
        #expect(delegate.received.isEmpty)
    }

    /// RFC 6455 §5.1: a server must close the connection on a frame that is not masked (1002).
    /// libwebsockets 4.1.6 (Debian 12) takes unmasked frames and has neither an option to refuse them nor
    /// an API that tells whether a frame was masked; later versions refuse them ("client unmasked").
    @Test("An unmasked client frame is refused with 1002")
    func unmaskedFrame() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let raw = try #require(RawWebSocket(port: server.port))
        raw.sendFrame(opcode: 1, final: true, payload: Array("hello".utf8), masked: false)
        raw.sendFrame(opcode: 1, final: true, payload: Array("masked".utf8))
        // Either both messages arrive (the frame was taken) or, within the bound, neither.
        let delivered = Waiting.until(timeout: 5) { delegate.received.count == 2 }
        withKnownIssue("libwebsockets 4.1.6 accepts unmasked client frames") {
            #expect(!delivered, "the unmasked frame was delivered: \(delegate.received.map(\.1))")
        }
        if !delivered { #expect(raw.readCloseCode() == 1002) }
    }

    /// After the server sent a close frame (here on a refused message, while it waits for the client's
    /// answer) a send to the connection is dropped: RFC 6455 §5.5.1, no data frame follows a close.
    @Test("No frame is sent after the server's close frame")
    func nothingAfterClose() throws {
        let (server, delegate) = try RecordingDelegate.serve(echoes: false)
        defer { delegate.finish() }
        let raw = try #require(RawWebSocket(port: server.port))
        #expect(Waiting.until { delegate.opened.count == 1 })
        let id = delegate.opened[0].connection
        raw.sendFrame(opcode: 2, final: true, payload: [1, 2, 3])
        #expect(raw.readCloseCode() == 1003)
        server.send("late", to: id)
        // The send was handled: a message queued after it, to another client, has arrived.
        let bystander = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: bystander)
        try bystander.connect(timeout: 10)
        #expect(Waiting.until { delegate.opened.count == 2 })
        server.send("after late", to: delegate.opened[1].connection)
        #expect(Waiting.until { recorder.messages == ["after late"] })
        raw.sendFrame(opcode: 8, final: true, payload: [0x03, 0xEB])  // the client's close answer
        #expect(raw.readOpcodesToEnd() == [])
        #expect(Waiting.until { delegate.closed.contains(id) })
        bystander.close()
    }

    @Test("A WebSocket upgrade is accepted only on the configured paths; elsewhere 404 and no upgrade",
          arguments: ["/", "/v1/health", "/v1/signal/x", "/v1/signalx", "/rooms/room", "/v1/../v2/signal"])
    func upgradeOnlyOnItsPath(path: String) throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let refused = try #require(upgradeAnswer(port: server.port, path: path))
        #expect(refused.status == 404)
        #expect(refused.headers["upgrade"] == nil)
        #expect(refused.text.contains("WebSocket"))
        let accepted = try #require(upgradeAnswer(port: server.port, path: "/v1/signal?room=r"))
        #expect(accepted.status == 101)
        #expect(Waiting.until { delegate.opened.count == 1 })
        #expect(delegate.opened.map(\.path) == ["/v1/signal"])
    }

    @Test("Binary frames close with 1003, invalid UTF-8 with 1007",
          arguments: [(UInt8(2), [UInt8]([1, 2, 3]), UInt16(1003)), (UInt8(1), [UInt8]([0x41, 0xC3, 0x28]), UInt16(1007))])
    func refusedFrames(opcode: UInt8, payload: [UInt8], code: UInt16) throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        let raw = try #require(RawWebSocket(port: server.port))
        raw.sendFrame(opcode: opcode, final: true, payload: payload)
        #expect(raw.readCloseCode() == code)
        raw.sendFrame(opcode: 8, final: true, payload: [UInt8(code >> 8), UInt8(code & 0xFF)])  // acknowledge
        #expect(Waiting.until { delegate.closed.count == 1 })
        #expect(delegate.received.isEmpty)
    }

    @Test("A client that stops reading is closed with 1008 once its queue passes the limit; others are served")
    func stalledReaderIsClosed() throws {
        let (server, delegate) = try RecordingDelegate.serve(echoes: false, maximumQueuedBytes: 256 << 10)
        defer { delegate.finish() }
        // Connects and upgrades, then never reads: the kernel's buffers fill, then the server's queue.
        let stalled = try #require(RawWebSocket(port: server.port))
        #expect(Waiting.until { delegate.opened.count == 1 })
        let stalledID = delegate.opened[0].connection
        let chunk = String(repeating: "x", count: 16 << 10)
        var sent = 0
        while sent < 4_000, !delegate.closed.contains(stalledID) {
            server.send(chunk, to: stalledID)
            sent += 1
            if sent % 50 == 0 { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(Waiting.until(timeout: 20) { delegate.closed.contains(stalledID) }, "sent \(sent) × 16 KiB")
        // Far less than everything sent was ever held: the queue stopped at the limit.
        #expect(sent < 4_000)
        // A well-behaved client still gets its messages.
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 5)
        #expect(Waiting.until { delegate.opened.count == 2 })
        server.send("hello", to: delegate.opened[1].connection)
        #expect(Waiting.until { recorder.messages.contains("hello") })
        client.close()
        _ = stalled
    }

    @Test("A client vanishing mid-message is closed cleanly; the server keeps serving")
    func vanishingClient() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        defer { delegate.finish() }
        do {
            let raw = try #require(RawWebSocket(port: server.port))
            raw.sendFrame(opcode: 1, final: false, payload: Array("first part".utf8))
            raw.sendFrame(opcode: 0, final: true, payload: [UInt8](repeating: 66, count: 5000), truncateTo: 100)
            #expect(Waiting.until { delegate.opened.count == 1 })
        }
        #expect(Waiting.until { delegate.closed.count == 1 })
        #expect(delegate.received.isEmpty)
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        client.send("after")
        #expect(Waiting.until { recorder.messages == ["after"] })
        client.close()
        #expect(Waiting.until { server.connectionCount == 0 })
    }

    @Test("100 concurrent clients each receive a broadcast")
    func broadcast() throws {
        // All from 127.0.0.1: over the default limit of connections per address (ConnectionLimitTests).
        let (server, delegate) = try RecordingDelegate.serve(echoes: false, maximumConnectionsPerAddress: 128)
        defer { delegate.finish() }
        let count = 100
        var clients: [WebSocketClient] = []
        var recorders: [ClientRecorder] = []
        for _ in 0..<count {
            let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
            let recorder = ClientRecorder()
            recorder.attach(to: client)
            try client.connect(timeout: 20)
            clients.append(client)
            recorders.append(recorder)
        }
        #expect(Waiting.until(timeout: 20) { delegate.opened.count == count })
        let ids = delegate.opened.map(\.connection)
        #expect(Set(ids).count == count)
        for round in 0..<3 {
            for id in ids { server.send(#"{"type":"speaker-changed","round":\#(round)}"#, to: id) }
        }
        #expect(Waiting.until(timeout: 20) { recorders.allSatisfy { $0.messages.count == 3 } })
        #expect(recorders.allSatisfy { $0.messages.last == #"{"type":"speaker-changed","round":2}"# })
        for client in clients { client.close() }
        #expect(Waiting.until(timeout: 20) { delegate.closed.count == count })
        #expect(Waiting.until { server.connectionCount == 0 })
    }

    @Test("send from other threads while the service thread is idle is delivered")
    func sendFromOtherThreads() throws {
        let (server, delegate) = try RecordingDelegate.serve(echoes: false)
        defer { delegate.finish() }
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        try client.connect(timeout: 10)
        #expect(Waiting.until { delegate.opened.count == 1 })
        let id = try #require(delegate.opened.first?.connection)
        usleep(200_000)  // let the service thread go idle in poll()
        let threads = 4
        let perThread = 25
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread { server.send("\(thread)-\(index)", to: id) }
        }
        #expect(Waiting.until { recorder.messages.count == threads * perThread })
        // Each thread's messages keep their order.
        for thread in 0..<threads {
            let mine = recorder.messages.filter { $0.hasPrefix("\(thread)-") }
            #expect(mine == (0..<perThread).map { "\(thread)-\($0)" })
        }
        // And the client's sends, also from another thread.
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            client.send("from a thread")
            done.signal()
        }
        done.wait()
        #expect(Waiting.until { delegate.received.map(\.1) == ["from a thread"] })
        client.close()
    }

    @Test("Stopping the server closes connected clients with 1001 and the delegate hears every close")
    func stopWithClients() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        let recorders = (0..<5).map { _ in ClientRecorder() }
        var clients: [WebSocketClient] = []
        for recorder in recorders {
            let client = try WebSocketClient(url: "ws://127.0.0.1:\(server.port)/v1/signal")
            recorder.attach(to: client)
            try client.connect(timeout: 10)
            clients.append(client)
        }
        #expect(Waiting.until { delegate.opened.count == 5 })
        delegate.finish()
        server.stop()  // idempotent
        #expect(Waiting.until { recorders.allSatisfy { $0.closed != nil } })
        #expect(recorders.allSatisfy { $0.closed?.code == 1001 })
        #expect(delegate.closed.count == 5)
        // Sends after stop are ignored.
        server.send("ignored", to: delegate.opened[0].connection)
        for client in clients { client.close() }
    }

    @Test("Connecting to a closed port throws a connect TransportError naming the URL")
    func connectRefused() throws {
        // A port that was just free: bind a server, note its port, stop it.
        let port: Int
        do {
            let (server, delegate) = try RecordingDelegate.serve()
            port = server.port
            delegate.finish()
        }
        let url = "ws://127.0.0.1:\(port)/v1/signal"
        let client = try WebSocketClient(url: url)
        let recorder = ClientRecorder()
        recorder.attach(to: client)
        let error = #expect(throws: TransportError.self) { try client.connect(timeout: 10) }
        #expect(error?.operation == .connect)
        #expect(error?.subject == url)
        #expect(recorder.closed == nil)
        client.close()
    }

    @Test("A server that accepts but never answers the handshake: connect times out")
    func connectTimeout() throws {
        let listener = try #require(SilentListener())
        let client = try WebSocketClient(url: "ws://127.0.0.1:\(listener.port)/v1/signal")
        let error = #expect(throws: TransportError.self) { try client.connect(timeout: 0.5) }
        #expect(error?.operation == .timeout)
        client.close()
    }

    @Test("stop returns even when a peer never acknowledges the close")
    func stopWithSilentPeer() throws {
        let (server, delegate) = try RecordingDelegate.serve()
        let raw = try #require(RawWebSocket(port: server.port))
        #expect(Waiting.until { delegate.opened.count == 1 })
        delegate.finish()
        #expect(raw.readCloseCode() == 1001)
        #expect(delegate.closed.count == 1)
    }

    @Test("Malformed URLs are parse errors", arguments: ["http://127.0.0.1:1/", "ws://", "ws://[::1:80/", "ws://h:0/", "ws://h:x/"])
    func badURLs(url: String) {
        let error = #expect(throws: TransportError.self) { _ = try WebSocketClient(url: url) }
        #expect(error?.operation == .parse)
    }

    @Test("URL parts", arguments: [
        ("ws://127.0.0.1:8080/v1/signal?x=1", "127.0.0.1", 8080, "/v1/signal?x=1", "127.0.0.1:8080"),
        ("ws://[::1]:9/", "::1", 9, "/", "[::1]:9"),
        ("ws://localhost", "localhost", 80, "/", "localhost:80"),
        ("ws://localhost:5?q", "localhost", 5, "/?q", "localhost:5"),
    ])
    func urlParts(url: String, host: String, port: Int, path: String, header: String) throws {
        let parsed = try EndpointURL(url)
        #expect(parsed.host == host)
        #expect(parsed.port == port)
        #expect(parsed.pathAndQuery == path)
        #expect(parsed.hostHeader == header)
    }

    @Test("close and stop are idempotent, also before connect and start")
    func idempotent() throws {
        let client = try WebSocketClient(url: "ws://127.0.0.1:1/")
        client.close()
        client.close()
        #expect(throws: TransportError.self) { try client.connect(timeout: 1) }
        let server = try WebServer(delegate: RecordingDelegate())
        server.stop()
        server.stop()
        server.start()
    }
}

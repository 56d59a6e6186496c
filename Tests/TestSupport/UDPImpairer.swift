import Foundation
import Synchronization

/// An impaired network for UDP between processes on 127.0.0.1: a relay that drops, delays, jitters and
/// reorders datagrams, seeded, in user space (the kernel here has no netem, and a test may not change the
/// host's network). Senders send to `port`; the relay forwards what survives to the destination port
/// from its own socket, so the receiver sees one source.
///
/// Losses are independent (`loss`), or come in bursts by a Gilbert–Elliott chain per sender (source
/// port): a good and a bad state, `burstEnter` the chance per datagram to go bad, `burstLeave` to go good
/// again, `burstLoss` the loss in the bad state (mean burst `1 / burstLeave` datagrams). Each surviving
/// datagram is held `delay ± jitter` (uniform; a datagram may so overtake the one before it) and, with
/// probability `reorder`, `reorderDelay` more.
///
/// One thread relays: it waits on the socket with `poll` for at most 5 ms or until the next datagram is
/// due, so a datagram leaves within about a millisecond of its time. At most `capacity` datagrams are
/// held; more are dropped (counted). Only loopback: it binds 127.0.0.1 and sends to 127.0.0.1.
public final class UDPImpairer: @unchecked Sendable {
    // @unchecked Sendable: the socket, the queue, the chains and the random generator are touched only by
    // the relay thread between `start` and the end of `stop`; other threads read `statistics` (a Mutex).

    /// What the network does to each datagram.
    public struct Impairment: Sendable, CustomStringConvertible {
        /// Independent loss probability, 0…1.
        public var loss = 0.0
        /// Gilbert–Elliott: per-datagram chance to enter and to leave the bad state, and the loss in it.
        public var burstEnter = 0.0, burstLeave = 1.0, burstLoss = 1.0
        /// Seconds every datagram is held, and the half-width of the uniform jitter around it.
        public var delay = 0.0, jitter = 0.0
        /// Chance that a datagram is held `reorderDelay` seconds more.
        public var reorder = 0.0, reorderDelay = 0.03
        /// Extra seconds for the datagrams of one sender (source port): a slower path.
        public var pathDelay: [UInt16: Double] = [:]
        public var seed: UInt64 = 1

        public init() {}

        /// `loss` lost at random, `delay ± jitter` seconds.
        public static func random(loss: Double, delay: Double, jitter: Double, seed: UInt64) -> Impairment {
            var impairment = Impairment()
            impairment.loss = loss
            impairment.delay = delay
            impairment.jitter = jitter
            impairment.seed = seed
            return impairment
        }

        /// Bursts of loss (Gilbert–Elliott, all lost in the bad state) and `delay ± jitter` seconds.
        public static func bursts(enter: Double, leave: Double, delay: Double, jitter: Double, seed: UInt64) -> Impairment {
            var impairment = random(loss: 0, delay: delay, jitter: jitter, seed: seed)
            impairment.burstEnter = enter
            impairment.burstLeave = leave
            return impairment
        }

        /// The long-run loss: the bad state's share times its loss, plus the good state's.
        public var expectedLoss: Double {
            let bad = burstEnter > 0 ? burstEnter / (burstEnter + burstLeave) : 0
            return bad * burstLoss + (1 - bad) * loss
        }

        public var description: String {
            let ms = { (seconds: Double) in String(format: "%.0f", seconds * 1000) }
            var parts = ["loss \(String(format: "%.1f", expectedLoss * 100)) %"]
            if burstEnter > 0 { parts.append("bursts of \(String(format: "%.1f", 1 / burstLeave)) on average") }
            parts.append("\(ms(delay)) ± \(ms(jitter)) ms")
            if reorder > 0 { parts.append("reorder \(Int(reorder * 100)) % by \(ms(reorderDelay)) ms") }
            return parts.joined(separator: ", ")
        }
    }

    /// Counters.
    public struct Statistics: Sendable, Equatable {
        /// Datagrams received from senders.
        public var received = 0
        /// Dropped by the loss model.
        public var lost = 0
        /// Dropped because `capacity` were held.
        public var overflowed = 0
        /// Forwarded to the destination.
        public var forwarded = 0
        /// Forwarded after a datagram that was received after them (overtaken).
        public var reordered = 0
        /// Uptime (ns) of the first datagram received, and of the first RTP (not RTCP) datagram forwarded.
        public var firstReceived: UInt64?
        public var firstForwardedRTP: UInt64?
        /// How long the first forwarded RTP datagram was held, in seconds.
        public var firstRTPDelay: Double?
    }

    /// The relay's port on 127.0.0.1: send here.
    public let port: Int
    public let impairment: Impairment
    /// Datagrams held at most.
    public let capacity = 4096

    private let descriptor: Int32
    private let destination: sockaddr_in
    private let stopFlag = Atomic<Bool>(false)
    private let counters = Mutex(Statistics())
    private let finished = DispatchSemaphore(value: 0)
    private var started = false

    /// Binds 127.0.0.1:0 and relays to 127.0.0.1:`destinationPort` once started.
    public init(forwardingTo destinationPort: Int, impairment: Impairment) throws {
        self.impairment = impairment
        let (descriptor, port) = try Self.bindLoopback()
        self.descriptor = descriptor
        self.port = port
        var destination = sockaddr_in()
        destination.sin_family = sa_family_t(AF_INET)
        destination.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        destination.sin_port = UInt16(destinationPort).bigEndian
        self.destination = destination
    }

    deinit {
        stop()
        close(descriptor)
    }

    public var statistics: Statistics { counters.withLock { $0 } }

    /// Starts the relay thread. Call once.
    public func start() {
        precondition(!started, "start once")
        started = true
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "udp-impairer"
        thread.start()
    }

    /// Stops relaying (what is held is dropped) and waits for the thread. Idempotent.
    public func stop() {
        guard started, !stopFlag.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }

    private struct Held {
        var arrived: UInt64
        var due: UInt64
        var order: Int
        var bytes: [UInt8]
    }

    private func run() {
        var random = SeededGenerator(seed: impairment.seed)
        var bad: [UInt16: Bool] = [:]
        var held: [Held] = []
        held.reserveCapacity(capacity)
        var buffer = [UInt8](repeating: 0, count: 65536)
        var order = 0, lastForwardedOrder = -1
        func uniform() -> Double { Double(random.next() >> 11) / Double(1 << 53) }

        while !stopFlag.load(ordering: .acquiring) {
            let now = DispatchTime.now().uptimeNanoseconds
            let wait = held.first.map { $0.due > now ? Int32(min(5, ($0.due - now) / 1_000_000)) : 0 } ?? 5
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, wait)
            // Take everything that has arrived (at most a thousand at once).
            for _ in 0..<1000 {
                var source = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &source) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), $0, &length)
                        }
                    }
                }
                guard count > 0 else { break }
                let arrived = DispatchTime.now().uptimeNanoseconds
                let sender = UInt16(bigEndian: source.sin_port)
                var lose = uniform() < impairment.loss
                if impairment.burstEnter > 0 {
                    var isBad = bad[sender] ?? false
                    isBad = isBad ? uniform() >= impairment.burstLeave : uniform() < impairment.burstEnter
                    bad[sender] = isBad
                    if isBad { lose = uniform() < impairment.burstLoss }
                }
                counters.withLock {
                    $0.received += 1
                    if $0.firstReceived == nil { $0.firstReceived = arrived }
                }
                if lose {
                    counters.withLock { $0.lost += 1 }
                    continue
                }
                guard held.count < capacity else {
                    counters.withLock { $0.overflowed += 1 }
                    continue
                }
                var seconds = impairment.delay + impairment.jitter * (2 * uniform() - 1) + (impairment.pathDelay[sender] ?? 0)
                if impairment.reorder > 0, uniform() < impairment.reorder { seconds += impairment.reorderDelay }
                let due = arrived + UInt64(max(0, seconds) * 1e9)
                let item = Held(arrived: arrived, due: due, order: order, bytes: Array(buffer[..<count]))
                order += 1
                let position = held.firstIndex { $0.due > due } ?? held.endIndex
                held.insert(item, at: position)
            }
            // Send what is due.
            let sendTime = DispatchTime.now().uptimeNanoseconds
            var sent = 0
            while sent < held.count, held[sent].due <= sendTime {
                let item = held[sent]
                var address = destination
                let result = item.bytes.withUnsafeBytes { bytes in
                    withUnsafePointer(to: &address) { pointer in
                        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(descriptor, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                let isRTCP = item.bytes.count >= 2 && (192...223).contains(item.bytes[1])
                counters.withLock {
                    if result > 0 { $0.forwarded += 1 }
                    if item.order < lastForwardedOrder { $0.reordered += 1 }
                    if !isRTCP, $0.firstForwardedRTP == nil {
                        $0.firstForwardedRTP = sendTime
                        $0.firstRTPDelay = Double(sendTime - item.arrived) / 1e9
                    }
                }
                lastForwardedOrder = max(lastForwardedOrder, item.order)
                sent += 1
            }
            if sent > 0 { held.removeFirst(sent) }
        }
    }

    private static func bindLoopback() throws -> (Int32, Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackPortError(message: "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw LoopbackPortError(message: "cannot bind 127.0.0.1 (UDP): \(reason)")
        }
        var size: Int32 = 4 << 20
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }
}

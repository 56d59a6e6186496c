import CallProtocol
import Foundation
import SpeakerCore
import SpeakerIO
import SpeakerMedia
import SpeakerRTP
import Synchronization

/// What the media loop reports to the server, from its own thread.
protocol MediaLoopDelegate: AnyObject, Sendable {
    /// The engine named a new dominant speaker of `room` (nil: nobody speaks). `time`: seconds of room time.
    func speakerChanged(room: CallRoomID, participant: ParticipantID?, time: Double)
    /// Every `levelInterval`: each publisher's level (dBov) and who speaks.
    func audioLevels(room: CallRoomID, time: Double, levels: [String: Double], speaking: [String])
    /// Once per tick, after the events: the server's chance to time out silent clients.
    func tickEnded(ticks: Int)
    /// A publisher's decoded 10 ms hop (16 kHz) at `tick`, for recording; only when `recordsAudio` is set.
    func recordHop(room: CallRoomID, participant: ParticipantID, hop: UnsafeBufferPointer<Float>, tick: Int)
    /// The engine's speech decision for a publisher changed (`time`: when it did, in room time); only
    /// when `recordsAudio` is set.
    func speechChanged(room: CallRoomID, participant: ParticipantID, active: Bool, time: Double)
    /// A room's media starts or ends at `tick` (the loop's 10 ms clock).
    func roomOpened(_ room: CallRoomID, tick: Int)
    func roomClosed(_ room: CallRoomID, tick: Int)
}

/// Counters of the media plane.
public struct MediaStatistics: Sendable, Equatable {
    /// RTP packets accepted from a bound publisher.
    public var accepted = 0
    /// Copies sent to other members.
    public var forwarded = 0
    /// Dropped: an SSRC no publisher holds (RTP, or an RTCP sender report).
    public var unknownSSRC = 0
    /// Dropped: a bound SSRC from another address than its publisher's (RTP, or an RTCP sender report).
    public var wrongSource = 0
    /// Dropped: the publisher is muted.
    public var muted = 0
    /// Dropped: not RTP, or malformed.
    public var malformed = 0
    /// RTCP on the RTP port (second byte 192–223, RFC 5761), which browsers and GStreamer send; not
    /// forwarded, not an error. Sender reports of bound publishers among them are also `senderReports`.
    public var rtcp = 0
    /// RTCP sender reports of bound publishers, used to align their streams by capture time (not forwarded).
    public var senderReports = 0
    /// Packets the publishers' jitter buffers lost: concealed by the decoder (PLC).
    public var concealed = 0
    /// Lost packets decoded from the next packet's in-band FEC.
    public var recovered = 0
    /// Lost packets left silent (nothing to conceal from).
    public var silenced = 0
    /// Forwarding copies the kernel refused (full socket buffer).
    public var sendFailures = 0
    /// Mixed packets sent to WebRTC members (`WebRTCMix`: 20 ms each, one stream per member).
    public var mixed = 0
    /// Dropped: sent from the server's own RTP address (a forwarding loop's datagram coming back).
    public var fromSelf = 0
    /// Receivers refused because datagrams sent there would arrive on the server's own RTP socket.
    public var refusedReceivers = 0
    /// Dropped: a bound publisher's datagram over `MediaLoop.maximumDatagramBytes`.
    public var oversized = 0
    /// Dropped: a bound publisher over its packet budget (`MediaLoop.packetRate`, bursts of `packetBurst`).
    public var overBudget = 0
    /// How long the ticks' work took (decoding, the engine, events), over the last `TickTimes.window` ticks.
    public var tickTimes = TickTimes()
    /// Ticks that started more than one tick (10 ms) after they were due: the loop fell behind.
    public var lateTicks = 0

    public init() {}
}

/// Seconds of work per media tick: quantiles over the last `window` ticks (updated once a second), and
/// the sum and count of all ticks, as a Prometheus summary has them.
public struct TickTimes: Sendable, Equatable {
    /// Ticks the quantiles are taken over.
    public static let window = 1000
    public var p50 = 0.0
    public var p90 = 0.0
    public var p99 = 0.0
    public var max = 0.0
    /// Seconds of work of every tick so far.
    public var sum = 0.0
    public var count = 0

    public init() {}
}

/// The server's media plane: one UDP socket for all RTP, admission (bound publishers, budgets), forwarding,
/// the mixes of WebRTC members (`WebRTCMix`, from the decoded hops), recording and levels, on an
/// `RTPRoomRunner` (the paced loop, the publishers' jitter buffers and decoders, the engine deciding each
/// room's dominant speaker every 10 ms), keyed by room and participant.
///
/// Runs on its own thread. Everything inside is owned by that thread (debug builds check it:
/// `ConfinementCheck`); the only shared things are the
/// command queue (a `Mutex`), the statistics (a `Mutex`, updated once per tick), the tick count (an
/// atomic, published once per tick) and the stop flag.
///
/// Each datagram costs hash lookups, not scans: its SSRC finds the bound member, whose room lists the
/// members to forward to. Commands (joins, leaves, mutes) rebuild those indexes: O(members) each.
///
/// Whatever arrives, the loop keeps its 10 ms clock: each tick takes at most `datagramsPerTick`
/// datagrams from the socket and stops taking them when the tick is due (once it has taken
/// `datagramsPerLateTick`), then runs the tick, applies the queued commands and checks the stop flag.
/// Datagrams left over wait in the kernel (which drops what does not fit its buffer).
///
/// The loop never forwards to itself: a receiver at which datagrams would arrive on the loop's own
/// socket is refused when its member is added (`refusedReceivers`), and a datagram whose source is the
/// loop's own address is dropped before anything else (`fromSelf`). `RoomRegistry` refuses such a
/// `join` earlier, with an error the client sees; this is the check that holds whatever the registry
/// lets through, with the host's interface addresses listed afresh whenever a member names the RTP port.
/// Nor does it forward one room's audio into another member's WebRTC relay: a relay's socket (`bind`)
/// is its member's alone, so a member that named it, before or after, has no receiver (`refusedReceivers`).
final class MediaLoop: @unchecked Sendable {
    // @unchecked Sendable: `runner`, `rooms`, `members`, the indexes and the buffers are touched only by
    // the loop's thread (after `start`); other threads use only `post`, `statistics`, `tickCount` and
    // `stop`, which lock or are atomic.

    /// A member's identity: a participant of a room; the runner's id of its stream.
    struct MemberKey: Hashable {
        var room: CallRoomID
        var participant: ParticipantID
    }

    private struct Member {
        var room: CallRoomID
        var participant: ParticipantID
        var ssrc: SSRC?
        /// The bound sender; port 0 when any port of the host is accepted.
        var source: SocketAddress?
        /// The extension id of the bound sender's RFC 6464 audio level.
        var audioLevelID = 1
        var receiver: SocketAddress?
        /// The receiver is a WebRTC relay's socket (`bind`): no other member may have it.
        var relay = false
        var muted = false
        /// Its stream's jitter buffer, which the runner plays and this loop feeds (a bound publisher, once added):
        /// held here so that a datagram reaches it without another lookup.
        var stream: RTPStreamReceiver?
        /// A streamed publisher's source (`addStreamed`): heard, never forwarded.
        var streamed: PCMHopSource?
        /// The publisher's packet budget (only a bound sender spends it).
        var budget: RateBudget
        /// A WebRTC member's mix of the others (`bind`), sent instead of their forwarded packets.
        var mix: WebRTCMix?
    }

    private struct MediaRoom {
        var openedAtTick: Int
        /// The engine hears the publishers' RFC 6464 levels; nothing is decoded, mixed or recorded.
        var levelsOnly: Bool
        /// Indexes into `members` of this room's members, in the order they were added (`reindex`).
        var members: [Int] = []
    }

    let socket: UDPSocket
    /// The loop's thread owns everything below that is not locked or atomic: debug builds stop on a call of
    /// `applyCommands`, `route` or `runTick` while another thread is inside one.
    private let confinement = ConfinementCheck("MediaLoop")
    /// The paced loop, the publishers' jitter buffers and the engine, by room and member.
    private let runner: RTPRoomRunner<CallRoomID, MemberKey>
    private let levelTicks: Int
    private let recordsAudio: Bool
    /// Every room's publishers' streams are their packets' RFC 6464 levels, not decoded audio (`serve --levels-only`).
    private let levelsOnly: Bool
    private weak var delegate: (any MediaLoopDelegate)?
    private let commands = Mutex<[MediaCommand]>([])
    private let statisticsBox = Mutex(MediaStatistics())
    private let stopFlag = Atomic<Bool>(false)
    /// Entered by `start`, left when the loop's thread is done: every `stop()` waits on it.
    private let running = DispatchGroup()
    /// `ticks` as other threads may read it.
    private let publishedTicks = Atomic<Int>(0)
    /// When the loop's clock started (uptime nanoseconds); 0 before.
    private let startedAt = Atomic<UInt64>(0)
    /// The work of the last `TickTimes.window` ticks, in seconds (a ring), for the quantiles.
    private var tickWork = [Double](repeating: 0, count: TickTimes.window)
    private var tickWorkScratch = [Double](repeating: 0, count: TickTimes.window)

    private var rooms: [CallRoomID: MediaRoom] = [:]
    /// In the order they were added. The indexes below point into it; `reindex` rebuilds them.
    private var members: [Member] = []
    private var memberOfKey: [MemberKey: Int] = [:]
    private var memberOfSSRC: [SSRC: Int] = [:]
    private var counters = MediaStatistics()
    /// The loop's tick count.
    private var ticks: Int { runner.ticks }
    /// Whether any member hears a mix; then each tick keeps every member's decoded hop in `hops`.
    private var mixing = false
    /// Each member's hop of this tick (`hopSize` samples at `index * hopSize`), and whether it has one.
    private var hops: [Float] = []
    private var hopHeld: [Bool] = []
    private var mixHop = [Float](repeating: 0, count: AnalysisFormat.hopSize)
    private var roomSum = [Float](repeating: 0, count: AnalysisFormat.hopSize)
    /// Losses of the jitter buffers of members removed so far.
    private var lostByRemoved = RTPStreamStatistics()
    /// Where datagrams reach `socket`: no receiver may be one of these, and none is taken from one.
    private var ownAddresses: UDPSocket.OwnAddresses

    /// The most datagrams one tick takes from the socket (`RTPRoomRunner.datagramsPerTick`).
    static var datagramsPerTick: Int { RTPRoomRunner<CallRoomID, MemberKey>.datagramsPerTick }
    /// The largest datagram accepted from a publisher: an Ethernet MTU. An Opus frame is at most 1,275
    /// bytes (RFC 6716), and WebRTC keeps RTP under about 1,200.
    static let maximumDatagramBytes = 1500
    /// Packets a second one publisher may send (Opus sends 50, or 100 with 10 ms frames), and the most
    /// it may send at once, from idle: two seconds' worth, what a network stall delivers in one piece.
    static let packetRate: Double = 200
    static let packetBurst: Double = 400

    /// - Parameters:
    ///   - socket: The bound socket to receive RTP on and forward from.
    ///   - levelInterval: Seconds between `audioLevels` reports.
    ///   - levelsOnly: In every room the engine hears each publisher's RFC 6464 levels, and nothing is decoded;
    ///     then nothing can be recorded or mixed (`recordsAudio` must be false, and a member that `bind`s hears
    ///     no mix). A room opened level-only is so whatever this says.
    ///   - workers: The engine's threads; the publishers' Opus decoding runs on them too.
    ///   - policies: The floor policies the configuration may name.
    init(
        socket: UDPSocket, configuration: EngineConfiguration, levelInterval: Double, recordsAudio: Bool,
        levelsOnly: Bool = false, workers: Int = 1, policies: FloorPolicies = .standard, delegate: any MediaLoopDelegate
    ) throws {
        precondition(!(levelsOnly && recordsAudio), "a level-only loop has no audio to record")
        self.socket = socket
        ownAddresses = socket.ownAddresses()
        runner = try RTPRoomRunner(configuration: configuration, workers: workers, policies: policies)
        levelTicks = max(1, Int((levelInterval * 100).rounded()))
        self.recordsAudio = recordsAudio
        self.levelsOnly = levelsOnly
        self.delegate = delegate
    }

    /// The bound RTP port.
    var port: Int { socket.port }

    var statistics: MediaStatistics { statisticsBox.withLock { $0 } }

    /// Queues a change; the loop applies it before its next tick.
    func post(_ command: MediaCommand) {
        commands.withLock { $0.append(command) }
    }

    /// Starts the loop's thread at `priority` and waits until the thread has asked the kernel for it.
    /// Call once.
    /// - Returns: What the loop's thread runs at.
    @discardableResult
    func start(priority: LoopPriority) -> LoopSchedulingOutcome {
        running.enter()
        let scheduled = Mutex<LoopSchedulingOutcome?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            scheduled.withLock { $0 = LoopScheduling.apply(priority) }
            ready.signal()
            run()
            running.leave()
        }
        thread.name = "activespeaker-media"
        thread.start()
        ready.wait()
        return scheduled.withLock { $0 }!
    }

    /// Stops the loop and waits until its thread is done (no callback runs after it returns), however
    /// many threads call it at once. Idempotent; returns at once when the loop was never started.
    /// Not from the loop's own callbacks, which it would wait for.
    func stop() {
        stopFlag.store(true, ordering: .releasing)
        running.wait()
    }

    /// When the loop's clock started (tick 0 began), in uptime nanoseconds (`PacedTicker.uptimeNanoseconds`);
    /// 0 before `start` has begun it. From any thread.
    var startTime: UInt64 { startedAt.load(ordering: .acquiring) }

    /// The ticks the loop has run; from any thread.
    var tickCount: Int { publishedTicks.load(ordering: .acquiring) }

    /// Seconds the loop's clock is behind the wall clock, from any thread: 0 while each tick runs when
    /// due; the time since it should have started when it is not running (never started, or stopped).
    var secondsBehind: Double {
        let started = startedAt.load(ordering: .acquiring)
        let now = PacedTicker.uptimeNanoseconds()
        guard started > 0, !stopFlag.load(ordering: .acquiring) else { return .infinity }
        let due = started + UInt64(tickCount) * PacedTicker.period
        // One tick of work and the wait for the next are normal.
        let normal = 2 * PacedTicker.period
        return now > due + normal ? Double(now - due - normal) / 1e9 : 0
    }

    // MARK: The loop's thread

    private func run() {
        startClock()
        runner.run(
            on: [socket], until: { stopFlag.load(ordering: .acquiring) }, beforeTick: applyCommands,
            receive: { bytes, source in route(bytes, from: source) }, hears: { recordsAudio || mixing },
            hearing: { key, hop in heard(hop, of: key) }, ticked: { began, late in ticked(began: began, late: late) })
    }

    /// Starts the 10 ms clock: tick 0 begins now. On the loop's thread (or, in tests, on the thread that
    /// plays it, calling `applyCommands`, `route` and `runTick` itself instead of `start`).
    func startClock() {
        runner.start()
        startedAt.store(runner.ticker.startTime, ordering: .releasing)
    }

    /// Runs the tick that is due now (late or not): a test's step, as `run` does it.
    func runTick() {
        confinement.enter("runTick")
        defer { confinement.leave() }
        runner.runDueTick(
            hears: recordsAudio || mixing, hearing: { key, hop in heard(hop, of: key) },
            ticked: { began, late in ticked(began: began, late: late) })
    }

    func applyCommands() {
        confinement.enter("applyCommands")
        defer { confinement.leave() }
        let pending = commands.withLock { queue in
            let taken = queue
            queue.removeAll()
            return taken
        }
        for command in pending { apply(command) }
    }

    private func apply(_ command: MediaCommand) {
        switch command {
        case .openRoom(let room, let roomLevelsOnly):
            guard rooms[room] == nil else { return }
            let levels = levelsOnly || roomLevelsOnly
            runner.addRoom(room, mode: levels ? .levels : .decode, name: room.rawValue)
            rooms[room] = MediaRoom(openedAtTick: ticks, levelsOnly: levels)
            delegate?.roomOpened(room, tick: ticks)
        case .closeRoom(let room):
            // Last added first: the indexes of those not yet removed stay valid.
            for index in (rooms[room]?.members ?? []).reversed() { removeMember(at: index) }
            if rooms.removeValue(forKey: room) != nil {
                runner.removeRoom(room)
                delegate?.roomClosed(room, tick: ticks)
            }
        case .addMember(let room, let participant, let ssrc, let sender, let receiver):
            guard rooms[room] != nil else { return }
            var member = Member(
                room: room, participant: participant, ssrc: ssrc,
                source: sender.flatMap { SocketAddress(host: $0.host, port: $0.port ?? 0) }, audioLevelID: sender?.audioLevelID ?? 1,
                receiver: receiver.flatMap { SocketAddress(host: $0.host, port: $0.port) },
                budget: RateBudget(rate: Self.packetRate, burst: Self.packetBurst, now: Double(ticks) / 100))
            member.receiver = acceptable(receiver: member.receiver)
            // Nor may a new member name a bound relay's socket.
            if let receiver = member.receiver, members.contains(where: { $0.relay && $0.receiver == receiver }) {
                member.receiver = nil
                counters.refusedReceivers += 1
            }
            if let ssrc, sender != nil { publish(&member, ssrc: ssrc) }
            members.append(member)
            reindex()
        case .bind(let room, let participant, let sender, let receiver, let mixSSRC):
            guard let index = memberOfKey[MemberKey(room: room, participant: participant)], let mediaRoom = rooms[room] else { return }
            members[index].source = sender.flatMap { SocketAddress(host: $0.host, port: $0.port ?? 0) }
            members[index].audioLevelID = sender?.audioLevelID ?? 1
            members[index].receiver = acceptable(receiver: receiver.flatMap { SocketAddress(host: $0.host, port: $0.port) })
            // A relay's socket is the server's: a member that named it (as its rtpPort) loses it.
            members[index].relay = members[index].receiver != nil
            if let relay = members[index].receiver {
                for other in members.indices where other != index && members[other].receiver == relay {
                    members[other].receiver = nil
                    counters.refusedReceivers += 1
                }
            }
            if let ssrc = members[index].ssrc, sender != nil, members[index].stream == nil { publish(&members[index], ssrc: ssrc) }
            // A WebRTC session hears the others mixed: its browser has one track from the server.
            if members[index].receiver == nil || mediaRoom.levelsOnly {
                members[index].mix = nil
            } else if members[index].mix == nil {
                members[index].mix = try? WebRTCMix(ssrc: mixSSRC?.rawValue ?? UInt32.random(in: 1...UInt32.max))
            }
            reindex()
        case .addStreamed(let room, let participant, let input):
            let key = MemberKey(room: room, participant: participant)
            guard rooms[room] != nil, memberOfKey[key] == nil, !runner.rooms.contains(key) else { return }
            var member = Member(
                room: room, participant: participant, ssrc: nil, source: nil, receiver: nil,
                budget: RateBudget(rate: Self.packetRate, burst: Self.packetBurst, now: Double(ticks) / 100))
            member.streamed = input.source
            runner.addSource(input.source, as: key, in: room, name: participant.rawValue)
            members.append(member)
            reindex()
        case .removeMember(let room, let participant):
            if let index = memberOfKey[MemberKey(room: room, participant: participant)] { removeMember(at: index) }
        case .setMuted(let room, let participant, let muted):
            if let index = memberOfKey[MemberKey(room: room, participant: participant)] { members[index].muted = muted }
        }
    }

    /// `receiver`, unless datagrams sent there would arrive on the loop's own socket (then nil, counted).
    private func acceptable(receiver: SocketAddress?) -> SocketAddress? {
        guard let address = receiver, address.port == socket.port else { return receiver }
        // The interfaces may have changed since the last look; this is rare, so look again.
        ownAddresses = socket.ownAddresses()
        guard !ownAddresses.contains(address) else {
            counters.refusedReceivers += 1
            return nil
        }
        return address
    }

    /// Gives a member that publishes its stream in the runner: a jitter buffer on its room's clock.
    private func publish(_ member: inout Member, ssrc: SSRC) {
        let key = MemberKey(room: member.room, participant: member.participant)
        // The registry gives each publisher its own SSRC; a second holder of one is refused here.
        guard runner.stream(ofSSRC: ssrc.rawValue) == nil, !runner.rooms.contains(key) else { return }
        do {
            try runner.addStream(key, ssrc: ssrc.rawValue, in: member.room, name: member.participant.rawValue)
            member.stream = runner.receiver(of: key)
        } catch {
            // libopus could not make a decoder: the member is forwarded but not heard.
        }
    }

    private func removeMember(at index: Int) {
        let member = members[index]
        if member.stream != nil || member.streamed != nil {
            let key = MemberKey(room: member.room, participant: member.participant)
            // The engine's closing events come after the member is gone: end its recorded speech now.
            if recordsAudio, runner.rooms.isSpeaking(key), let room = rooms[member.room] {
                delegate?.speechChanged(
                    room: member.room, participant: member.participant, active: false, time: Double(ticks - room.openedAtTick) / 100)
            }
            if let statistics = runner.removeStream(key) {
                // Its losses stay in the totals.
                lostByRemoved.concealed += statistics.concealed
                lostByRemoved.recovered += statistics.recovered
                lostByRemoved.silenced += statistics.silenced
            }
        }
        members.remove(at: index)
        reindex()
    }

    /// Rebuilds the indexes into `members` after it changed.
    /// - Complexity: O(members + rooms).
    private func reindex() {
        memberOfKey.removeAll(keepingCapacity: true)
        memberOfSSRC.removeAll(keepingCapacity: true)
        // In place (iterating `rooms.keys` while writing would copy the dictionary).
        var room = rooms.startIndex
        while room != rooms.endIndex {
            rooms.values[room].members.removeAll(keepingCapacity: true)
            rooms.formIndex(after: &room)
        }
        for (index, member) in members.enumerated() {
            // A key added twice (the registry refuses that) names the first, as a search from the front would.
            let key = MemberKey(room: member.room, participant: member.participant)
            if memberOfKey[key] == nil { memberOfKey[key] = index }
            if let ssrc = member.ssrc, member.source != nil { memberOfSSRC[ssrc] = index }
            rooms[member.room]?.members.append(index)
        }
        mixing = members.contains { $0.mix != nil }
        hops = [Float](repeating: 0, count: mixing ? members.count * AnalysisFormat.hopSize : 0)
        hopHeld = [Bool](repeating: false, count: mixing ? members.count : 0)
    }

    /// Checks a datagram against the bindings, forwards it, and hands it to the publisher's jitter buffer.
    /// - Complexity: one hash lookup of the SSRC and one of the room, then O(members of the room).
    /// - Parameter arrival: When it arrived, in 16 kHz samples since tick 0; nil: now, by the loop's clock (a
    ///   test that plays the loop faster than real time gives the time it plays).
    func route(_ bytes: UnsafeRawBufferPointer, from source: SocketAddress, arrival: Int? = nil) {
        confinement.enter("route")
        defer { confinement.leave() }
        guard !ownAddresses.contains(source) else {
            counters.fromSelf += 1
            return
        }
        if RTPPacket.isRTCP(bytes) {
            // Counted, never forwarded. A bound publisher's sender report aligns its stream; a report of an
            // SSRC no publisher holds, or from another address, is dropped as RTP would be; other RTCP is skipped.
            counters.rtcp += 1
            guard let report = RTCPSenderReport.parse(bytes) else { return }
            guard let index = memberOfSSRC[SSRC(report.ssrc)] else {
                counters.unknownSSRC += 1
                return
            }
            guard let bound = members[index].source, bound == (bound.port == 0 ? source.withPort(0) : source) else {
                counters.wrongSource += 1
                return
            }
            if members[index].stream?.receive(report) == true { counters.senderReports += 1 }
            return
        }
        guard case .packet(var packet) = RTPPacket.parse(bytes, audioLevelID: 1) else {
            counters.malformed += 1
            return
        }
        guard let index = memberOfSSRC[SSRC(packet.ssrc)] else {
            counters.unknownSSRC += 1
            return
        }
        let member = members[index]
        guard let bound = member.source, bound == (bound.port == 0 ? source.withPort(0) : source) else {
            counters.wrongSource += 1
            return
        }
        guard !member.muted else {
            counters.muted += 1
            return
        }
        // The publisher numbers its own extensions: read its level under its id (the header again, O(extension)).
        if member.audioLevelID != 1, case .packet(let own) = RTPPacket.parse(bytes, audioLevelID: member.audioLevelID) {
            packet = own
        }
        // A bound publisher's traffic is forwarded to every member: hold it to what audio needs.
        guard bytes.count <= Self.maximumDatagramBytes else {
            counters.oversized += 1
            return
        }
        guard members[index].budget.spend(1, now: Double(ticks) / 100) else {
            counters.overBudget += 1
            return
        }
        counters.accepted += 1
        // Index loops on the per-tick path: a debug build's `for x in array` allocates per element, and the
        // allocation test (`MediaLoopAllocationTests`) runs in debug builds too.
        if let roomMembers = rooms[member.room]?.members {
            for position in roomMembers.indices {
                let other = roomMembers[position]
                guard members[other].participant != member.participant, members[other].mix == nil,
                    let receiver = members[other].receiver
                else { continue }
                if socket.send(bytes, to: receiver) { counters.forwarded += 1 } else { counters.sendFailures += 1 }
            }
        }
        _ = member.stream?.insert(packet, datagram: bytes, arrival: arrival ?? runner.arrivalNow)
    }

    /// A publisher's hop that held audio this tick, as the engine heard it: recorded, and kept for the mixes.
    private func heard(_ hop: UnsafeBufferPointer<Float>, of key: MemberKey) {
        if recordsAudio { delegate?.recordHop(room: key.room, participant: key.participant, hop: hop, tick: ticks) }
        if mixing, let index = memberOfKey[key] {
            let start = index * AnalysisFormat.hopSize
            for i in 0..<AnalysisFormat.hopSize { hops[start + i] = hop[i] }
            hopHeld[index] = true
        }
    }

    /// After the runner's tick (the hops heard): the mixes, the events, the levels, the tick's statistics.
    private func ticked(began: UInt64, late: Bool) {
        if late { counters.lateTicks += 1 }
        if mixing {
            sendMixes()
            for index in hopHeld.indices { hopHeld[index] = false }
        }
        if ticks % 100 == 0 { countLosses() }
        publishedTicks.store(ticks, ordering: .releasing)
        runner.consumeEvents { event in
            switch event {
            case .dominant(let name, let stream, let time):
                guard let room = rooms[name] else { return }
                delegate?.speakerChanged(room: name, participant: stream?.participant, time: time - Double(room.openedAtTick) / 100)
            case .speech(let name, let stream, let active, _, let since):
                guard recordsAudio, let room = rooms[name] else { return }
                delegate?.speechChanged(
                    room: name, participant: stream.participant, active: active, time: since - Double(room.openedAtTick) / 100)
            }
        }
        if ticks % levelTicks == 0 { reportLevels() }
        noteWork(seconds: Double(runner.ticker.now() - began) / 1e9)
        let snapshot = counters
        statisticsBox.withLock { $0 = snapshot }
        delegate?.tickEnded(ticks: ticks)
    }

    /// Adds up the jitter buffers' losses (once a second: O(members)).
    private func countLosses() {
        var concealed = lostByRemoved.concealed, recovered = lostByRemoved.recovered, silenced = lostByRemoved.silenced
        for index in members.indices {
            guard let statistics = members[index].stream?.statistics else { continue }
            concealed += statistics.concealed
            recovered += statistics.recovered
            silenced += statistics.silenced
        }
        counters.concealed = concealed
        counters.recovered = recovered
        counters.silenced = silenced
    }

    /// Gives each WebRTC member this tick's sum of the other publishers' hops in its room: the room's
    /// sum once, then for each member that sum less its own hop.
    /// - Complexity: O(members × hop) per room with a mixing member. Allocates nothing.
    private func sendMixes() {
        let size = AnalysisFormat.hopSize
        var cursor = rooms.startIndex
        while cursor != rooms.endIndex {
            let room = rooms.values[cursor]
            rooms.formIndex(after: &cursor)
            var anyMix = false
            for position in room.members.indices where members[room.members[position]].mix != nil { anyMix = true }
            guard anyMix else { continue }
            for i in 0..<size { roomSum[i] = 0 }
            for position in room.members.indices where hopHeld[room.members[position]] {
                let start = room.members[position] * size
                for i in 0..<size { roomSum[i] += hops[start + i] }
            }
            for position in room.members.indices {
                let index = room.members[position]
                guard members[index].mix != nil, let receiver = members[index].receiver else { continue }
                let start = index * size, own = hopHeld[index]
                for i in 0..<size { mixHop[i] = own ? roomSum[i] - hops[start + i] : roomSum[i] }
                let socket = self.socket
                var sent = 0, failed = 0
                mixHop.withUnsafeBufferPointer { mix in
                    members[index].mix?.add(mix) { packet in
                        if socket.send(packet, to: receiver) { sent += 1 } else { failed += 1 }
                    }
                }
                counters.mixed += sent
                counters.sendFailures += failed
            }
        }
    }

    /// Adds one tick's work to the ring and the totals; once a second, takes the quantiles of the ring.
    private func noteWork(seconds: Double) {
        var times = counters.tickTimes
        tickWork[times.count % TickTimes.window] = seconds
        times.count += 1
        times.sum += seconds
        if ticks % 100 == 0 {
            let filled = min(times.count, TickTimes.window)
            // Copied into a buffer made at start and sorted there: 1,000 values once a second.
            tickWorkScratch.withUnsafeMutableBufferPointer { scratch in
                tickWork.withUnsafeBufferPointer { work in
                    _ = UnsafeMutableBufferPointer(rebasing: scratch[..<filled]).update(fromContentsOf: work[..<filled])
                }
                Self.sortAscending(UnsafeMutableBufferPointer(rebasing: scratch[..<filled]))
                // Nearest rank: the smallest value with at least q of the window at or below it.
                func rank(_ q: Double) -> Int { Swift.min(filled - 1, Swift.max(0, Int((q * Double(filled)).rounded(.up)) - 1)) }
                times.p50 = scratch[rank(0.5)]
                times.p90 = scratch[rank(0.9)]
                times.p99 = scratch[rank(0.99)]
                times.max = scratch[filled - 1]
            }
        }
        counters.tickTimes = times
    }

    /// Sorts `values` ascending in place (heapsort). The standard library's generic `sort()` allocates
    /// thousands of times per call in a debug build, where the allocation test runs.
    /// - Complexity: O(n log n). Allocates nothing.
    static func sortAscending(_ values: UnsafeMutableBufferPointer<Double>) {
        let count = values.count
        // Moves the value at `root` down until it is no smaller than its children, within values[..<end].
        func siftDown(_ root: Int, _ end: Int) {
            var parent = root
            while 2 * parent + 1 < end {
                var child = 2 * parent + 1
                if child + 1 < end && values[child] < values[child + 1] { child += 1 }
                guard values[parent] < values[child] else { return }
                values.swapAt(parent, child)
                parent = child
            }
        }
        var root = count / 2 - 1
        while root >= 0 {
            siftDown(root, count)
            root -= 1
        }
        var end = count - 1
        while end > 0 {
            values.swapAt(0, end)
            siftDown(0, end)
            end -= 1
        }
    }

    private func reportLevels() {
        for (name, room) in rooms {
            var levels: [String: Double] = [:]
            var speaking: [String] = []
            for index in room.members {
                let member = members[index]
                let key = MemberKey(room: member.room, participant: member.participant)
                guard member.stream != nil || member.streamed != nil, let engineLevel = runner.rooms.level(of: key) else { continue }
                let level = member.muted ? -127 : max(-127, min(0, Double(engineLevel)))
                levels[member.participant.rawValue] = (level * 10).rounded() / 10
                if !member.muted, runner.rooms.isSpeaking(key) { speaking.append(member.participant.rawValue) }
            }
            guard !levels.isEmpty else { continue }
            delegate?.audioLevels(room: name, time: Double(ticks - room.openedAtTick) / 100, levels: levels, speaking: speaking)
        }
    }
}

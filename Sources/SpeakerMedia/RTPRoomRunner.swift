import Foundation
import SpeakerCore
import SpeakerRTP

/// The paced multi-room runner of live RTP: rooms whose streams are RTP/Opus jitter buffers, decided by one
/// engine every 10 ms of wall-clock time. What `listen` and the room server both run.
///
/// The stages, in order, each its own type:
/// - **ingress**: `run(on:until:…)` takes datagrams from the sockets until the tick is due (at most
///   `datagramsPerTick`, and no more once due after `datagramsPerLateTick`: a flood cannot stall the clock)
///   and hands each to the caller, which parses and admits it (its own rules: any SSRC for `listen`, a bound
///   publisher for the server) and inserts it here by the stream's id;
/// - **hop sources**: one `RTPStreamReceiver` per stream, in decode mode (decoded on the engine's workers,
///   see `RTPStreamReceiver`) or level mode (a room that is level-only: nothing is decoded, the engine hears
///   the packets' RFC 6464 levels); the streams of a room share its `PlayoutClock`, so they play aligned by
///   capture time;
/// - **the rooms**: a `MultiRoomRunner` keyed by the caller's own ids, which the events name;
/// - **outputs**: the caller's, after each tick: the hops the engine heard (mixing, recording), the events.
///
/// The clock is a `PacedTicker`: tick `n` covers `[n·10 ms, (n+1)·10 ms)` after `start()`, and a loop that
/// runs late runs its ticks back to back until it has caught up. A test plays it faster than real time by
/// calling `insert` and `tick` itself.
///
/// Owned by one thread (the loop's); after the rooms and streams are added, nothing on the per-tick path
/// allocates.
public final class RTPRoomRunner<Room: Hashable, Stream: Hashable> {
    /// What a room's streams carry to the engine.
    public enum RoomMode: Sendable, Equatable {
        /// Opus is decoded; the engine analyses the audio.
        case decode
        /// Nothing is decoded; the engine hears the levels the caller parsed from the packets' RFC 6464
        /// header extension.
        case levels
    }

    private struct RoomState {
        let mode: RoomMode
        let clock: PlayoutClock
        let jitter: JitterBufferConfiguration
    }

    /// The most datagrams one tick takes from the sockets: 204,800 a second, four times what 1,000
    /// publishers send at 50 packets a second each.
    public static var datagramsPerTick: Int { 2048 }
    /// A tick that is due stops taking datagrams, but not before it has taken this many: a loop running
    /// late after a stall still drains, tick by tick, what queued meanwhile (50 publishers send 25 a tick).
    public static var datagramsPerLateTick: Int { 256 }
    /// Past `datagramsPerLateTick`, the clock is read after every this many datagrams.
    static var datagramsBetweenClockReads: Int { 16 }

    /// The rooms and the engine.
    public let rooms: MultiRoomRunner<Room, Stream>
    /// The 10 ms clock; its tick count is the runner's.
    public private(set) var ticker: PacedTicker
    private var roomStates: [Room: RoomState] = [:]
    private var receivers: [Stream: RTPStreamReceiver] = [:]
    /// Streams that are not RTP (raw PCM over a WebSocket, say): their sources, pulled as any other.
    private var otherSources: [Stream: any HopSource] = [:]
    private var streamOfSSRC: [UInt32: Stream] = [:]
    /// The receiver's wall clock (Unix seconds) at sample 0 of the playout clock (tick 0), once started.
    public private(set) var wallClockAtZero: Double?
    /// Debug builds: stops on a call while another thread is inside.
    private let confinement = ConfinementCheck("RTPRoomRunner")

    /// - Parameters:
    ///   - configuration: The engine's configuration.
    ///   - workers: Engine threads (decoding runs on them too).
    ///   - policies: The floor policies the configuration may name.
    ///   - clock: Monotonic nanoseconds (`PacedTicker`).
    /// - Throws: `ConfigurationError` for a configuration out of range.
    public init(
        configuration: EngineConfiguration = EngineConfiguration(), workers: Int = 1, policies: FloorPolicies = .standard,
        clock: @escaping @Sendable () -> UInt64 = PacedTicker.uptimeNanoseconds
    ) throws(ConfigurationError) {
        rooms = try MultiRoomRunner(configuration: configuration, workers: workers, policies: policies)
        ticker = PacedTicker(clock: clock)
    }

    /// Ticks done: the current tick's index.
    public var ticks: Int { ticker.ticks }

    /// Starts the clock: tick 0 begins now, and sender reports are placed on the wall clock from here.
    public func start() {
        ticker.start()
        let zero = RTCPSenderReport.unixTimeNow() - Double(ticker.now() &- ticker.startTime) / 1e9
        wallClockAtZero = zero
        for state in roomStates.values { state.clock.wallClockAtZero = zero }
    }

    /// Now, in 16 kHz samples of the playout clock since tick 0: a datagram's arrival.
    public var arrivalNow: Int { Int((ticker.now() &- ticker.startTime) / 62_500) }

    // MARK: Rooms and streams

    /// Adds a room whose streams share one playout clock.
    /// - Parameters:
    ///   - mode: Decoded or level-only.
    ///   - jitter: The jitter buffers' settings and the room's playout delays.
    ///   - name: The engine's name for it.
    /// - Precondition: no room has this id.
    public func addRoom(_ room: Room, mode: RoomMode = .decode, jitter: JitterBufferConfiguration = JitterBufferConfiguration(), name: String? = nil) {
        confinement.enter("addRoom")
        defer { confinement.leave() }
        let clock = PlayoutClock(configuration: jitter)
        clock.wallClockAtZero = wallClockAtZero
        roomStates[room] = RoomState(mode: mode, clock: clock, jitter: jitter)
        rooms.addRoom(room, name: name)
    }

    /// Removes a room and its streams (their utterances end: events).
    /// - Returns: The counters of the streams' receivers, in the order the streams were added.
    @discardableResult
    public func removeRoom(_ room: Room) -> [(stream: Stream, statistics: RTPStreamStatistics)] {
        confinement.enter("removeRoom")
        defer { confinement.leave() }
        var removed: [(Stream, RTPStreamStatistics)] = []
        // RTP streams give their counters; other sources are removed alike and give none.
        for stream in rooms.streams where rooms.room(of: stream) == room {
            if let statistics = removeStream(stream) { removed.append((stream, statistics)) }
        }
        rooms.removeRoom(room)
        roomStates[room] = nil
        return removed
    }

    /// Whether `room` is present.
    public func hasRoom(_ room: Room) -> Bool { roomStates[room] != nil }

    /// What a present room's streams carry.
    public func mode(of room: Room) -> RoomMode? { roomStates[room]?.mode }

    /// The playout clock a present room's streams share.
    public func clock(of room: Room) -> PlayoutClock? { roomStates[room]?.clock }

    /// Adds the stream of `ssrc` to a room: a jitter buffer starting at this tick, on the room's clock.
    /// - Parameters:
    ///   - stream: The caller's id, unique among present streams.
    ///   - name: The engine's name for it.
    /// - Throws: `SpeakerIOError` when libopus cannot make a decoder.
    /// - Precondition: the room is present, and no present stream has `ssrc`.
    public func addStream(_ stream: Stream, ssrc: UInt32, in room: Room, name: String? = nil) throws {
        confinement.enter("addStream")
        defer { confinement.leave() }
        guard let state = roomStates[room] else { preconditionFailure("room \(room) is not present") }
        precondition(streamOfSSRC[ssrc] == nil, "SSRC \(ssrc) is a stream already")
        let receiver = try RTPStreamReceiver(
            ssrc: ssrc, mode: state.mode == .levels ? .levels : .decode, configuration: state.jitter, startTick: ticks,
            clock: state.clock)
        rooms.add(receiver, as: stream, name: name, in: room, levels: state.mode == .levels)
        receivers[stream] = receiver
        streamOfSSRC[ssrc] = stream
    }

    /// Adds a stream whose audio is not RTP (`PCMHopSource`: raw PCM over a WebSocket) to a room: pulled each
    /// tick as it is, analysed as audio whatever the room's mode (there are no levels to hear).
    /// - Precondition: the room is present; no present stream has the id.
    public func addSource(_ source: any HopSource, as stream: Stream, in room: Room, name: String? = nil) {
        confinement.enter("addSource")
        defer { confinement.leave() }
        precondition(roomStates[room] != nil, "room \(room) is not present")
        rooms.add(source, as: stream, name: name, in: room, levels: false)
        otherSources[stream] = source
    }

    /// Removes a present stream (its utterance ends; if it held the floor, its room has nobody).
    /// - Returns: Its receiver's counters; nil if it was not present or not RTP.
    @discardableResult
    public func removeStream(_ stream: Stream) -> RTPStreamStatistics? {
        confinement.enter("removeStream")
        defer { confinement.leave() }
        if otherSources.removeValue(forKey: stream) != nil {
            rooms.remove(stream)
            return nil
        }
        guard let receiver = receivers.removeValue(forKey: stream) else { return nil }
        streamOfSSRC[receiver.ssrc] = nil
        rooms.remove(stream)
        return receiver.statistics
    }

    /// The present stream of `ssrc`.
    public func stream(ofSSRC ssrc: UInt32) -> Stream? { streamOfSSRC[ssrc] }

    /// A present stream's receiver: its counters, its timing.
    public func receiver(of stream: Stream) -> RTPStreamReceiver? { receivers[stream] }

    // MARK: Packets in

    /// Takes a parsed packet of a present stream into its jitter buffer.
    /// - Parameter arrival: When it arrived, in 16 kHz samples since tick 0; nil: now (`arrivalNow`).
    /// - Returns: What the buffer did with it; nil when the stream is not present.
    /// - Complexity: one hash lookup; allocates nothing.
    @discardableResult
    public func insert(
        _ packet: RTPPacket, datagram: UnsafeRawBufferPointer, into stream: Stream, arrival: Int? = nil
    ) -> RTPStreamReceiver.Insertion? {
        guard let receiver = receivers[stream] else { return nil }
        return receiver.insert(packet, datagram: datagram, arrival: arrival ?? arrivalNow)
    }

    /// Hands a sender report to the stream of its SSRC.
    /// - Returns: False if its SSRC is no stream, or the report cannot be placed.
    public func receive(_ report: RTCPSenderReport) -> Bool {
        guard let stream = streamOfSSRC[report.ssrc] else { return false }
        return receivers[stream]!.receive(report)
    }

    // MARK: Ticks

    /// Plays the current tick of every stream, runs the engine, and advances the clock.
    /// - Complexity: O(streams) plus the engine's tick and the decoding. Allocates nothing.
    public func tick() {
        confinement.enter("tick")
        defer { confinement.leave() }
        rooms.tick()
        ticker.advance()
    }

    /// `tick()`, handing `hearing` each decoded stream's hop that held audio this tick, after the engine's
    /// tick and before the clock advances (`ticks` is the tick's index during the calls).
    /// - Complexity: O(streams) plus the engine's tick and the decoding. Allocates nothing.
    public func tick(hearing: (Stream, UnsafeBufferPointer<Float>) -> Void) {
        confinement.enter("tick")
        defer { confinement.leave() }
        rooms.tick(hearing: hearing)
        ticker.advance()
    }

    /// Ends every stream's utterance and the floors (events), after the last tick. The receivers stay, for
    /// their counters (`receiver(of:)`).
    public func finish() {
        confinement.enter("finish")
        defer { confinement.leave() }
        rooms.finish()
    }

    /// The events since the last call, in the caller's ids.
    public func consumeEvents(_ body: (MultiRoomRunner<Room, Stream>.Event) throws -> Void) rethrows {
        try rooms.consumeEvents(body)
    }

    /// Runs the tick that is due now, late or not: `tick(hearing:)` when `hears`, else `tick()`, then `ticked`
    /// with when the tick began and whether it began more than a tick after it was due. The paced loop's step
    /// after its input; a caller that plays the loop itself (a test, faster than real time) calls it too.
    /// - Complexity: as `tick`. Allocates nothing.
    public func runDueTick(
        hears: Bool, hearing: (Stream, UnsafeBufferPointer<Float>) -> Void, ticked: (_ began: UInt64, _ late: Bool) -> Void
    ) {
        let began = ticker.now(), late = ticker.isLate(began: began)
        if hears { tick(hearing: hearing) } else { tick() }
        ticked(began, late)
    }

    /// The paced loop: until `stop` says so, `beforeTick`, then datagrams to `receive` until the tick is
    /// due, then `runDueTick` (hearing the hops when `hears()` says so for this tick; the events and outputs
    /// are the caller's, in `ticked`). Call after `start()`, on the thread that owns the runner.
    /// - Parameters:
    ///   - sockets: Where datagrams arrive.
    ///   - stop: Read before each tick and while waiting; true ends the loop.
    ///   - receive: One datagram and its sender; the bytes are valid during the call.
    /// - Complexity: per tick, O(datagrams) plus `tick`. Allocates nothing after its first round.
    public func run(
        on sockets: [UDPSocket], until stop: () -> Bool, beforeTick: () -> Void,
        receive: (UnsafeRawBufferPointer, SocketAddress) -> Void,
        hears: () -> Bool, hearing: (Stream, UnsafeBufferPointer<Float>) -> Void,
        ticked: (_ began: UInt64, _ late: Bool) -> Void
    ) {
        let datagram = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 16)
        defer { datagram.deallocate() }
        var source = SocketAddress(host: "0.0.0.0", port: 0)!
        while !stop() {
            beforeTick()
            var taken = 0
            let ticker = self.ticker, due = ticker.due
            ticker.waitUntilDue {
                var index = 0
                while index < sockets.count {
                    while taken < Self.datagramsPerTick, let count = sockets[index].receive(into: datagram, from: &source) {
                        receive(UnsafeRawBufferPointer(rebasing: datagram[..<count]), source)
                        taken += 1
                        if taken >= Self.datagramsPerLateTick, taken % Self.datagramsBetweenClockReads == 0, ticker.now() >= due {
                            return false
                        }
                    }
                    index += 1
                }
                return !stop()
            } sleep: { seconds in
                if taken < Self.datagramsPerTick {
                    _ = UDPSocket.wait(sockets, timeout: seconds)
                } else {
                    // The budget is spent: the rest waits in the kernel until the next tick.
                    usleep(UInt32(seconds * 1e6))
                }
            }
            runDueTick(hears: hears(), hearing: hearing, ticked: ticked)
        }
    }
}

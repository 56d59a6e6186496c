import Glibc

/// How a live loop's thread (a 10 ms media clock) asks the kernel to schedule it.
public enum LoopPriority: String, Sendable, CaseIterable {
    /// `SCHED_RR` at `LoopScheduling.realTimePriority`: runnable, the thread runs before every
    /// time-shared thread of the machine, so a busy host cannot make its clock fall behind. Needs root,
    /// `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least that priority; refused, the thread stays `normal`.
    case realtime
    /// The kernel's time-sharing scheduler (`SCHED_OTHER`), as every thread starts.
    case normal
}

/// What a thread runs at after `LoopScheduling.apply`.
public struct LoopSchedulingOutcome: Sendable, Equatable {
    /// The priority the thread has.
    public var priority: LoopPriority
    /// Why `realtime` was asked for and not granted (the system call and its error); nil otherwise.
    public var refusal: String?

    public init(priority: LoopPriority, refusal: String? = nil) {
        self.priority = priority
        self.refusal = refusal
    }
}

/// Sets the scheduling of the calling thread.
///
/// Why: on a machine whose cores are all busy, the time-sharing scheduler lets each runnable thread
/// wait its turn, and a woken thread preempts one that has run longer. A media loop that forwards
/// thousands of packets a second is such a thread: measured with 50 call clients beside the server on
/// 2 cores, its 10 ms clock fell up to 17 s behind and most rooms named nobody, while it used 15 % of
/// one core; at `SCHED_RR` the same run kept time to the tick (docs/call.md, "Load").
///
/// The kernel still bounds real-time threads (by default 95 % of each second), so a loop that
/// misbehaves slows the machine but does not lock it.
public enum LoopScheduling {
    /// The `SCHED_RR` priority of `realtime`: low among real-time priorities (1…99), so audio
    /// servers' threads (PipeWire asks for 88) still come first.
    public static let realTimePriority: Int32 = 10

    /// Gives the calling thread `priority`.
    /// - Parameter priority: What to ask for.
    /// - Returns: What the thread runs at: `realtime` when granted; `normal` with the refusal when not.
    /// - Complexity: One system call. Call once, when the thread starts.
    public static func apply(_ priority: LoopPriority) -> LoopSchedulingOutcome {
        let policy: Int32 = priority == .realtime ? SCHED_RR : SCHED_OTHER
        var parameters = sched_param()
        parameters.sched_priority = priority == .realtime ? realTimePriority : 0
        let status = pthread_setschedparam(pthread_self(), policy, &parameters)
        guard status != 0 else { return LoopSchedulingOutcome(priority: priority) }
        let reason = String(cString: strerror(status))
        let hint = status == EPERM ? " (needs root, CAP_SYS_NICE or an RLIMIT_RTPRIO of \(realTimePriority))" : ""
        return LoopSchedulingOutcome(priority: .normal, refusal: "pthread_setschedparam(SCHED_RR): \(reason)\(hint)")
    }

    /// The calling thread's policy as the kernel has it: `realtime` for `SCHED_RR` or `SCHED_FIFO`.
    public static func current() -> LoopPriority {
        var policy: Int32 = 0
        var parameters = sched_param()
        guard pthread_getschedparam(pthread_self(), &policy, &parameters) == 0 else { return .normal }
        return policy == SCHED_RR || policy == SCHED_FIFO ? .realtime : .normal
    }
}

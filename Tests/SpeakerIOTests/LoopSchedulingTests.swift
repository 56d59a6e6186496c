import Foundation
import Glibc
import Testing
import SpeakerIO

/// `LoopScheduling` against what the kernel reports for the thread (`pthread_getschedparam`), on
/// threads of their own so the test runner's threads keep their scheduling.
@Suite("loop scheduling")
struct LoopSchedulingTests {
    /// Runs `body` on a new thread and returns its result.
    private static func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = LockedBox<T>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            result.set(body())
            done.signal()
        }
        thread.start()
        done.wait()
        return result.get()!
    }

    private static func kernelPolicy() -> (policy: Int32, priority: Int32) {
        var policy: Int32 = -1
        var parameters = sched_param()
        _ = pthread_getschedparam(pthread_self(), &policy, &parameters)
        return (policy, parameters.sched_priority)
    }

    @Test func realtimeIsWhatTheKernelGrantsOrARefusalThatSaysWhy() {
        let (outcome, kernel) = Self.onNewThread { (LoopScheduling.apply(.realtime), Self.kernelPolicy()) }
        switch outcome.priority {
        case .realtime:
            #expect(outcome.refusal == nil)
            #expect(kernel.policy == SCHED_RR && kernel.priority == LoopScheduling.realTimePriority)
        case .normal:
            // Refused (no CAP_SYS_NICE here): the thread is as it was, and the outcome says why.
            #expect(kernel.policy == SCHED_OTHER)
            #expect(outcome.refusal?.contains("pthread_setschedparam") == true, "\(outcome)")
        }
    }

    /// Root with CAP_SYS_NICE (this project's machines and CI) is granted realtime: the load test
    /// depends on it, so a refusal there must show up here, not as rooms that name nobody.
    @Test(.enabled(if: geteuid() == 0 && Self.hasSysNice, "needs CAP_SYS_NICE"))
    func rootIsGrantedRealtime() {
        let (outcome, current) = Self.onNewThread { (LoopScheduling.apply(.realtime), LoopScheduling.current()) }
        #expect(outcome == LoopSchedulingOutcome(priority: .realtime))
        #expect(current == .realtime)
    }

    @Test func normalAfterRealtimeReturnsTheThreadToTimeSharing() {
        let (outcome, kernel) = Self.onNewThread { () -> (LoopSchedulingOutcome, (policy: Int32, priority: Int32)) in
            _ = LoopScheduling.apply(.realtime)
            return (LoopScheduling.apply(.normal), Self.kernelPolicy())
        }
        #expect(outcome == LoopSchedulingOutcome(priority: .normal))
        #expect(kernel.policy == SCHED_OTHER && kernel.priority == 0)
    }

    /// Whether the process's effective capabilities include CAP_SYS_NICE (bit 23 of CapEff).
    static var hasSysNice: Bool {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
            let mask = UInt64(line.dropFirst("CapEff:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << 23) != 0
    }
}

/// A value handed from one thread to another.
private final class LockedBox<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value: T?
    func set(_ newValue: T) { lock.withLock { value = newValue } }
    func get() -> T? { lock.withLock { value } }
}

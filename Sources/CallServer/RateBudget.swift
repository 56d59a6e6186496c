/// A token bucket: `rate` units a second accrue, at most `burst` are saved, and `spend` takes from them
/// or refuses. Used for each signalling connection's messages and bytes and each publisher's RTP packets.
struct RateBudget: Equatable, Sendable {
    /// Units per second.
    let rate: Double
    /// The most units saved (and so the largest burst, from idle).
    let burst: Double
    private var available: Double
    private var updated: Double

    /// A full bucket at time `now` (seconds, any monotonic origin).
    init(rate: Double, burst: Double, now: Double) {
        precondition(rate > 0 && burst > 0, "a budget needs a positive rate and burst")
        self.rate = rate
        self.burst = burst
        available = burst
        updated = now
    }

    /// Takes `amount` units if that many have accrued by `now`; false (and nothing taken) otherwise.
    mutating func spend(_ amount: Double, now: Double) -> Bool {
        if now > updated {
            available = min(burst, available + (now - updated) * rate)
            updated = now
        }
        guard available >= amount else { return false }
        available -= amount
        return true
    }
}

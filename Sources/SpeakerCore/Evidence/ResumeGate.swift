/// Judges a sound that follows digital silence — a stream's start, an unmute, a DTX pause, a packet
/// gap — before any of its frames may be speech evidence.
///
/// During silence the noise tracker learns a floor of zeros, against which the room's noise, when it
/// comes back, stands tens of dB high; low-passed noise then passes the voicing tests (its
/// autocorrelation is large at short lags) and would start an utterance. A voice starting differs from
/// a noise starting in one thing the first stage measures on every hop: the noise is steady from its
/// first hops on, a voice is not (its onset and its syllables move the level by more than `spread` dB
/// within a tenth of a second). So, when sound follows at least `silenceFrames` hops of silence while
/// the stream is not speaking, the gate holds that sound's frames back as evidence and watches its hop
/// energy through a first-difference filter (which stresses the speech band over rumble):
///
/// - once the energy of the hops after the first `settleFrames` has spread by more than `spread` dB,
///   the sound is not steady: it is released, and the rules judge it against the floor as it stands;
/// - if it stays within `spread` dB for `windowFrames` hops, it is steady: the noise tracker is told to
///   forget the silence and take this sound as its floor (`NoiseTracker.forgetPast`), then it is released.
///
/// A voice after silence is thus decided a few hops later than without the gate (0–120 ms measured);
/// a steady sound is never speech evidence during its first `windowFrames` hops, and afterwards is
/// judged against itself.
///
/// Packets that arrive in bursts (a busy sender, a lossy network) reach the engine as sound chopped by
/// runs of zeros where the jitter buffer ran dry. Such gaps do not start the judgement again: a gap
/// shorter than `rearmFrames` inside a watched sound only pauses the watch (its first hop after the gap is
/// not measured: the edge), and once a sound has been released as not steady, the gate stays open until
/// the stream has been silent for `rearmFrames` hops. Real-time safe; O(1) state; O(hop) work only on the
/// frames it watches.
struct ResumeGate {
    /// What the gate says of a frame.
    enum Step: Equatable {
        /// Not watching: the frame's evidence stands.
        case open
        /// Watching a sound that followed silence: the frame is no speech evidence.
        case hold
        /// The sound was steady for the whole window: the noise floor must forget the silence and
        /// learn from this sound. The frame is no speech evidence.
        case steady
    }

    /// Hops quieter than this (dBFS) are silence: digital zeros, 16-bit dither, a muted microphone.
    static let silenceDBFS: Float = -80
    /// Hops of silence after which sound is watched. 5: 50 ms, after which the tracked floor has fallen
    /// about 8 dB towards the silence.
    static let silenceFrames = 5
    /// Hops of silence after which a sound released as not steady is over, and the next is watched
    /// again. 50: 0.5 s, longer than the gaps a jitter buffer leaves when packets come in bursts, shorter
    /// than a DTX pause between sentences.
    static let rearmFrames = 50
    /// Hops at the start of a sound that are not measured (a decoder's or a fade's first hops, and the
    /// edge of the silence in the analysis window).
    static let settleFrames = 3
    /// Sounding hops watched at most.
    static let windowFrames = 20
    /// Spread (dB) of the differenced hop energy at which a sound is not steady.
    static let spread: Float = 6

    private var silentRun = 0
    /// Sounding hops of the watched sound so far; nil when not watching.
    private var watched: Int? = nil
    /// A sound was released as not steady and no silence of `rearmFrames` hops has followed.
    private var released = false
    private var lowest: Float = .greatestFiniteMagnitude
    private var highest: Float = -.greatestFiniteMagnitude

    /// Takes one hop.
    /// - Parameters:
    ///   - energyDBFS: the hop's energy.
    ///   - speaking: the stream is inside an utterance (a gap inside one is the hangover's business).
    ///   - differencedDBFS: a closure giving the hop's energy through a first-difference filter, dBFS;
    ///     called only on the hops the gate measures.
    mutating func step(energyDBFS: Float, speaking: Bool, differencedDBFS: () -> Float) -> Step {
        if energyDBFS < Self.silenceDBFS {
            silentRun += 1
            if silentRun >= Self.rearmFrames {
                // A long silence: whatever sounded before is over; the next sound is watched afresh.
                watched = nil
                released = false
            }
            return .open
        }
        let gap = silentRun
        silentRun = 0
        if watched == nil {
            guard !released, gap >= Self.silenceFrames, !speaking else { return .open }
            watched = 0
            lowest = .greatestFiniteMagnitude
            highest = -.greatestFiniteMagnitude
        }
        let index = watched!
        watched = index + 1
        // The settling hops, and the first hop after a gap inside the sound (its edge), are not measured.
        if index >= Self.settleFrames && gap == 0 {
            let decibels = differencedDBFS()
            lowest = min(lowest, decibels)
            highest = max(highest, decibels)
            if highest - lowest > Self.spread {
                watched = nil
                released = true
                return .open
            }
        }
        if index + 1 >= Self.windowFrames {
            watched = nil
            return .steady
        }
        return .hold
    }
}

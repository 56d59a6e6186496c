import Foundation

/// The results of an evaluation as a JSON document: every metric per meeting and pooled, with the
/// frame counts and latencies behind them. Metric definitions are in docs/evaluation.md.
public struct EvaluationReport: Codable, Sendable {
    /// Voice-activity figures at one collar.
    public struct VAD: Codable, Sendable, Equatable {
        public var collar: Double
        public var frames: Int
        public var truePositives: Int
        public var falsePositives: Int
        public var falseNegatives: Int
        public var trueNegatives: Int
        public var precision: Double
        public var recall: Double
        public var f1: Double
        public var missRate: Double
        public var falseAlarmRate: Double
        public var balancedAccuracy: Double
        public var detectionCost: Double
        /// Frames with only other participants' speech, the system's speech marks among them, and their
        /// ratio (null without such frames).
        public var leakedFrames: Int
        public var leakedFalseAlarms: Int
        public var leakedFalseAlarmRate: Double?

        /// The figures of `score`, scored at `collar` seconds.
        public init(_ score: VADScore, collar: Double) {
            let c = score.counts
            self.collar = collar
            frames = c.total
            truePositives = c.truePositives
            falsePositives = c.falsePositives
            falseNegatives = c.falseNegatives
            trueNegatives = c.trueNegatives
            precision = c.precision
            recall = c.recall
            f1 = c.f1
            missRate = c.missRate
            falseAlarmRate = c.falseAlarmRate
            balancedAccuracy = c.balancedAccuracy
            detectionCost = c.detectionCost
            leakedFrames = score.leaked.frames
            leakedFalseAlarms = score.leaked.falseAlarms
            leakedFalseAlarmRate = score.leaked.falseAlarmRate
        }

        private enum CodingKeys: String, CodingKey {
            case collar, frames, truePositives, falsePositives, falseNegatives, trueNegatives, precision, recall, f1
            case missRate, falseAlarmRate, balancedAccuracy, detectionCost, leakedFrames, leakedFalseAlarms
            case leakedFalseAlarmRate
        }

        /// Encodes every member, a missing rate as `null` (not left out), so every object has every key.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(collar, forKey: .collar)
            try c.encode(frames, forKey: .frames)
            try c.encode(truePositives, forKey: .truePositives)
            try c.encode(falsePositives, forKey: .falsePositives)
            try c.encode(falseNegatives, forKey: .falseNegatives)
            try c.encode(trueNegatives, forKey: .trueNegatives)
            try c.encode(precision, forKey: .precision)
            try c.encode(recall, forKey: .recall)
            try c.encode(f1, forKey: .f1)
            try c.encode(missRate, forKey: .missRate)
            try c.encode(falseAlarmRate, forKey: .falseAlarmRate)
            try c.encode(balancedAccuracy, forKey: .balancedAccuracy)
            try c.encode(detectionCost, forKey: .detectionCost)
            try c.encode(leakedFrames, forKey: .leakedFrames)
            try c.encode(leakedFalseAlarms, forKey: .leakedFalseAlarms)
            try c.encode(leakedFalseAlarmRate, forKey: .leakedFalseAlarmRate)
        }
    }

    /// Dominant-speaker figures.
    public struct Floor: Codable, Sendable, Equatable {
        /// Fraction of scored single-holder time with the right holder named.
        public var accuracy: Double
        /// Fraction of scored nobody time with nobody named.
        public var nobodyAccuracy: Double
        public var heldSeconds: Double
        public var nobodySeconds: Double
        /// Reference changes to a new holder, and how many the system did not follow within 5 s.
        public var changes: Int
        public var missed: Int
        /// Seconds; null when no change was followed.
        public var medianLatency: Double?
        public var p90Latency: Double?
        public var switches: Int
        public var falseSwitches: Int
        public var switchesPerMinute: Double
        public var falseSwitchesPerMinute: Double
        /// Seconds scored.
        public var duration: Double
        /// Per reference change, seconds until followed (null: missed).
        public var latencies: [Double?]

        /// The figures of `score`.
        public init(_ score: FloorScore) {
            accuracy = score.accuracy
            nobodyAccuracy = score.nobodyAccuracy
            heldSeconds = score.heldSeconds
            nobodySeconds = score.nobodySeconds
            changes = score.latencies.count
            missed = score.missedChanges
            medianLatency = score.medianLatency
            p90Latency = score.p90Latency
            switches = score.switches
            falseSwitches = score.falseSwitches
            switchesPerMinute = score.switchesPerMinute
            falseSwitchesPerMinute = score.falseSwitchesPerMinute
            duration = score.duration
            latencies = score.latencies
        }

        private enum CodingKeys: String, CodingKey {
            case accuracy, nobodyAccuracy, heldSeconds, nobodySeconds, changes, missed, medianLatency, p90Latency
            case switches, falseSwitches, switchesPerMinute, falseSwitchesPerMinute, duration, latencies
        }

        /// Encodes every member, a missing latency as `null` (not left out).
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(accuracy, forKey: .accuracy)
            try c.encode(nobodyAccuracy, forKey: .nobodyAccuracy)
            try c.encode(heldSeconds, forKey: .heldSeconds)
            try c.encode(nobodySeconds, forKey: .nobodySeconds)
            try c.encode(changes, forKey: .changes)
            try c.encode(missed, forKey: .missed)
            try c.encode(medianLatency, forKey: .medianLatency)
            try c.encode(p90Latency, forKey: .p90Latency)
            try c.encode(switches, forKey: .switches)
            try c.encode(falseSwitches, forKey: .falseSwitches)
            try c.encode(switchesPerMinute, forKey: .switchesPerMinute)
            try c.encode(falseSwitchesPerMinute, forKey: .falseSwitchesPerMinute)
            try c.encode(duration, forKey: .duration)
            try c.encode(latencies, forKey: .latencies)
        }
    }

    /// One stream's figures, one entry per collar.
    public struct Stream: Codable, Sendable {
        public var stream: String
        public var vad: [VAD]
    }

    /// One system on one meeting.
    public struct SystemResult: Codable, Sendable {
        public var system: String
        /// The streams pooled, one entry per collar.
        public var vad: [VAD]
        public var streams: [Stream]
        /// Null when the meeting has no floor reference or the system names no holder.
        public var floor: Floor?

        private enum CodingKeys: String, CodingKey { case system, vad, streams, floor }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(system, forKey: .system)
            try c.encode(vad, forKey: .vad)
            try c.encode(streams, forKey: .streams)
            try c.encode(floor, forKey: .floor)
        }
    }

    /// One meeting.
    public struct Meeting: Codable, Sendable {
        public var meeting: String
        /// Seconds scored.
        public var duration: Double
        public var streams: [String]
        public var systems: [SystemResult]
    }

    /// One system over all meetings.
    public struct Pooled: Codable, Sendable {
        public var system: String
        public var meetings: Int
        public var streams: Int
        public var duration: Double
        public var vad: [VAD]
        public var floorMeetings: Int
        /// Null when no meeting scored the floor.
        public var floor: Floor?

        private enum CodingKeys: String, CodingKey { case system, meetings, streams, duration, vad, floorMeetings, floor }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(system, forKey: .system)
            try c.encode(meetings, forKey: .meetings)
            try c.encode(streams, forKey: .streams)
            try c.encode(duration, forKey: .duration)
            try c.encode(vad, forKey: .vad)
            try c.encode(floorMeetings, forKey: .floorMeetings)
            try c.encode(floor, forKey: .floor)
        }
    }

    /// The dataset as given on the command line.
    public var dataset: String
    /// Frame length, seconds.
    public var frameDuration: Double
    /// Collars scored, seconds.
    public var collars: [Double]
    /// The systems, in the order they were given.
    public var systems: [String]
    public var meetings: [Meeting]
    public var pooled: [Pooled]

    /// Builds the report from per-meeting scores.
    /// - Parameters:
    ///   - scores: per meeting, one score per system, systems in the order of `systems`.
    public init(dataset: String, systems: [String], scores: [[MeetingScore]]) {
        self.dataset = dataset
        frameDuration = FrameScoring.frameDuration
        collars = VADScoring.collars
        self.systems = systems
        func vad(_ scores: [VADScore]) -> [VAD] { zip(scores, VADScoring.collars).map { VAD($0, collar: $1) } }
        meetings = scores.map { perSystem in
            Meeting(
                meeting: perSystem.first?.meeting ?? "", duration: perSystem.first?.duration ?? 0,
                streams: perSystem.first?.streams.map(\.stream) ?? [],
                systems: perSystem.map { score in
                    SystemResult(
                        system: score.system, vad: vad(score.vad),
                        streams: score.streams.map { Stream(stream: $0.stream, vad: vad($0.vad)) },
                        floor: score.floor.map(Floor.init))
                })
        }
        pooled = systems.map { system in
            let pooled = PooledScore(system: system, scores: scores.flatMap { $0.filter { $0.system == system } })
            return Pooled(
                system: system, meetings: pooled.meetings, streams: pooled.streams, duration: pooled.duration,
                vad: vad(pooled.vad), floorMeetings: pooled.floorMeetings, floor: pooled.floor.map(Floor.init))
        }
    }

    /// The report as pretty-printed JSON with sorted keys (byte-for-byte reproducible).
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Every value is finite (ratios are 0 or null without a denominator), so encoding cannot fail.
        let data = try! encoder.encode(self)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

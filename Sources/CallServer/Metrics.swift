/// The server's metrics in the Prometheus text format (version 0.0.4), for `GET /metrics`.
struct Metrics {
    var rooms: Int
    var participants: Int
    var connections: Int
    var media: MediaStatistics
    var droppedRecordingHops: Int
    /// Several nodes: whether Redis answered the last heartbeat, and the live nodes then; nil for one process.
    var cluster: (redisConnected: Bool, nodes: Int)?
    /// With a webhook: its deliveries so far; nil without one.
    var webhooks: WebhookSender.Statistics?

    /// One family: its help and type lines, then its samples (`labels` without braces, or empty).
    private struct Family {
        var name: String
        var help: String
        var type: String
        var samples: [(labels: String, value: Double)]
    }

    var text: String {
        let drops: [(String, Int)] = [
            ("unknown_ssrc", media.unknownSSRC), ("wrong_source", media.wrongSource), ("muted", media.muted),
            ("malformed", media.malformed), ("from_self", media.fromSelf), ("oversized", media.oversized),
            ("over_budget", media.overBudget),
        ]
        let tick = media.tickTimes
        let families = [
            Family(name: "activespeaker_rooms", help: "Rooms open.", type: "gauge", samples: [("", Double(rooms))]),
            Family(name: "activespeaker_participants", help: "Participants in all rooms.", type: "gauge", samples: [("", Double(participants))]),
            Family(
                name: "activespeaker_signalling_connections", help: "Open signalling WebSocket connections.", type: "gauge",
                samples: [("", Double(connections))]),
            Family(
                name: "activespeaker_rtp_packets_accepted_total", help: "RTP packets accepted from bound publishers.", type: "counter",
                samples: [("", Double(media.accepted))]),
            Family(
                name: "activespeaker_rtp_packets_forwarded_total", help: "RTP packet copies sent to other members.", type: "counter",
                samples: [("", Double(media.forwarded))]),
            Family(
                name: "activespeaker_rtp_packets_mixed_total", help: "Mixed RTP packets sent to WebRTC members (20 ms each).", type: "counter",
                samples: [("", Double(media.mixed))]),
            Family(
                name: "activespeaker_rtp_packets_dropped_total", help: "RTP packets dropped, by reason.", type: "counter",
                samples: drops.map { (#"reason=""# + $0.0 + #"""#, Double($0.1)) }),
            Family(
                name: "activespeaker_rtcp_packets_total", help: "RTCP packets on the RTP port (RFC 5761): not forwarded; sender reports of publishers also counted below.",
                type: "counter", samples: [("", Double(media.rtcp))]),
            Family(
                name: "activespeaker_rtp_packets_lost_total",
                help: "Packets the publishers' jitter buffers lost, by what played in their place.", type: "counter",
                samples: [
                    (#"outcome="concealed""#, Double(media.concealed)), (#"outcome="recovered""#, Double(media.recovered)),
                    (#"outcome="silenced""#, Double(media.silenced)),
                ]),
            Family(
                name: "activespeaker_rtcp_sender_reports_total", help: "RTCP sender reports used to align publishers by capture time.",
                type: "counter", samples: [("", Double(media.senderReports))]),
            Family(
                name: "activespeaker_rtp_send_failures_total", help: "Forwarded copies the kernel refused.", type: "counter",
                samples: [("", Double(media.sendFailures))]),
            Family(
                name: "activespeaker_media_tick_seconds",
                help: "Work of one 10 ms media tick (decoding, engine, events); quantiles over the last 1000 ticks.",
                type: "summary",
                samples: [
                    (#"quantile="0.5""#, tick.p50), (#"quantile="0.9""#, tick.p90), (#"quantile="0.99""#, tick.p99),
                    (#"quantile="1""#, tick.max),
                ]),
            Family(
                name: "activespeaker_media_ticks_late_total", help: "Ticks that started more than 10 ms after they were due.",
                type: "counter", samples: [("", Double(media.lateTicks))]),
            Family(
                name: "activespeaker_recording_dropped_hops_total",
                help: "10 ms hops the recording dropped because its writer was behind.", type: "counter",
                samples: [("", Double(droppedRecordingHops))]),
        ]
        var all = families
        if let cluster {
            all.append(Family(
                name: "activespeaker_cluster_redis_connected", help: "1 while Redis answers this node's heartbeat (several nodes).",
                type: "gauge", samples: [("", cluster.redisConnected ? 1 : 0)]))
            all.append(Family(
                name: "activespeaker_cluster_nodes", help: "Live nodes of the cluster, this one included, as of the last heartbeat.",
                type: "gauge", samples: [("", Double(cluster.nodes))]))
        }
        if let webhooks {
            all.append(Family(
                name: "activespeaker_webhook_deliveries_total", help: "Webhook deliveries, by outcome (failed: attempts that will be retried or were given up).",
                type: "counter",
                samples: [
                    (#"outcome="delivered""#, Double(webhooks.delivered)), (#"outcome="failed""#, Double(webhooks.failedAttempts)),
                    (#"outcome="given_up""#, Double(webhooks.givenUp)),
                ]))
            all.append(Family(
                name: "activespeaker_webhook_pending", help: "Room events waiting for their webhook delivery.", type: "gauge",
                samples: [("", Double(webhooks.pending))]))
        }
        var lines: [String] = []
        for family in all {
            lines.append("# HELP \(family.name) \(family.help)")
            lines.append("# TYPE \(family.name) \(family.type)")
            for sample in family.samples {
                lines.append(family.name + (sample.labels.isEmpty ? "" : "{\(sample.labels)}") + " " + Self.number(sample.value))
            }
            if family.type == "summary" {
                lines.append("\(family.name)_sum \(Self.number(tick.sum))")
                lines.append("\(family.name)_count \(tick.count)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Whole numbers without a fraction, others as Swift writes doubles (both valid Prometheus floats).
    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

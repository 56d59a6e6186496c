import Glibc

/// The syntax of one remote ICE candidate attribute (RFC 8839 §5.1), checked before webrtcbin sees it:
/// webrtcbin 1.22's `add-ice-candidate` reports nothing, it only logs.
enum ICECandidateSyntax {
    /// A candidate attribute that has the syntax.
    struct Attribute: Equatable {
        /// The attribute without `a=`; "" for the end of candidates.
        var text: String
        /// Whether its connection address is a numeric IPv4 or IPv6 address. Anything else (an mDNS
        /// `….local` name, any host name) would make webrtcbin resolve the name through the system
        /// resolver: the peer drops such candidates.
        var hasIPAddress: Bool
    }

    /// The attribute without an `a=` prefix, or why it is refused. An empty string (end of candidates)
    /// gives "".
    static func check(_ text: String) -> Result<Attribute, WebRTCError> {
        var attribute = text.trimmingWhitespace
        if attribute.hasPrefix("a=") { attribute.removeFirst(2) }
        if attribute.isEmpty { return .success(Attribute(text: "", hasIPAddress: false)) }
        func refuse(_ why: String) -> Result<Attribute, WebRTCError> {
            .failure(.candidate("\(why) in \"\(String(text.prefix(120)))\""))
        }
        guard attribute.hasPrefix("candidate:") else { return refuse("no candidate: prefix") }
        let fields = attribute.dropFirst("candidate:".count).split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 8 else { return refuse("fewer than 8 fields") }
        guard !fields[0].isEmpty, fields[0].count <= 32 else { return refuse("bad foundation") }
        guard let component = Int(fields[1]), (1...256).contains(component) else { return refuse("bad component id") }
        guard ["udp", "tcp"].contains(fields[2].lowercased()) else { return refuse("transport is not udp or tcp") }
        guard let priority = UInt64(fields[3]), priority <= UInt64(UInt32.max) else { return refuse("bad priority") }
        guard !fields[4].isEmpty, fields[4].allSatisfy({ $0.isLetter || $0.isNumber || ".:-_".contains($0) }) else {
            return refuse("bad address")
        }
        guard let port = Int(fields[5]), (0...65535).contains(port) else { return refuse("bad port") }
        guard fields[6] == "typ", ["host", "srflx", "prflx", "relay"].contains(fields[7]) else { return refuse("bad candidate type") }
        return .success(Attribute(text: attribute, hasIPAddress: isIPAddress(fields[4])))
    }

    /// Whether `text` is a numeric IPv4 (dotted quad) or IPv6 address (`inet_pton`), which needs no resolver.
    static func isIPAddress(_ text: Substring) -> Bool {
        var storage = in6_addr()
        return String(text).withCString { address in
            inet_pton(AF_INET, address, &storage) == 1 || inet_pton(AF_INET6, address, &storage) == 1
        }
    }
}

extension String {
    /// The string without leading and trailing whitespace.
    /// - Complexity: O(*n*), one slice copied.
    var trimmingWhitespace: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}

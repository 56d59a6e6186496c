/// The remote end of a connection.
public struct PeerAddress: Sendable, Hashable, CustomStringConvertible {
    /// The numeric IP address: IPv4 dotted (`127.0.0.1`, also for IPv4-mapped IPv6 peers) or IPv6 (`::1`).
    public var host: String
    /// The remote TCP port.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `HOST:PORT`, with IPv6 in brackets: `127.0.0.1:5004`, `[::1]:5004`.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

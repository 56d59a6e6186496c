import CallProtocol
import CallServer
import Foundation

/// A room server in the test process (loopback, an ephemeral port, one room `room`) and tokens for it.
enum CallTestServer {
    static let secret = TokenSecret("end-to-end-test-secret-01")!

    /// Starts a server with the one room `room`; the caller stops it.
    static func server(clientTimeout: Double = 15, recordingDirectory: String? = nil) throws -> RoomServer {
        var configuration = RoomServerConfiguration()
        configuration.port = 0
        configuration.secret = secret
        configuration.rooms = ["room"]
        configuration.clientTimeout = clientTimeout
        configuration.recordingDirectory = recordingDirectory
        let server = try RoomServer(configuration: configuration)
        server.start()
        return server
    }

    /// A token for `room`, valid for ten minutes.
    static func token(_ participant: String, role: Role = .publisher) -> String {
        let now = Int(Date().timeIntervalSince1970)
        return AccessToken(room: "room", participantID: participant, role: role, issuedAt: now, expiresAt: now + 600).signed(with: secret)
    }
}

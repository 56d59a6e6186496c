import Foundation

/// The secrets the sidecar needs from Janus, read from a JSON file that only its owner should read:
///
/// ```json
/// {"apiSecret": "…", "adminKey": "…", "roomSecret": "…", "roomSecrets": {"1234": "…"},
///  "eventsUser": "…", "eventsPassword": "…"}
/// ```
/// Every field is optional: `apiSecret` (janus.jcfg `api_secret`), `adminKey` (the VideoRoom's `admin_key`,
/// needed with `lock_rtp_forward`), the rooms' `secret` for `rtp_forward` (`roomSecrets` by room id, else
/// `roomSecret`), and the user and password the event handler must send (sampleevh's `backend_user` and
/// `backend_pwd`; without them any local client may post events). None of it is ever logged.
public struct JanusCredentials: Sendable, Decodable, CustomStringConvertible {
    public var apiSecret: String?
    public var adminKey: String?
    public var roomSecret: String?
    public var roomSecrets: [String: String]?
    public var eventsUser: String?
    public var eventsPassword: String?

    public init() {}

    /// Reads the file.
    /// - Throws: `SidecarError` naming the file: unreadable, not JSON, or a field of the wrong type.
    public init(file: String) throws(SidecarError) {
        guard let data = FileManager.default.contents(atPath: file) else { throw SidecarError("credentials \(file)", "cannot read the file") }
        do {
            self = try JSONDecoder().decode(JanusCredentials.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw SidecarError("credentials \(file)", "\(context.codingPath.map(\.stringValue).joined(separator: ".")): expected a string")
        } catch {
            throw SidecarError("credentials \(file)", "not a JSON object of strings")
        }
        if (eventsUser == nil) != (eventsPassword == nil) {
            throw SidecarError("credentials \(file)", "eventsUser and eventsPassword go together")
        }
    }

    /// The `secret` to send for `room`.
    func secret(of room: JanusID) -> String? { roomSecrets?[room.description] ?? roomSecret }

    /// Whether an `Authorization` header value carries the events user and password (HTTP basic); true
    /// when none are set.
    func allowsEvents(authorization: String?) -> Bool {
        guard let eventsUser, let eventsPassword else { return true }
        guard let authorization, authorization.lowercased().hasPrefix("basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: decoded, encoding: .utf8)
        else { return false }
        return text == "\(eventsUser):\(eventsPassword)"
    }

    /// Which fields are set, never their values.
    public var description: String {
        let set = [("apiSecret", apiSecret), ("adminKey", adminKey), ("roomSecret", roomSecret), ("eventsPassword", eventsPassword)]
            .filter { $0.1 != nil }.map(\.0) + (roomSecrets.map { ["roomSecrets(\($0.count))"] } ?? [])
        return "JanusCredentials(\(set.joined(separator: ", ")))"
    }
}

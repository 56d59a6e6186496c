import Foundation

/// A VideoRoom event that changes who publishes, as Janus's HTTP event handler (`sampleevh`) posts it:
/// `{"type":64,"event":{"plugin":"janus.plugin.videoroom","data":{"event":"published","room":1234,"id":…,
/// "display":"alice",…}}}`, alone or in a JSON array of several (its `grouping`).
public enum JanusEvent: Sendable, Equatable {
    case published(room: JanusID, publisher: JanusPublisher)
    /// `unpublished`, `leaving` or `kicked`: the publisher's stream is gone.
    case gone(room: JanusID, publisher: JanusID)
    /// `destroyed`: the room is gone.
    case destroyed(room: JanusID)

    /// The VideoRoom events of one post, in order; other events (sessions, handles, other plugins,
    /// `joined`, `configured`, …) are skipped.
    /// - Throws: `SidecarError` when the body is not JSON of Janus's event shape.
    public static func events(in body: [UInt8]) throws(SidecarError) -> [JanusEvent] {
        let posted: [Post]
        do {
            let decoder = JSONDecoder()
            if let many = try? decoder.decode([Post].self, from: Data(body)) {
                posted = many
            } else {
                posted = [try decoder.decode(Post.self, from: Data(body))]
            }
        } catch {
            throw SidecarError("janus event", "not a Janus event handler post")
        }
        return posted.compactMap { post in
            guard post.type == 64, post.event?.plugin == "janus.plugin.videoroom", let data = post.event?.data, let room = data.room else {
                return nil
            }
            switch data.event {
            case "published":
                return data.id.map { .published(room: room, publisher: JanusPublisher(id: $0, display: data.display)) }
            case "unpublished", "leaving", "kicked":
                return data.id.map { .gone(room: room, publisher: $0) }
            case "destroyed":
                return .destroyed(room: room)
            default:
                return nil
            }
        }
    }

    private struct Post: Decodable {
        struct Event: Decodable {
            var plugin: String?
            var data: Data?

            enum CodingKeys: String, CodingKey { case plugin, data }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                plugin = try? container.decodeIfPresent(String.self, forKey: .plugin)
                data = try? container.decodeIfPresent(Data.self, forKey: .data)
            }
        }
        /// Read field by field, each skipped when of another type: one odd field of an event this
        /// adapter does not use must not lose the post's other events.
        struct Data: Decodable {
            var event: String?
            var room: JanusID?
            var id: JanusID?
            var display: String?

            enum CodingKeys: String, CodingKey { case event, room, id, display }

            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                event = try? container.decodeIfPresent(String.self, forKey: .event)
                room = try? container.decodeIfPresent(JanusID.self, forKey: .room)
                id = try? container.decodeIfPresent(JanusID.self, forKey: .id)
                display = try? container.decodeIfPresent(String.self, forKey: .display)
            }
        }
        var type: Int
        var event: Event?

        enum CodingKeys: String, CodingKey { case type, event }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try container.decode(Int.self, forKey: .type)
            event = try? container.decodeIfPresent(Event.self, forKey: .event)
        }
    }
}

internal import CRedis

/// One reply from Redis, as hiredis parsed it.
///
/// Bulk strings are decoded as UTF-8; every argument this module sends is UTF-8, so what it stores
/// comes back intact. A value written by another client that is not UTF-8 comes back with its invalid
/// sequences replaced by U+FFFD.
public enum RedisReply: Sendable, Hashable {
    /// A bulk string (`GET`, `HGET`, …).
    case string(String)
    /// An integer reply (`INCR`, `DEL`, `TTL`, …).
    case integer(Int)
    /// A multi-bulk reply, possibly nested (`HGETALL`, `EVAL` returning a table, pipelined `EXEC`).
    case array([RedisReply])
    /// The null bulk string or null array (`GET` of a missing key, `SET … NX` that did not set).
    case null
    /// A status reply (`OK`, `PONG`).
    case status(String)
    /// An error reply (`WRONGTYPE …`, `NOAUTH …`): Redis refused this command, the connection is fine.
    case error(String)

    /// The text of a bulk string or status reply; nil for any other.
    public var string: String? {
        switch self {
        case .string(let text), .status(let text): text
        default: nil
        }
    }

    /// The value of an integer reply; nil for any other.
    public var integer: Int? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The elements of an array reply; nil for any other.
    public var array: [RedisReply]? {
        if case .array(let elements) = self { elements } else { nil }
    }
}

extension RedisReply {
    /// Copies a hiredis reply tree (which the caller still owns and frees).
    init(_ reply: UnsafePointer<redisReply>) throws(RedisError) {
        let value = reply.pointee
        func text() -> String {
            guard let bytes = value.str else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: bytes, count: value.len), as: UTF8.self)
        }
        switch value.type {
        case REDIS_REPLY_STRING: self = .string(text())
        case REDIS_REPLY_STATUS: self = .status(text())
        case REDIS_REPLY_ERROR: self = .error(text())
        case REDIS_REPLY_INTEGER: self = .integer(Int(value.integer))
        case REDIS_REPLY_NIL: self = .null
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(value.elements)
            for index in 0..<value.elements {
                guard let element = value.element[index] else {
                    throw RedisError(.protocolError, "hiredis returned an array with a missing element")
                }
                elements.append(try RedisReply(element))
            }
            self = .array(elements)
        default:
            throw RedisError(.protocolError, "hiredis returned a reply of unknown type \(value.type)")
        }
    }
}

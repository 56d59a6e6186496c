import Redis
import Testing

@Suite struct RedisURLTests {
    @Test func defaults() throws {
        let url = try RedisURL("redis://cache.internal")
        #expect(url.host == "cache.internal")
        #expect(url.port == 6379)
        #expect(url.database == 0)
        #expect(url.username == nil)
        #expect(url.password == nil)
        #expect(url.description == "redis://cache.internal:6379")
    }

    @Test func everyPart() throws {
        let url = try RedisURL("redis://alice:s3cr%40t:x@10.0.0.7:6380/4")
        #expect(url.host == "10.0.0.7")
        #expect(url.port == 6380)
        #expect(url.database == 4)
        #expect(url.username == "alice")
        #expect(url.password == "s3cr@t:x")
        #expect(url.description == "redis://alice:***@10.0.0.7:6380/4")
    }

    @Test func passwordOnly() throws {
        let url = try RedisURL("redis://:hunter2@localhost/")
        #expect(url.username == nil)
        #expect(url.password == "hunter2")
        #expect(url.database == 0)
        #expect(url.description == "redis://:***@localhost:6379")
    }

    @Test func ipv6() throws {
        let url = try RedisURL("redis://[::1]:7000/2")
        #expect(url.host == "::1")
        #expect(url.port == 7000)
        #expect(url.database == 2)
        #expect(url.description == "redis://[::1]:7000/2")
        #expect(try RedisURL("redis://[fe80::1]").port == 6379)
    }

    @Test(arguments: [
        ("http://u:topsecret@host", "unsupported scheme 'http'"),
        ("rediss://u:topsecret@host", "TLS is not supported"),
        ("u:topsecret@host:6379", "does not start with redis://"),
        ("redis://u:topsecret@host:99999", "bad port '99999'"),
        ("redis://u:topsecret@host:abc/1", "bad port 'abc'"),
        ("redis://u:topsecret@host:0", "bad port '0'"),
        ("redis://u:topsecret@host/-1", "bad database '-1'"),
        ("redis://u:topsecret@host/x", "bad database 'x'"),
        ("redis://u:topsecret@:6379", "no host"),
        ("redis://topsecret@host", "needs a colon"),
        ("redis://u:topsecret@[::1", "closing ']'"),
        ("redis://u:top%zzsecret@host", "percent-encoding"),
    ])
    func badURLsSayWhatIsWrongWithoutThePassword(text: String, expected: String) {
        let error = #expect(throws: RedisError.self) { try RedisURL(text) }
        #expect(error?.kind == .url)
        #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
        #expect(error?.description.contains("secret") == false)
    }
}

import Testing

@testable import AssetPackServer

/// ``DirectRequest``: which request heads are answered before HTTP/1's decoder, and where each ends.
@Suite("Request heads read before the decoder")
struct DirectRequestTests {
    static func read(_ text: String) -> DirectRequest {
        Array(text.utf8).withUnsafeBytes { DirectRequest.read($0) }
    }

    @Test func aPlainPackRequestIsAnsweredWithItsLength() {
        let head =
            "GET /assets/Levels-1.b_c HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nuser-agent: app/1\r\n"
            + "ACCEPT: */*\r\nAccept-Encoding: gzip\r\nAccept-Language: de\r\nConnection:  Keep-Alive \r\n\r\n"
        #expect(Self.read(head) == .pack(id: "Levels-1.b_c", length: head.utf8.count))
        // What follows the head is the next request's, not this one's.
        #expect(Self.read(head + "GET /manifest HTTP/1.1\r\n") == .pack(id: "Levels-1.b_c", length: head.utf8.count))
        // The ID as the target spells it: whether it is one (`%` is not allowed in an ID) is the route's to say.
        #expect(Self.read("GET /assets/%C3%9Cber HTTP/1.1\r\n\r\n") == .pack(id: "%C3%9Cber", length: 34))
        #expect(Self.read("GET /assets/Levels?x=1 HTTP/1.1\r\n\r\n") == .pack(id: "Levels?x=1", length: 35))
    }

    @Test func aHeadNotWholeYetIsWaitedFor() {
        let head = "GET /assets/Levels HTTP/1.1\r\nHost: x\r\n\r\n"
        for end in 0..<head.utf8.count {
            #expect(Self.read(String(decoding: head.utf8.prefix(end), as: UTF8.self)) == .incomplete, "\(end) bytes")
        }
    }

    @Test func whatChangesTheAnswerGoesToTheRouterWhole() {
        let cases = [
            "GET /manifest HTTP/1.1\r\nHost: x\r\n\r\n",
            "HEAD /assets/Levels HTTP/1.1\r\n\r\n",
            "GET /assets/Levels HTTP/1.0\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nRange: bytes=0-9\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nIf-None-Match: \"a\"\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nConnection: close\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nX-Unknown: 1\r\n\r\n",
            "DELETE /_mock/faults HTTP/1.1\r\nAuthorization: Bearer t\r\n\r\n",
        ]
        for head in cases {
            #expect(Self.read(head + "GET /assets/Levels HTTP/1.1\r\n") == .routed(length: head.utf8.count), "\(head)")
        }
    }

    @Test func whatThisDoesNotDelimitGoesToTheDecoderFromThereOn() {
        let cases = [
            "PUT /_mock/faults HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
            "POST /x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\nHost: x\n\n",  // bare LF
            "GET /assets/Levels HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nHost : x\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nHost: a\u{01}b\r\n\r\n",
            "GET  /assets/Levels HTTP/1.1\r\n\r\n",
            "GET /assets/Über HTTP/1.1\r\n\r\n",  // a target is ASCII: the decoder says what it makes of this
            "GET /assets/Levels HTTP/2\r\n\r\n",
            "get /assets/Levels HTTP/1.1\r\n\r\n",
            "CONNECT example.com:443 HTTP/1.1\r\n\r\n",
            "\r\nGET /assets/Levels HTTP/1.1\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nX: " + String(repeating: "a", count: DirectRequest.maxHead) + "\r\n\r\n",
            "GET /assets/Levels HTTP/1.1\r\nX: " + String(repeating: "a", count: DirectRequest.maxHead),
        ]
        for head in cases { #expect(Self.read(head) == .undelimited, "\(head.prefix(60))") }
    }
}

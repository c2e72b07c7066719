import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

@testable import AssetPackServer

/// ``RequestHeadTimeoutHandler`` on a channel whose clock the test moves: the head timeout after an answer, the
/// body timeout while a request body is read, and nothing while a request is answered.
@Suite("Request head and body timeouts")
struct RequestHeadTimeoutTests {
    static func channel(timeout: Int64 = 1, bodyTimeout: Int64 = 3) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        let handler = RequestHeadTimeoutHandler(timeout: .seconds(timeout), bodyTimeout: .seconds(bodyTimeout))
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 80)).wait()
        return channel
    }

    static let head = HTTPRequestPart.head(
        HTTPRequest(method: .put, scheme: nil, authority: "x", path: "/_mock/faults")
    )

    @Test func aRequestBodyThatStopsIsCutOffAfterTheBodyTimeout() throws {
        let channel = try Self.channel()
        try channel.writeInbound(Self.head)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2500))
        try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: "latency")))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(2500))
        #expect(channel.isActive, "each piece of the body gives it the body timeout again, not the head's")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(600))
        #expect(!channel.isActive, "3 s without a byte of the body")
    }

    @Test func aRequestUnderAnswerIsNotTimedAndTheNextHeadIs() throws {
        let channel = try Self.channel()
        try channel.writeInbound(Self.head)
        try channel.writeInbound(HTTPRequestPart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(channel.isActive, "the request was read: its answer takes what it takes")
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(900))
        #expect(channel.isActive)
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "1 s after the answer without a new head")
    }

    @Test func anAnswerMadeAheadOfTheHandlerMovesTheHeadTimeout() throws {
        let channel = try Self.channel()
        let handler = try channel.pipeline.syncOperations.handler(type: RequestHeadTimeoutHandler.self)
        for _ in 0..<5 {
            channel.embeddedEventLoop.advanceTime(by: .milliseconds(800))
            handler.answered()
        }
        #expect(channel.isActive, "4 s of answers 800 ms apart with a 1 s timeout")
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1100))
        #expect(!channel.isActive)
    }

    /// The head timeout after an answer holds though the body timeout had moved the timer later.
    @Test func theHeadTimeoutIsNotPutOffByTheBodyTimeoutBeforeIt() throws {
        let channel = try Self.channel()
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(500))
        try channel.writeInbound(Self.head)  // the body's deadline: 3.5 s
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(700))  // the timer moves to it
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeOutbound(HTTPResponsePart.end(nil))  // the next head's deadline: 2.2 s
        channel.embeddedEventLoop.advanceTime(by: .milliseconds(1100))
        #expect(!channel.isActive, "1 s after the answer, not at the body's deadline")
    }
}

import NIOCore
import NIOHTTP1

/// Answers an HTTP/1.0 request that did not ask to keep the connection alive with `Connection: close`,
/// and has the connection closed after the response, as HTTP/1.0 expects: the request is passed on marked
/// `Connection: close`, which Hummingbird honours.
final class HTTP10Handler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// For each request in flight, in order: whether its response must close the connection.
    private var closing: [Bool] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data) else {
            context.fireChannelRead(data)
            return
        }
        let close = head.version == .http1_0 && !head.headers[canonicalForm: "connection"].contains("keep-alive")
        closing.append(close)
        if close {
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.fireChannelRead(wrapInboundOut(.head(head)))
        } else {
            context.fireChannelRead(data)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data), !closing.isEmpty else {
            context.write(data, promise: promise)
            return
        }
        if closing.removeFirst() {
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        } else {
            context.write(data, promise: promise)
        }
    }
}

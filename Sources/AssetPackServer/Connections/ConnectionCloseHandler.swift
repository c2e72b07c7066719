import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes the connection once a response that says `Connection: close` has been written, as HTTP/1.1 asks of
/// a server that sends it. Hummingbird closes after a request that said so, not after such a response: a
/// control request whose body took too long is answered 408 this way, and the rest of its body is not
/// waited for.
final class ConnectionCloseHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var closeAfterEnd = false

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.status.kind != .informational, head.headerFields[.connection]?.lowercased() == "close" {
                closeAfterEnd = true
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterEnd else {
                context.write(data, promise: promise)
                return
            }
            closeAfterEnd = false
            let written = promise ?? context.eventLoop.makePromise()
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in loopBound.value.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
        }
    }
}

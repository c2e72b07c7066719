import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request head does not arrive in time: a client that trickles its request
/// a byte at a time keeps the idle timeout at bay, but not this one.
///
/// One timer per connection, moved lazily: a request answered sets a new deadline and leaves the timer where
/// it is; when it fires early it is scheduled again for the deadline. Scheduling and cancelling a timer for
/// each request cost about 6% of the server's time answering 60 KiB packs under `wrk -c32` (`perf`).
final class RequestHeadTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?
    /// When the awaited request head is late, or `nil` while a request is read or answered.
    private var deadline: NIODeadline?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { deadline = nil }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context) }  // waiting for the next request on this connection
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func arm(_ context: ChannelHandlerContext) {
        let deadline = NIODeadline.now() + timeout
        self.deadline = deadline
        if timer == nil { schedule(context, at: deadline) }
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            guard let deadline = handler.deadline else { return }  // a request under way: armed again at its end
            if deadline <= .now() {
                context.close(promise: nil)
            } else {
                handler.schedule(context, at: deadline)
            }
        }
    }
}

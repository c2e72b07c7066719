import NIOCore
import NIOHTTPTypes

/// Closes a connection whose next request head does not arrive in time after the last answer (a client that
/// trickles its request a byte at a time, or an idle one), or whose request body stops for `bodyTimeout` (what
/// Hummingbird's idle timeout did before ``DirectPackResponder``'s answers, which it does not see, were made).
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
    private let bodyTimeout: TimeAmount
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?
    /// When the awaited request head (or the next piece of a request body) is late, or `nil` while a request
    /// is answered.
    private var deadline: NIODeadline?
    private var context: ChannelHandlerContext?

    init(timeout: TimeAmount, bodyTimeout: TimeAmount = .seconds(30)) {
        self.timeout = timeout
        self.bodyTimeout = bodyTimeout
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { arm(context) }
    }

    /// ``DirectPackResponder`` answered a request ahead of this handler: the next head is awaited from now.
    func answered() {
        if let context { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head, .body: arm(context, in: bodyTimeout)  // until the request's end
        case .end: deadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context) }  // waiting for the next request on this connection
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.task.cancel()
        timer = nil
        self.context = nil
    }

    private func arm(_ context: ChannelHandlerContext, in timeout: TimeAmount? = nil) {
        let deadline = context.eventLoop.now + (timeout ?? self.timeout)
        self.deadline = deadline
        if let timer, timer.at <= deadline { return }  // it moves on when it fires
        timer?.task.cancel()
        schedule(context, at: deadline)
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let task = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timer = nil
            guard let deadline = handler.deadline else { return }  // a request under way: armed again at its end
            if deadline <= context.eventLoop.now {
                context.close(promise: nil)
            } else {
                handler.schedule(context, at: deadline)
            }
        }
        timer = (task, deadline)
    }
}

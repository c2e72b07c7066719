import NIOCore
import NIOHTTPTypes

/// Closes a connection that accepts no bytes for `timeout` while it has some to send: a client that stops
/// reading a pack (or reads a byte now and then) would otherwise hold its connection, and what is queued for
/// it, for as long as it likes. The idle timeout does not cover it: a response is in progress.
///
/// "Accepts no bytes" is the channel staying unwritable (more than its high-water mark queued) for the
/// whole timeout: each time the queue drains below the low-water mark, the clock starts again.
final class SendTimeoutHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let timeout: TimeAmount
    private var timer: Scheduled<Void>?

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            timer?.cancel()
            timer = nil
        } else if timer == nil {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: timeout) {
                loopBound.value.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }
}

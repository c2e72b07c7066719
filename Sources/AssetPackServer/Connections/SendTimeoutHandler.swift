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
    /// Bodies waiting for the channel to take bytes again (see ``waitUntilWritable(_:)``).
    private var waiters: [EventLoopPromise<Void>] = []

    init(timeout: TimeAmount) {
        self.timeout = timeout
    }

    /// Waits until `channel` takes bytes again (at once when it does now), so that a body reads its next
    /// chunk only then. A body's writes are queued for the event loop without waiting for the socket; over
    /// TLS each one also became a ciphertext buffer of its own, and a peer that stopped reading held about
    /// 4 MiB of them per connection. Fails when the connection closes.
    static func waitUntilWritable(_ channel: any Channel) async throws {
        try await channel.eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            guard channel.isActive else { return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel) }
            guard !channel.isWritable,
                let handler = try? channel.pipeline.syncOperations.handler(type: SendTimeoutHandler.self)
            else { return channel.eventLoop.makeSucceededVoidFuture() }
            let promise = channel.eventLoop.makePromise(of: Void.self)
            handler.waiters.append(promise)
            return promise.futureResult
        }.get()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            timer?.cancel()
            timer = nil
            let ready = waiters
            waiters = []
            for promise in ready { promise.succeed() }
        } else if timer == nil {
            let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
            timer = context.eventLoop.scheduleTask(in: timeout) {
                loopBound.value.close(promise: nil)
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failWaiters()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        failWaiters()
    }

    private func failWaiters() {
        let waiting = waiters
        waiters = []
        for promise in waiting { promise.fail(ChannelError.ioOnClosedChannel) }
    }
}

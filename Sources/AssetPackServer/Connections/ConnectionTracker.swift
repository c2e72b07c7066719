import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The server's open connections: how many there are, a cap on them, and a way to close them all.
///
/// The cap keeps a crowd of clients (or an attacker's sockets) from taking every file descriptor and all the
/// memory their queues hold; the closing ends a shutdown that a client which stopped reading would otherwise
/// hold past its grace period (over TLS, a body write waiting for a stalled peer does not end when its task is
/// cancelled: the connection has to close under it).
final class ConnectionTracker: Sendable {
    /// The most connections open at once; one more is closed as soon as it is accepted.
    let limit: Int
    /// Told once a second at most when connections are refused, with how many were.
    private let onRefused: @Sendable (Int) -> Void
    private let state = Mutex(State())

    private struct State {
        /// Each open connection's hard close.
        var open: [ObjectIdentifier: @Sendable () -> Void] = [:]
        var refused = 0
        var lastReport: NIODeadline = .distantPast
    }

    init(limit: Int, onRefused: @escaping @Sendable (Int) -> Void) {
        self.limit = max(1, limit)
        self.onRefused = onRefused
    }

    /// Counts a new connection in, with how to close it hard; `false` when the cap is reached (the caller
    /// closes it).
    func admit(_ channel: any Channel, close: @escaping @Sendable () -> Void) -> Bool {
        let (admitted, report) = state.withLock { state -> (Bool, Int?) in
            if state.open.count < limit {
                state.open[ObjectIdentifier(channel)] = close
                return (true, nil)
            }
            state.refused += 1
            let now = NIODeadline.now()
            guard now - state.lastReport >= .seconds(1) else { return (false, nil) }
            state.lastReport = now
            defer { state.refused = 0 }
            return (false, state.refused)
        }
        if let report { onRefused(report) }
        return admitted
    }

    /// Counts a closed connection out.
    func remove(_ channel: any Channel) {
        _ = state.withLock { $0.open.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// Closes every open connection at once (what is queued for them is dropped).
    func closeAll() {
        for close in state.withLock({ Array($0.open.values) }) { close() }
    }
}

/// Counts its connection in and out of a ``ConnectionTracker``, closing it at once when the cap is reached.
final class ConnectionTrackingHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let tracker: ConnectionTracker
    private var admitted = false

    init(tracker: ConnectionTracker) {
        self.tracker = tracker
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // The hard close goes from the front of the pipeline, past TLS: a TLS close first sends close_notify
        // and waits for it to be flushed, which a peer that stopped reading never lets happen.
        let front = HardCloseHandler()
        guard (try? context.pipeline.syncOperations.addHandler(front, position: .first)) != nil else {
            context.close(promise: nil)
            return
        }
        let close = front.closer(on: context.eventLoop)
        admitted = tracker.admit(context.channel, close: close)
        if !admitted { close() }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard admitted else { return }  // a refused connection is closing: nothing it sent is handled
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if admitted { tracker.remove(context.channel) }
        admitted = false
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if admitted { tracker.remove(context.channel) }
        admitted = false
    }
}

/// Sits first in a connection's pipeline to close the socket directly: a reset (`SO_LINGER` 0), so that
/// neither a TLS shutdown nor bytes the kernel still holds for a peer that stopped reading outlive it.
final class HardCloseHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// A function that closes the connection from any thread.
    func closer(on eventLoop: any EventLoop) -> @Sendable () -> Void {
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        return {
            eventLoop.execute {
                guard let context = bound.value.context else { return }
                // On the loop, the option is set before the call returns.
                _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                context.close(promise: nil)
            }
        }
    }
}

/// Closes every connection when the server is cancelled (its shutdown grace ran out), so that the server's
/// tasks end and the process exits instead of tripping the service group's cancellation deadline.
struct ConnectionCloser: Service {
    let tracker: ConnectionTracker

    func run() async throws {
        let tracker = self.tracker
        await withTaskCancellationHandler {
            // Told to shut down once the server has (it runs first in line): nothing left to close.
            try? await gracefulShutdown()
        } onCancel: {
            tracker.closeAll()
        }
    }
}

import HTTPTypes
import NIOCore
import NIOHTTPTypes
import Synchronization

/// What each connection's socket took of each response, for the request log: a body's bytes count once the
/// write that carried them completed (the kernel accepted them), never when they were handed to the channel,
/// so a client that reads a few hundred bytes and resets is not logged as having had the whole pack.
///
/// The request log middleware queues an ``Entry`` per response on its connection; ``ResponseTallyHandler``,
/// which sees the response parts as they are written, takes the next entry at each response head (HTTP/1
/// answers a connection's requests in order), counts its body writes as they complete, and settles it when
/// its end is written, or as aborted when a write fails or the connection closes first.
final class ResponseTally: Sendable {
    /// One response's account; `settle` is called once, with the bytes taken and whether it was cut short.
    final class Entry: Sendable {
        private struct State {
            var bytes = 0
            var failed = false
            var settled = false
        }

        private let state = Mutex(State())
        private let settle: @Sendable (_ bytes: Int, _ aborted: Bool) -> Void

        init(settle: @escaping @Sendable (_ bytes: Int, _ aborted: Bool) -> Void) {
            self.settle = settle
        }

        /// The body bytes the socket took so far.
        var bytes: Int { state.withLock { $0.bytes } }

        /// A body write completed: the socket took `count` bytes.
        func took(_ count: Int) { state.withLock { $0.bytes += count } }

        /// A body write failed: the response did not go out whole.
        func failed() { state.withLock { $0.failed = true } }

        /// The response is over: its end was written (`aborted` false) or could not be.
        func finish(aborted: Bool) {
            let outcome = state.withLock { state -> (Int, Bool)? in
                guard !state.settled else { return nil }
                state.settled = true
                return (state.bytes, state.failed || aborted)
            }
            if let (bytes, aborted) = outcome { settle(bytes, aborted) }
        }
    }

    /// The entries waiting for their response head, by connection; a connection is here while it is open.
    private let waiting = Mutex<[ObjectIdentifier: [Entry]]>([:])
    /// How many entries `waiting` holds, read without the lock: a response head with none waiting anywhere
    /// (no request log, no page open) takes no lock. An entry is queued before its response is handed to the
    /// channel, so the head that takes it never reads a stale zero.
    private let queued = Atomic<Int>(0)

    /// Queues the entry of the next response on `channel`; settled at once as aborted when the connection
    /// has closed already.
    func expect(_ entry: Entry, on channel: ObjectIdentifier) {
        let open = waiting.withLock { waiting -> Bool in
            guard waiting[channel] != nil else { return false }
            waiting[channel]?.append(entry)
            queued.add(1, ordering: .relaxed)
            return true
        }
        if !open { entry.finish(aborted: true) }
    }

    fileprivate func opened(_ channel: ObjectIdentifier) {
        waiting.withLock { $0[channel] = [] }
    }

    fileprivate func next(on channel: ObjectIdentifier) -> Entry? {
        guard queued.load(ordering: .relaxed) > 0 else { return nil }
        return waiting.withLock { waiting in
            guard waiting[channel]?.isEmpty == false else { return nil }
            queued.subtract(1, ordering: .relaxed)
            return waiting[channel]?.removeFirst()
        }
    }

    fileprivate func closed(_ channel: ObjectIdentifier) {
        let left = waiting.withLock { waiting in
            let left = waiting.removeValue(forKey: channel) ?? []
            queued.subtract(left.count, ordering: .relaxed)
            return left
        }
        for entry in left { entry.finish(aborted: true) }
    }
}

/// Counts, for ``ResponseTally``, the body bytes of each response whose writes completed. Placed with
/// Hummingbird's additional handlers, above the HTTP/1 codec: a write's promise there completes when the
/// bytes under it (a `sendfile` region for a marker) were written to the socket.
final class ResponseTallyHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let tally: ResponseTally
    /// Whether body buffers may be `sendfile` markers, which stand for their region's length.
    private let markers: Bool
    private var channel: ObjectIdentifier?
    private var current: ResponseTally.Entry?

    init(tally: ResponseTally, markers: Bool) {
        self.tally = tally
        self.markers = markers
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = ObjectIdentifier(context.channel)
        self.channel = channel
        tally.opened(channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        current?.finish(aborted: true)
        current = nil
        if let channel { tally.closed(channel) }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            if head.status.kind != .informational, let channel {
                current?.finish(aborted: true)  // a response that never wrote its end
                current = tally.next(on: channel)
            }
            context.write(data, promise: promise)
        case .body(let buffer):
            guard let entry = current else {
                context.write(data, promise: promise)
                return
            }
            let count = markers ? SendfileTransport.length(of: buffer) : buffer.readableBytes
            let written = promise ?? context.eventLoop.makePromise()
            written.futureResult.whenComplete { result in
                if case .success = result { entry.took(count) } else { entry.failed() }
            }
            context.write(data, promise: written)
        case .end:
            guard let entry = current else {
                context.write(data, promise: promise)
                return
            }
            current = nil
            let written = promise ?? context.eventLoop.makePromise()
            written.futureResult.whenComplete { result in
                if case .success = result { entry.finish(aborted: false) } else { entry.finish(aborted: true) }
            }
            context.write(data, promise: written)
        }
    }
}

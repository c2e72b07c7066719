import NIOCore
import Synchronization

/// The file each `sendfile` body has open, by connection and token, and how many of its regions were
/// written: a body waits on it before it marks more (backpressure), and its file is closed once the body is
/// done and no region of it is queued, or when its connection closes.
final class SendfileRegistry: Sendable {
    private struct Body {
        var handle: NIOFileHandle
        var queued = 0
        var done = 0
        var failure: (any Error)?
        var finished = false
        var waiter: (count: Int, continuation: CheckedContinuation<Void, any Error>)?
    }

    private struct State {
        var bodies: [ObjectIdentifier: [UInt64: Body]] = [:]
        /// The connections whose pipeline has a ``SendfileHandler``: only their bodies may be markers.
        var attached: Set<ObjectIdentifier> = []
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())

    /// A ``SendfileHandler`` was placed in the connection's pipeline: its bodies may go out by `sendfile`.
    func attach(_ channel: ObjectIdentifier) {
        state.withLock { _ = $0.attached.insert(channel) }
    }

    /// Whether a body on the connection may be sent by `sendfile`: only where a ``SendfileHandler`` swaps
    /// its markers for file regions (elsewhere they would go out as body bytes).
    func sendsFiles(on channel: ObjectIdentifier) -> Bool {
        state.withLock { $0.attached.contains(channel) }
    }

    /// Keeps a body's file (which it now owns) and returns the token its markers name.
    func register(_ handle: NIOFileHandle, channel: ObjectIdentifier) -> UInt64 {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.bodies[channel, default: [:]][token] = Body(handle: handle)
            return token
        }
    }

    /// The file of a marker, counted as queued; `nil` for a token the connection does not have.
    func queue(_ marker: Marker, channel: ObjectIdentifier) -> NIOFileHandle? {
        state.withLock { state in
            guard state.bodies[channel]?[marker.token] != nil else { return nil }
            state.bodies[channel]?[marker.token]?.queued += 1
            return state.bodies[channel]?[marker.token]?.handle
        }
    }

    /// A region of a body was written (or failed to be).
    func regionWritten(_ token: UInt64, channel: ObjectIdentifier, failure: (any Error)?) {
        let (resume, close) = state.withLock { state -> (CheckedContinuation<Void, any Error>?, NIOFileHandle?) in
            guard var body = state.bodies[channel]?[token] else { return (nil, nil) }
            body.done += 1
            if let failure, body.failure == nil { body.failure = failure }
            var resume: CheckedContinuation<Void, any Error>?
            if let waiter = body.waiter, body.done >= waiter.count || body.failure != nil {
                resume = waiter.continuation
                body.waiter = nil
            }
            if body.finished && body.done >= body.queued {
                state.bodies[channel]?[token] = nil
                return (resume, body.handle)
            }
            state.bodies[channel]?[token] = body
            return (resume, nil)
        }
        try? close?.close()
        if let resume {
            if let failure { resume.resume(throwing: failure) } else { resume.resume() }
        }
    }

    /// Waits until at least `count` regions of the body were written.
    /// - Throws: The error a region failed with, `ChannelError.ioOnClosedChannel` once the connection closed,
    ///   or `CancellationError` (a server shutting down cancels its bodies).
    func wait(_ token: UInt64, channel: ObjectIdentifier, untilDone count: Int) async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    guard var body = state.bodies[channel]?[token] else {
                        return .failure(ChannelError.ioOnClosedChannel)
                    }
                    if let failure = body.failure { return .failure(failure) }
                    if body.done >= count { return .success(()) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    body.waiter = (count, continuation)
                    state.bodies[channel]?[token] = body
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                let waiter = state.bodies[channel]?[token]?.waiter?.continuation
                state.bodies[channel]?[token]?.waiter = nil
                return waiter
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// The body is done marking; its file closes once its queued regions are written.
    func finish(_ token: UInt64, channel: ObjectIdentifier) {
        let close = state.withLock { state -> NIOFileHandle? in
            guard var body = state.bodies[channel]?[token] else { return nil }
            body.finished = true
            if body.done >= body.queued {
                state.bodies[channel]?[token] = nil
                return body.handle
            }
            state.bodies[channel]?[token] = body
            return nil
        }
        try? close?.close()
    }

    /// The connection closed: every body's file is closed, and a body waiting on it learns it.
    func connectionClosed(_ channel: ObjectIdentifier) {
        let bodies =
            state.withLock { state -> [UInt64: Body]? in
                state.attached.remove(channel)
                return state.bodies.removeValue(forKey: channel)
            } ?? [:]
        for body in bodies.values {
            try? body.handle.close()
            body.waiter?.continuation.resume(throwing: ChannelError.ioOnClosedChannel)
        }
    }

    /// How many bodies have a file open now (for tests).
    var openFiles: Int { state.withLock { $0.bodies.values.reduce(0) { $0 + $1.count } } }
}

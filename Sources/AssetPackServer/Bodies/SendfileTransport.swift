import AssetPackFormat
import Hummingbird
import NIOCore
import NIOHTTP1
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Pack bodies sent with `sendfile(2)` on plain HTTP: the kernel copies from the page cache to the socket,
/// with no buffer in this process. A connection whose client stops reading costs no memory here, and one
/// stream runs at the speed nginx's `sendfile on` does.
///
/// Hummingbird's response writer only takes `ByteBuffer`s, so the body writes small *markers* ("send bytes
/// `offset..<offset+length` of file `token`"), and the handler this type makes (``handler(for:)``), placed just above NIO's
/// HTTP/1 encoder, swaps each for a `FileRegion`. The body keeps at most two regions in flight and waits for each
/// to be written before it marks the next: a connection whose client stops reading holds one file handle
/// and nothing else, and the request line's byte count is what the socket took. Each body's file is
/// kept here per connection and closed when its last region is written or the
/// connection closes. TLS (which must encrypt the bytes) and fault injection (which must change them) use
/// the buffered ``FileBody`` instead, and so does a connection where the handler could not be placed (see
/// ``HTTP1HandlerInstaller``). Each region is read into the page cache on the thread pool before it is
/// handed to the channel (``PageCache``), so that `sendfile` on the event loop never waits for the disk.
///
/// Everything of the path that depends on NIO's file types and Hummingbird's response writer is in this one
/// file: an upgrade of either touches it alone (``PackController`` asks for a ``body(path:range:channel:)``,
/// ``HTTP1HandlerInstaller`` places the ``handler(for:)``, ``ResponseTally`` counts with ``length(of:)``).
final class SendfileTransport: Sendable {
    /// Bytes per marker: the unit of backpressure (a connection whose socket is full gets no further
    /// marker until this much has gone).
    static let chunkLength = 1 << 20

    /// Regions a body lets be queued on the connection at once.
    static let regionsInFlight = 2

    /// The handler to place in a connection's pipeline, just above NIO's HTTP/1 encoder: it swaps each
    /// marker of the connection's bodies for a file region.
    func handler(for channel: ObjectIdentifier) -> any RemovableChannelHandler {
        SendfileHandler(registry: self, channel: channel)
    }

    /// The body for `range` of the file at `path`, sent by `sendfile` on the connection `channel`.
    func body(
        path: FilePath,
        range: ClosedRange<Int>,
        channel: ObjectIdentifier
    ) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            // Two descriptors of the one open file: the body's own, which brings each region into the page
            // cache on the thread pool, and the channel's, which is closed here when the connection closes.
            let (fd, sent) = try await BlockingIO.shortCall {
                let fd = try SystemPackage.FileDescriptor.open(
                    path,
                    .readOnly,
                    options: [.closeOnExec],
                    retryOnInterrupt: true
                )
                let sent = fcntl(fd.rawValue, F_DUPFD_CLOEXEC, 0)
                guard sent >= 0 else {
                    let error = Errno(rawValue: errno)
                    try? fd.close()
                    throw error
                }
                return (fd, sent)
            }
            defer { try? fd.close() }
            // NIO sends a file to a channel only as a FileRegion of an NIOFileHandle, whose initialiser from a
            // descriptor NIO has renamed `_deprecated...` (NIOFileSystem, its successor, uses sendfile only to
            // copy files): this is the one use, and LargePackTests fail if it stops sending exact bytes.
            let token = self.register(NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: sent), channel: channel)
            var offset = range.lowerBound
            var marked = 0
            do {
                while offset <= range.upperBound {
                    try await self.wait(token, channel: channel, untilDone: marked - Self.regionsInFlight + 1)
                    let length = min(Self.chunkLength, range.upperBound - offset + 1)
                    // sendfile(2) of pages not in memory would read the disk on the event loop, stalling every
                    // connection on it: they are read in here, off the loop, while the region before is sent.
                    let start = offset
                    _ = try await BlockingIO.shortCall { try PageCache.makeResident(fd, offset: start, length: length) }
                    try await writer.write(Marker(token: token, offset: offset, length: length).buffer)
                    marked += 1
                    offset += length
                }
                try await self.wait(token, channel: channel, untilDone: marked)
            } catch {
                self.finish(token, channel: channel)
                throw error
            }
            self.finish(token, channel: channel)
            try await writer.finish(nil)
        }
    }

    /// The bytes a body chunk stands for: its own size, or the length of the file region it marks.
    static func length(of buffer: ByteBuffer) -> Int {
        Marker(buffer).map(\.length) ?? buffer.readableBytes
    }

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
        /// The connections whose pipeline has the handler: only their bodies may be markers.
        var attached: Set<ObjectIdentifier> = []
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())

    /// The handler was placed in the connection's pipeline: its bodies may go out by `sendfile`.
    fileprivate func attach(_ channel: ObjectIdentifier) {
        state.withLock { _ = $0.attached.insert(channel) }
    }

    /// Whether a body on the connection may be sent by `sendfile`: only where the handler swaps
    /// its markers for file regions (elsewhere they would go out as body bytes).
    func sendsFiles(on channel: ObjectIdentifier) -> Bool {
        state.withLock { $0.attached.contains(channel) }
    }

    /// Keeps a body's file (which it now owns) and returns the token its markers name.
    private func register(_ handle: NIOFileHandle, channel: ObjectIdentifier) -> UInt64 {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.bodies[channel, default: [:]][token] = Body(handle: handle)
            return token
        }
    }

    /// The file of a marker, counted as queued; `nil` for a token the connection does not have.
    fileprivate func queue(_ marker: Marker, channel: ObjectIdentifier) -> NIOFileHandle? {
        state.withLock { state in
            guard state.bodies[channel]?[marker.token] != nil else { return nil }
            state.bodies[channel]?[marker.token]?.queued += 1
            return state.bodies[channel]?[marker.token]?.handle
        }
    }

    /// A region of a body was written (or failed to be).
    fileprivate func regionWritten(_ token: UInt64, channel: ObjectIdentifier, failure: (any Error)?) {
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
    private func wait(_ token: UInt64, channel: ObjectIdentifier, untilDone count: Int) async throws {
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
    private func finish(_ token: UInt64, channel: ObjectIdentifier) {
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
    fileprivate func connectionClosed(_ channel: ObjectIdentifier) {
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

/// "Send `length` bytes of file `token` from `offset`", as a 32-byte buffer that no pack chunk can be
/// mistaken for (it must also name a file the connection has registered).
private struct Marker {
    static let magic: UInt64 = 0x4241_5345_4E44_4649  // "BASENDFI"
    static let size = 32

    var token: UInt64
    var offset: Int
    var length: Int

    init(token: UInt64, offset: Int, length: Int) {
        self.token = token
        self.offset = offset
        self.length = length
    }

    init?(_ buffer: ByteBuffer) {
        guard buffer.readableBytes == Self.size,
            let magic = buffer.getInteger(at: buffer.readerIndex, as: UInt64.self), magic == Self.magic,
            let token = buffer.getInteger(at: buffer.readerIndex + 8, as: UInt64.self),
            let offset = buffer.getInteger(at: buffer.readerIndex + 16, as: Int64.self),
            let length = buffer.getInteger(at: buffer.readerIndex + 24, as: Int64.self),
            offset >= 0, length > 0
        else { return nil }
        self.init(token: token, offset: Int(offset), length: Int(length))
    }

    var buffer: ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(Self.size)
        buffer.writeInteger(Self.magic)
        buffer.writeInteger(token)
        buffer.writeInteger(Int64(offset))
        buffer.writeInteger(Int64(length))
        return buffer
    }
}

/// Swaps body markers for file regions of their body's file, which the channel sends with `sendfile(2)`,
/// and tells the registry when each region is written.
private final class SendfileHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: SendfileTransport
    private let channel: ObjectIdentifier

    init(registry: SendfileTransport, channel: ObjectIdentifier) {
        self.registry = registry
        self.channel = channel
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .body(.byteBuffer(let buffer)) = unwrapOutboundIn(data), let marker = Marker(buffer),
            let handle = registry.queue(marker, channel: channel)
        else {
            context.write(data, promise: promise)
            return
        }
        let region = FileRegion(fileHandle: handle, readerIndex: marker.offset, endIndex: marker.offset + marker.length)
        let written = context.eventLoop.makePromise(of: Void.self)
        let (registry, channel) = (self.registry, self.channel)
        written.futureResult.whenComplete { result in
            if case .failure(let error) = result {
                registry.regionWritten(marker.token, channel: channel, failure: error)
            } else {
                registry.regionWritten(marker.token, channel: channel, failure: nil)
            }
            promise?.completeWith(result)
        }
        context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: written)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        registry.attach(channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        registry.connectionClosed(channel)
    }
}

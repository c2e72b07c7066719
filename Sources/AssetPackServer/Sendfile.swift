import AssetPackFormat
import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
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
/// `offset..<offset+length` of file `token`"), and ``SendfileHandler``, placed just above NIO's HTTP/1
/// encoder, swaps each for a `FileRegion`. The body keeps at most two regions in flight and waits for each
/// to be written before it marks the next: a connection whose client stops reading holds one file handle
/// and nothing else, and the request line's byte count is what the socket took. Each body's file is
/// kept in a ``SendfileRegistry`` per connection and closed when its last region is written or the
/// connection closes. TLS (which must encrypt the bytes) and fault injection (which must change them) use
/// the buffered ``FileBody`` instead.
enum Sendfile {
    /// Bytes per marker: the unit of backpressure (a connection whose socket is full gets no further
    /// marker until this much has gone).
    static let chunkLength = 1 << 20

    /// Regions a body lets be queued on the connection at once.
    static let regionsInFlight = 2

    /// The body for `range` of the file at `path`, sent by `sendfile` on the connection `channel`.
    static func body(
        path: FilePath,
        range: ClosedRange<Int>,
        channel: ObjectIdentifier,
        registry: SendfileRegistry
    ) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            let raw = try await BlockingIO.shortCall {
                let fd = try SystemPackage.FileDescriptor.open(
                    path,
                    .readOnly,
                    options: [.closeOnExec],
                    retryOnInterrupt: true
                )
                return fd.rawValue
            }
            let token = registry.register(NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: raw), channel: channel)
            var offset = range.lowerBound
            var marked = 0
            do {
                while offset <= range.upperBound {
                    try await registry.wait(token, channel: channel, untilDone: marked - regionsInFlight + 1)
                    let length = min(chunkLength, range.upperBound - offset + 1)
                    try await writer.write(Marker(token: token, offset: offset, length: length).buffer)
                    marked += 1
                    offset += length
                }
                try await registry.wait(token, channel: channel, untilDone: marked)
            } catch {
                registry.finish(token, channel: channel)
                throw error
            }
            registry.finish(token, channel: channel)
            try await writer.finish(nil)
        }
    }

    /// The bytes a body chunk stands for: its own size, or the length of the file region it marks.
    static func length(of buffer: ByteBuffer) -> Int {
        Marker(buffer).map(\.length) ?? buffer.readableBytes
    }
}

/// "Send `length` bytes of file `token` from `offset`", as a 32-byte buffer that no pack chunk can be
/// mistaken for (it must also name a file the connection has registered).
struct Marker {
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
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())

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
        let bodies = state.withLock { $0.bodies.removeValue(forKey: channel) } ?? [:]
        for body in bodies.values {
            try? body.handle.close()
            body.waiter?.continuation.resume(throwing: ChannelError.ioOnClosedChannel)
        }
    }

    /// How many bodies have a file open now (for tests).
    var openFiles: Int { state.withLock { $0.bodies.values.reduce(0) { $0 + $1.count } } }
}

/// Placed with Hummingbird's additional handlers (which see HTTP types): puts the handlers that need
/// HTTP/1 itself below the HTTP/1 codec: ``HTTP10Handler`` always, ``SendfileHandler`` on plain HTTP.
final class HTTP1HandlerInstaller: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart

    private let sendfile: SendfileRegistry?

    init(sendfile: SendfileRegistry?) { self.sendfile = sendfile }

    func handlerAdded(context: ChannelHandlerContext) {
        let operations = context.pipeline.syncOperations
        guard let codec = try? operations.handler(type: HTTP1ToHTTPServerCodec.self) else { return }
        try? operations.addHandler(HTTP10Handler(), position: .before(codec))
        if let sendfile {
            try? operations.addHandler(
                SendfileHandler(registry: sendfile, channel: ObjectIdentifier(context.channel)),
                position: .before(codec)
            )
        }
    }
}

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

/// Swaps body markers for file regions of their body's file, which the channel sends with `sendfile(2)`,
/// and tells the registry when each region is written.
final class SendfileHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let registry: SendfileRegistry
    private let channel: ObjectIdentifier

    init(registry: SendfileRegistry, channel: ObjectIdentifier) {
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

    func handlerRemoved(context: ChannelHandlerContext) {
        registry.connectionClosed(channel)
    }
}

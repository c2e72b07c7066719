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
/// encoder, swaps each for a `FileRegion`. The files a connection's bodies have open are kept per
/// connection in a ``SendfileRegistry`` and closed when their last marker is sent or the connection closes,
/// whichever comes first. TLS (which must encrypt the bytes) and fault injection (which must change them)
/// use the buffered ``FileBody`` instead.
enum Sendfile {
    /// Bytes per marker: the unit of backpressure (a connection whose socket is full gets no further
    /// marker until this much has gone).
    static let chunkLength = 1 << 20

    /// The body for `range` of the file at `path`, sent by `sendfile` on the connection `channel`.
    static func body(
        path: FilePath,
        range: ClosedRange<Int>,
        channel: ObjectIdentifier,
        registry: SendfileRegistry
    ) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            let fd = try await BlockingIO.run {
                try SystemPackage.FileDescriptor.open(path, .readOnly, options: [.closeOnExec], retryOnInterrupt: true)
            }
            let token = registry.register(OpenFile(fd), channel: channel)
            var offset = range.lowerBound
            do {
                while offset <= range.upperBound {
                    let length = min(chunkLength, range.upperBound - offset + 1)
                    let last = offset + length > range.upperBound
                    try await writer.write(Marker(token: token, offset: offset, length: length, last: last).buffer)
                    offset += length
                }
            } catch {
                registry.unregister(token, channel: channel)
                throw error
            }
            try await writer.finish(nil)
        }
    }

    /// The bytes a body chunk stands for: its own size, or the length of the file region it marks.
    static func length(of buffer: ByteBuffer) -> Int {
        Marker(buffer).map(\.length) ?? buffer.readableBytes
    }
}

/// "Send `length` bytes of file `token` from `offset`", as a 40-byte buffer that no pack chunk can be
/// mistaken for (it must also name a file the connection has registered).
struct Marker {
    static let magic: UInt64 = 0x4241_5345_4E44_4649  // "BASENDFI"
    static let size = 40

    var token: UInt64
    var offset: Int
    var length: Int
    /// Whether this is the body's last marker (its file is closed once the region is sent).
    var last: Bool

    init(token: UInt64, offset: Int, length: Int, last: Bool) {
        self.token = token
        self.offset = offset
        self.length = length
        self.last = last
    }

    init?(_ buffer: ByteBuffer) {
        guard buffer.readableBytes == Self.size,
            let magic = buffer.getInteger(at: buffer.readerIndex, as: UInt64.self), magic == Self.magic,
            let token = buffer.getInteger(at: buffer.readerIndex + 8, as: UInt64.self),
            let offset = buffer.getInteger(at: buffer.readerIndex + 16, as: Int64.self),
            let length = buffer.getInteger(at: buffer.readerIndex + 24, as: Int64.self),
            let last = buffer.getInteger(at: buffer.readerIndex + 32, as: UInt64.self),
            offset >= 0, length > 0
        else { return nil }
        self.init(token: token, offset: Int(offset), length: Int(length), last: last == 1)
    }

    var buffer: ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(Self.size)
        buffer.writeInteger(Self.magic)
        buffer.writeInteger(token)
        buffer.writeInteger(Int64(offset))
        buffer.writeInteger(Int64(length))
        buffer.writeInteger(UInt64(last ? 1 : 0))
        return buffer
    }
}

/// A file a body has open; closed when the last reference goes.
final class OpenFile: Sendable {
    let fd: SystemPackage.FileDescriptor

    init(_ fd: SystemPackage.FileDescriptor) { self.fd = fd }

    deinit { try? fd.close() }
}

/// The files the bodies of each connection have open, by connection and token.
final class SendfileRegistry: Sendable {
    private struct State {
        var files: [ObjectIdentifier: [UInt64: OpenFile]] = [:]
        var nextToken: UInt64 = 1
    }

    private let state = Mutex(State())

    func register(_ file: OpenFile, channel: ObjectIdentifier) -> UInt64 {
        state.withLock { state in
            let token = state.nextToken
            state.nextToken += 1
            state.files[channel, default: [:]][token] = file
            return token
        }
    }

    /// The file of a marker; a last marker takes it out of the registry.
    func file(_ marker: Marker, channel: ObjectIdentifier) -> OpenFile? {
        state.withLock { state in
            if marker.last { return state.files[channel]?.removeValue(forKey: marker.token) }
            return state.files[channel]?[marker.token]
        }
    }

    func unregister(_ token: UInt64, channel: ObjectIdentifier) {
        _ = state.withLock { $0.files[channel]?.removeValue(forKey: token) }
    }

    /// Drops every file of a connection that closed (markers it never sent hold none).
    func connectionClosed(_ channel: ObjectIdentifier) {
        _ = state.withLock { $0.files.removeValue(forKey: channel) }
    }

    /// How many files are open for bodies now (for tests).
    var openFiles: Int { state.withLock { $0.files.values.reduce(0) { $0 + $1.count } } }
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

/// Swaps body markers for file regions, which the channel sends with `sendfile(2)`; each region has a
/// descriptor of its own (a `dup`), closed when the region is written or dropped.
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
            let file = registry.file(marker, channel: channel)
        else {
            context.write(data, promise: promise)
            return
        }
        let copy = dup(file.fd.rawValue)
        guard copy >= 0 else {
            let error = IOError(errnoCode: errno, reason: "dup")
            promise?.fail(error)
            context.close(promise: nil)
            return
        }
        let handle = NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: copy)
        let region = FileRegion(fileHandle: handle, readerIndex: marker.offset, endIndex: marker.offset + marker.length)
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.whenComplete { result in
            try? handle.close()
            promise?.completeWith(result)
        }
        context.write(wrapOutboundOut(.body(.fileRegion(region))), promise: written)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        registry.connectionClosed(channel)
    }
}

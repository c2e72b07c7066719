import AssetPackFormat
import Hummingbird
import NIOCore
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
/// the buffered ``FileBody`` instead, and so does a connection where the handler could not be placed (see
/// ``HTTP1HandlerInstaller``). Each region is read into the page cache on the thread pool before it is
/// handed to the channel (``PageCache``), so that `sendfile` on the event loop never waits for the disk.
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
            // Two descriptors of the one open file: the body's own, which brings each region into the page
            // cache on the thread pool, and the channel's, which the registry closes when the connection does.
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
            let token = registry.register(NIOFileHandle(_deprecatedTakingOwnershipOfDescriptor: sent), channel: channel)
            var offset = range.lowerBound
            var marked = 0
            do {
                while offset <= range.upperBound {
                    try await registry.wait(token, channel: channel, untilDone: marked - regionsInFlight + 1)
                    let length = min(chunkLength, range.upperBound - offset + 1)
                    // sendfile(2) of pages not in memory would read the disk on the event loop, stalling every
                    // connection on it: they are read in here, off the loop, while the region before is sent.
                    let start = offset
                    _ = try await BlockingIO.shortCall { try PageCache.makeResident(fd, offset: start, length: length) }
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

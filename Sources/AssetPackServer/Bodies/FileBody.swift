import AssetPackFormat
import Hummingbird
import NIOCore
import NIOPosix
import SystemPackage

/// A response body that streams a byte range of a file through four buffers it reuses in turn, in 256 KiB
/// reads on the thread pool, each read once the connection takes bytes again.
///
/// Hummingbird's `FileIO` allocates a new 128 KiB buffer per chunk; with eight clients pulling a 1 GiB pack
/// at once, glibc kept freed chunks in per-thread arenas and ba-mock peaked at about 380 MiB. Four buffers
/// per response, each refilled once NIO has sent it, keep the memory flat (a buffer that NIO still holds
/// is copied on write, never overwritten). A body's writes are queued for the event loop without waiting for
/// the socket: over TLS each became a ciphertext buffer of its own, and a peer that stopped reading held
/// about 4 MiB of them (256 KiB chunks with the wait: about 1.4 MiB; 64 KiB chunks held less but served a
/// 256 MiB pack over TLS 2.5 times slower). The file is opened when the body starts, so a download that began
/// keeps reading its version after a rebuild unlinks it.
enum FileBody {
    /// Bytes read and written at a time.
    static let chunkLength = 256 << 10
    /// Buffers a body reuses in turn (a test holds the count to what this comment and the README say).
    static let slotCount = 4
    /// Buffers a body reuses under TLS: NIOSSL encrypts a write into a ciphertext buffer of its own when it is
    /// flushed and drops the plaintext, so the one buffer is free again by the next read. Four held 1 MiB for
    /// each peer that stopped reading (1.37 MiB with the ciphertext waiting for the socket); one holds 256 KiB.
    static let tlsSlotCount = 1

    /// The body for `range` of the file at `path`, for the connection `channel`: each chunk is read once the
    /// connection takes bytes again, so a peer that stops reading holds one chunk or two, not a queue of them.
    /// - Parameter slots: Buffers reused in turn: ``slotCount``, or ``tlsSlotCount`` under TLS.
    static func make(path: FilePath, range: ClosedRange<Int>, channel: any Channel, slots: Int = slotCount)
        -> ResponseBody
    {
        make(path: path, range: range, slots: slots) { try await SendTimeoutHandler.waitUntilWritable(channel) }
    }

    /// The body for `range` of the file at `path`, reading each chunk once `waitUntilWritable` returns.
    static func make(
        path: FilePath,
        range: ClosedRange<Int>,
        slots slotCount: Int = slotCount,
        waitUntilWritable: @escaping @Sendable () async throws -> Void
    ) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            let fd = try await BlockingIO.shortCall {
                try SystemPackage.FileDescriptor.open(path, .readOnly, retryOnInterrupt: true)
            }
            defer { try? fd.close() }
            let slots = (0..<max(1, slotCount)).map { _ in Slot() }
            var offset = range.lowerBound
            var turn = 0
            while offset <= range.upperBound {
                let slot = slots[turn]
                turn = (turn + 1) % slots.count
                let want = min(chunkLength, range.upperBound - offset + 1)
                let start = offset
                try await waitUntilWritable()
                try await BlockingIO.shortCall { try slot.fill(from: fd, at: start, count: want, path: path) }
                try await writer.write(slot.buffer)
                offset += want
            }
            try await writer.finish(nil)
        }
    }

    /// One reusable buffer; only one read or write uses it at a time.
    private final class Slot: @unchecked Sendable {
        var buffer = ByteBuffer()

        func fill(from fd: SystemPackage.FileDescriptor, at offset: Int, count: Int, path: FilePath) throws {
            buffer.clear(minimumCapacity: count)
            var filled = 0
            while filled < count {
                let read = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count - filled) { bytes in
                    try fd.read(
                        fromAbsoluteOffset: Int64(offset + filled),
                        into: UnsafeMutableRawBufferPointer(rebasing: bytes[0..<(count - filled)]),
                        retryOnInterrupt: true
                    )
                }
                guard read > 0 else {
                    throw AssetPackServerError(
                        code: .state,
                        message: "\(path) ended at byte \(offset + filled), before the \(count) bytes asked for"
                    )
                }
                filled += read
            }
        }
    }
}

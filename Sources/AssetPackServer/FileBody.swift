import AssetPackFormat
import Hummingbird
import NIOCore
import NIOPosix
import SystemPackage

/// A response body that streams a byte range of a file through four buffers it reuses, in 512 KiB reads on
/// the thread pool.
///
/// Hummingbird's `FileIO` allocates a new 128 KiB buffer per chunk; with eight clients pulling a 1 GiB pack
/// at once, glibc kept freed chunks in per-thread arenas and ba-mock peaked at about 380 MiB. Four buffers
/// per response, each refilled once NIO has sent it, keep the memory flat (a buffer that NIO still holds
/// is copied on write, never overwritten; with two buffers that happened to 5% of the chunks of one stream
/// and 18% with eight streams). The file is opened when the body starts, so a
/// download that began keeps reading its version after a rebuild unlinks it.
enum FileBody {
    /// Bytes read and written at a time.
    static let chunkLength = 512 << 10

    /// The body for `range` of the file at `path`.
    static func make(path: FilePath, range: ClosedRange<Int>) -> ResponseBody {
        ResponseBody(contentLength: range.count) { writer in
            let fd = try await BlockingIO.run {
                try SystemPackage.FileDescriptor.open(path, .readOnly, retryOnInterrupt: true)
            }
            defer { try? fd.close() }
            let slots = [Slot(), Slot(), Slot(), Slot()]
            var offset = range.lowerBound
            var turn = 0
            while offset <= range.upperBound {
                let slot = slots[turn]
                turn ^= 1
                let want = min(chunkLength, range.upperBound - offset + 1)
                let start = offset
                try await BlockingIO.run { try slot.fill(from: fd, at: start, count: want, path: path) }
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

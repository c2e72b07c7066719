import Foundation

/// A fixed set of page-aligned buffers that circulate by number through ``BlockingQueue``s: no more ever exist, so
/// memory stays flat whatever flows through. Freed with this object, so every stage must be done with
/// them first.
final class AlignedBuffers: @unchecked Sendable {
    let all: [UnsafeMutableRawBufferPointer]

    init(count: Int, size: Int) {
        all = (0..<count).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 4096) }
    }

    /// The size of each of four circulating buffers for a job of about `total` bytes: a sixty-fourth of it,
    /// as a power of two from 256 KiB (fewer hand-overs between threads) to `largest`. A process pays for
    /// each page the first time it touches it (a fault, and the kernel zeroing the page: about 2 ms for a
    /// fresh 4 MiB on this VM), and four buffers in turn touch all their pages once a job is larger than
    /// them: 1 000 files of 1-16 KiB (8.5 MB) had paid as much for the 8 MiB of its read and write buffers
    /// as for the reads themselves.
    static func size(forJobOf total: Int64, largest: Int = 1 << 20) -> Int {
        var size = 256 << 10
        while size < largest && Int64(size) * 64 < total { size *= 2 }
        return size
    }

    deinit {
        for buffer in all { buffer.deallocate() }
    }
}

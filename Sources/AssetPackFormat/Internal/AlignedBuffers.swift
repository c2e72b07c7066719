import Foundation

/// A fixed set of page-aligned buffers that circulate by number through ``BlockingQueue``s: no more ever exist, so
/// memory stays flat whatever flows through. Freed with this object, so every stage must be done with
/// them first.
final class AlignedBuffers: @unchecked Sendable {
    let all: [UnsafeMutableRawBufferPointer]

    init(count: Int, size: Int) {
        all = (0..<count).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 4096) }
    }

    deinit {
        for buffer in all { buffer.deallocate() }
    }
}

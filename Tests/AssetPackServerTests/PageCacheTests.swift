import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

#if canImport(Glibc)
    import Glibc
#endif

/// `sendfile(2)` runs on an event loop; ``PageCache`` reads a region into memory on the thread pool first,
/// so that the loop never waits for the disk.
@Suite("Page cache before sendfile")
struct PageCacheTests {
    @Test func aColdRegionIsReadInAndAWarmOneIsLeftAlone() async throws {
        let scratch = try Scratch()
        let size = 4 << 20
        let path = try scratch.write("cold.bin", Scratch.noise(size, seed: 3))
        let fd = try FileDescriptor.open(path, .readOnly)
        defer { try? fd.close() }
        // Written back to disk, then dropped from the page cache: the state of a pack nobody read lately.
        try await BlockingIO.shortCall {
            guard fsync(fd.rawValue) == 0 else { throw Errno(rawValue: errno) }
            _ = posix_fadvise(fd.rawValue, 0, 0, POSIX_FADV_DONTNEED)
        }
        let cold = try Self.residentPages(fd, offset: 1 << 20, length: 1 << 20)
        try #require(cold.resident < cold.total, "the kernel kept the file in memory; nothing to show")

        let read = try await BlockingIO.shortCall {
            try PageCache.makeResident(fd, offset: (1 << 20) + 100, length: 1 << 20)
        }
        #expect(read)
        let warm = try Self.residentPages(fd, offset: (1 << 20) + 100, length: 1 << 20)
        #expect(warm.resident == warm.total)
        let again = try await BlockingIO.shortCall {
            try PageCache.makeResident(fd, offset: (1 << 20) + 100, length: 1 << 20)
        }
        #expect(!again, "a resident region is not read again")
        // The end of the file and past it: read up to the end, no error.
        _ = try await BlockingIO.shortCall { try PageCache.makeResident(fd, offset: size - 1000, length: 5000) }
        let tail = try Self.residentPages(fd, offset: size - 1000, length: 1000)
        #expect(tail.resident == tail.total)
    }

    /// How many pages of a range `mincore` finds in memory.
    static func residentPages(_ fd: FileDescriptor, offset: Int, length: Int) throws -> (resident: Int, total: Int) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let start = offset - offset % page
        let mapped = offset + length - start
        guard let base = mmap(nil, mapped, PROT_READ, MAP_SHARED, fd.rawValue, off_t(start)), base != MAP_FAILED else {
            throw Errno(rawValue: errno)
        }
        defer { munmap(base, mapped) }
        var vector = [UInt8](repeating: 0, count: (mapped + page - 1) / page)
        guard mincore(base, mapped, &vector) == 0 else { throw Errno(rawValue: errno) }
        return (vector.filter { $0 & 1 == 1 }.count, vector.count)
    }
}

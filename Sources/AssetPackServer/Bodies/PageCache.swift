import AssetPackFormat
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Makes a range of a file resident in the page cache before `sendfile(2)` sends it from an event loop:
/// `sendfile` of a page that is not in memory reads the disk right there, and every other connection of
/// that loop waits for the disk. Called on NIO's thread pool, one region at a time, just before the region
/// is handed to the channel.
enum PageCache {
    private static let pageSize = max(4096, Int(sysconf(Int32(_SC_PAGESIZE))))
    /// Bytes read at a time to bring pages in; the bytes themselves are dropped.
    private static let readLength = 128 << 10

    /// Reads into the page cache the pages of `offset..<offset+length` of `fd` that are not there (`mincore`
    /// of a mapping of the range says which), so that `sendfile` of the range finds them.
    /// - Returns: Whether any page had to be read (for tests and measurements).
    /// - Throws: `Errno` when the range cannot be mapped or read; a file shorter than the range ends the
    ///   reading without an error (`sendfile` then sends what there is, and the body fails on its length).
    @discardableResult
    static func makeResident(_ fd: FileDescriptor, offset: Int, length: Int) throws -> Bool {
        BlockingIO.checkOffPool("PageCache.makeResident")
        guard length > 0 else { return false }
        let start = offset - offset % pageSize
        let mapped = offset + length - start
        // Mapping pages past the end of the file is allowed; they are reported absent and never touched.
        guard let base = mmap(nil, mapped, PROT_READ, MAP_SHARED, fd.rawValue, off_t(start)), base != MAP_FAILED
        else { throw Errno(rawValue: errno) }
        defer { munmap(base, mapped) }
        var resident = [UInt8](repeating: 0, count: (mapped + pageSize - 1) / pageSize)
        guard mincore(base, mapped, &resident) == 0 else { throw Errno(rawValue: errno) }
        guard let first = resident.firstIndex(where: { $0 & 1 == 0 }) else { return false }
        let last = resident.lastIndex(where: { $0 & 1 == 0 }) ?? first
        // Read from the first absent page to the last (a read, not a touch of the mapping: a file cut short
        // under us ends a read early, where touching a page past its end would kill the process).
        let readStart = start + first * pageSize
        let readEnd = min(offset + length, start + (last + 1) * pageSize)
        fd.advise(.willNeed, offset: Int64(readStart), length: Int64(readEnd - readStart))
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: readLength, alignment: pageSize)
        defer { scratch.deallocate() }
        var position = readStart
        while position < readEnd {
            let want = min(readLength, readEnd - position)
            let read = try fd.read(
                fromAbsoluteOffset: Int64(position),
                into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<want]),
                retryOnInterrupt: true
            )
            if read == 0 { break }
            position += read
        }
        return true
    }
}

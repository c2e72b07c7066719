import CLibArchive
import SystemPackage

/// The header of one archive entry, as read.
struct ArchiveEntryHeader {
    /// The entry's path as stored (UTF-8 where available).
    var name: String
    /// File type bits (`ArchiveFileType`).
    var type: UInt32
    /// The size the header declares.
    var size: Int64
    /// Set for hard links (the entry's target) and symlinks.
    var hardlink: String?
    var symlink: String?
}

/// A streaming reader over a tar archive (any filter libarchive knows), valid only inside
/// ``withArchiveReader(at:_:)``.
struct ArchiveReader {
    fileprivate let archive: OpaquePointer
    /// The archive's path or URL, for messages.
    let path: String

    /// The next entry's header, or `nil` at the end of the archive.
    func next() throws -> ArchiveEntryHeader? {
        var entry: OpaquePointer?
        let status = archive_read_next_header(archive, &entry)
        if status == ArchiveStatus.eof { return nil }
        try check(status, archive, "\(path) is not a readable pack archive")
        guard let entry else { return nil }
        // The name as stored, so that it reaches the disk byte-exact and is compared with the index as bytes.
        // Packs store names as binary (pax `hdrcharset=BINARY`), which libarchive passes through; a name stored
        // as UTF-8 is converted to the thread's locale, and a UTF-8 locale normalizes it to NFC (an NFD entry
        // then matched an NFC row and installed under a name the archive does not hold). Readers run in the
        // C locale, where that conversion fails (a warning) and the stored bytes come through unchanged.
        let name =
            archive_entry_pathname(entry).map { String(cString: $0) }
            ?? archive_entry_pathname_utf8(entry).map { String(cString: $0) } ?? ""
        return ArchiveEntryHeader(
            name: name,
            type: UInt32(archive_entry_filetype(entry)),
            size: archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : -1,
            hardlink: archive_entry_hardlink(entry).map { String(cString: $0) },
            symlink: archive_entry_symlink(entry).map { String(cString: $0) }
        )
    }

    /// Streams the current entry's data in blocks to `consume`, in order; holes (sparse entries) are refused.
    func readData(_ consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        var expected: Int64 = 0
        while true {
            var block: UnsafeRawPointer?
            var size = 0
            var offset: la_int64_t = 0
            let status = archive_read_data_block(archive, &block, &size, &offset)
            if status == ArchiveStatus.eof { return }
            try check(status, archive, "cannot read \(path)")
            guard offset == expected else {
                throw AssetPackFormatError(
                    code: .corruptPack,
                    message: "\(path) holds a sparse entry, which packs never contain"
                )
            }
            try consume(UnsafeRawBufferPointer(start: block, count: size))
            expected += Int64(size)
        }
    }
}

/// Opens a tar archive for streaming reads (every compression filter libarchive supports; tar formats only,
/// so a non-archive is refused rather than read raw).
func withArchiveReader<T>(at path: FilePath, _ body: (ArchiveReader) throws -> T) throws -> T {
    try withCLocale { try openArchiveReader(at: path, body) }
}

private func openArchiveReader<T>(at path: FilePath, _ body: (ArchiveReader) throws -> T) throws -> T {
    guard let archive = archive_read_new() else {
        throw AssetPackFormatError(code: .archive, message: "libarchive could not allocate a reader")
    }
    defer { archive_read_free(archive) }
    try check(archive_read_support_filter_all(archive), archive, "filters")
    try check(archive_read_support_format_tar(archive), archive, "tar format")
    let fd: FileDescriptor
    do {
        fd = try FileDescriptor.open(path, .readOnly, retryOnInterrupt: true)
    } catch let errno as Errno {
        if errno == .noSuchFileOrDirectory {
            throw AssetPackFormatError(code: .notFound, message: "pack archive \(path) does not exist", cause: errno)
        }
        throw AssetPackFormatError.io("open", path, errno)
    }
    return try fd.closeAfter {
        try check(archive_read_open_fd(archive, fd.rawValue, 1 << 20), archive, "\(path) is not a pack archive")
        return try body(ArchiveReader(archive: archive, path: path.string))
    }
}

/// Where a streaming reader gets its bytes: the next block, valid until the next call; empty at the end.
typealias ArchiveByteSource = () throws -> UnsafeRawBufferPointer

/// Holds the byte source of a streaming reader, and the error it threw (libarchive only sees -1).
private final class StreamSource {
    let next: ArchiveByteSource
    var error: (any Error)?

    init(_ next: @escaping ArchiveByteSource) { self.next = next }
}

/// Opens a tar archive that arrives as a stream of blocks (a download), for the same streaming reads as
/// ``withArchiveReader(at:_:)``. An error thrown by `source` is rethrown as it is.
/// - Parameters:
///   - name: The archive's URL or name, for messages.
///   - source: Hands out the archive's bytes in order.
func withArchiveReader<T>(
    streaming source: @escaping ArchiveByteSource,
    name: String,
    _ body: (ArchiveReader) throws -> T
) throws -> T {
    try withCLocale { try openArchiveReader(streaming: source, name: name, body) }
}

private func openArchiveReader<T>(
    streaming source: @escaping ArchiveByteSource,
    name: String,
    _ body: (ArchiveReader) throws -> T
) throws -> T {
    guard let archive = archive_read_new() else {
        throw AssetPackFormatError(code: .archive, message: "libarchive could not allocate a reader")
    }
    defer { archive_read_free(archive) }
    try check(archive_read_support_filter_all(archive), archive, "filters")
    try check(archive_read_support_format_tar(archive), archive, "tar format")
    let stream = StreamSource(source)
    let context = Unmanaged.passRetained(stream)
    defer { context.release() }
    do {
        let status = archive_read_open(
            archive,
            context.toOpaque(),
            nil,
            { _, client, buffer in
                guard let client else { return -1 }
                let stream = Unmanaged<StreamSource>.fromOpaque(client).takeUnretainedValue()
                do {
                    let block = try stream.next()
                    buffer?.pointee = block.baseAddress
                    return block.count
                } catch {
                    stream.error = error
                    return -1
                }
            },
            nil
        )
        try check(status, archive, "\(name) is not a pack archive")
        return try body(ArchiveReader(archive: archive, path: name))
    } catch {
        if let cause = stream.error { throw cause }
        throw error
    }
}

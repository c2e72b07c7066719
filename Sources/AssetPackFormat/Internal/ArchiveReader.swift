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
    /// The SHA-256 the archive carries for the entry's data (an Apple Archive's `SH2` field), if any.
    var sha256: [UInt8]? = nil
}

/// A streaming reader over a pack archive, valid only inside ``withArchiveReader(at:_:)``: a tar (any filter
/// libarchive knows) or an Apple Archive (told apart by their first bytes, never by a name).
struct ArchiveReader {
    fileprivate enum Backend {
        case libarchive(OpaquePointer)
        case apple(AppleArchiveStream)
    }

    fileprivate let backend: Backend
    /// The archive's path or URL, for messages.
    let path: String

    /// An Apple Archive's compression (`none` for a plain one); `nil` for a tar.
    var appleCompression: PackCompression? {
        if case .apple(let stream) = backend { return stream.compression }
        return nil
    }

    /// The container read.
    var format: PackFormat {
        if case .apple = backend { return .aar }
        return .tar
    }

    /// The next entry's header, or `nil` at the end of the archive.
    func next() throws -> ArchiveEntryHeader? {
        switch backend {
        case .libarchive(let archive): try next(archive)
        case .apple(let stream): try stream.entries.next()
        }
    }

    /// Streams the current entry's data in blocks to `consume`, in order; holes (sparse entries) are refused.
    func readData(_ consume: (UnsafeRawBufferPointer) throws -> Void) throws {
        switch backend {
        case .libarchive(let archive): try readData(archive, consume)
        case .apple(let stream): try stream.entries.readData(consume)
        }
    }

    private func next(_ archive: OpaquePointer) throws -> ArchiveEntryHeader? {
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

    private func readData(_ archive: OpaquePointer, _ consume: (UnsafeRawBufferPointer) throws -> Void) throws {
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
    BlockingIO.checkOffPool("ArchiveReader.withArchiveReader")
    return try withCLocale { try openArchiveReader(at: path, body) }
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
        let head = try firstBytes(fd)
        if AppleArchiveMagic.matches(head) {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
            defer { buffer.deallocate() }
            let stream = try AppleArchiveStream(
                {
                    do {
                        let count = try fd.read(into: buffer, retryOnInterrupt: true)
                        return UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                    } catch let errno as Errno {
                        throw AssetPackFormatError.io("read", path, errno)
                    }
                },
                name: path.string
            )
            return try body(ArchiveReader(backend: .apple(stream), path: path.string))
        }
        do {
            try check(archive_read_open_fd(archive, fd.rawValue, 1 << 20), archive, "\(path) is not a pack archive")
        } catch var error as AssetPackFormatError where path.extension == "aar" {
            // Named as an Apple Archive but not one: say what it starts with, not only what libarchive missed.
            let shown = head.map { $0 >= 0x20 && $0 < 0x7F ? String(UnicodeScalar($0)) : "." }.joined()
            error.message =
                "\(path) is not an Apple Archive (it starts with \"\(shown)\", not pbz or AA01) nor a tar pack"
            throw error
        }
        return try body(ArchiveReader(backend: .libarchive(archive), path: path.string))
    }
}

/// The file's first four bytes (read at offset 0; the file position is not moved).
private func firstBytes(_ fd: FileDescriptor) throws -> [UInt8] {
    var head = [UInt8](repeating: 0, count: 4)
    let count = try head.withUnsafeMutableBytes { try fd.read(fromAbsoluteOffset: 0, into: $0, retryOnInterrupt: true) }
    return Array(head[0..<count])
}

/// A byte source that hands out bytes read ahead (to tell the format) before the rest of its source.
private final class ReplaySource {
    private var head: UnsafeMutableRawBufferPointer?
    private let rest: ArchiveByteSource

    init(head: [UInt8], rest: @escaping ArchiveByteSource) {
        self.rest = rest
        if !head.isEmpty {
            let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: head.count, alignment: 1)
            copy.copyBytes(from: head)
            self.head = copy
        }
    }

    deinit {
        head?.deallocate()
        pending?.deallocate()
    }

    /// Reads until `count` bytes are ahead or the source ends, and returns them.
    static func peek(_ count: Int, from source: ArchiveByteSource) throws -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < count {
            let block = try source()
            if block.isEmpty { break }
            bytes.append(contentsOf: block)
        }
        return bytes
    }

    func next() throws -> UnsafeRawBufferPointer {
        if let head {
            // Kept until the next call (the block's lifetime a source promises), then freed.
            self.head = nil
            pending = head
            return UnsafeRawBufferPointer(head)
        }
        pending?.deallocate()
        pending = nil
        return try rest()
    }

    private var pending: UnsafeMutableRawBufferPointer?
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
    BlockingIO.checkOffPool("ArchiveReader.withArchiveReader")
    let head = try ReplaySource.peek(4, from: source)
    let replay = ReplaySource(head: head, rest: source)
    if AppleArchiveMagic.matches(head) {
        let stream = try AppleArchiveStream(replay.next, name: name)
        return try body(ArchiveReader(backend: .apple(stream), path: name))
    }
    return try withCLocale { try openArchiveReader(streaming: replay.next, name: name, body) }
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
        return try body(ArchiveReader(backend: .libarchive(archive), path: name))
    } catch {
        if let cause = stream.error { throw cause }
        throw error
    }
}

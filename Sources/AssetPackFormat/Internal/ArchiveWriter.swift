import CLibArchive
import Crypto
import SystemPackage

/// Receives the compressed bytes libarchive produces: writes them to the output and hashes them on the way,
/// so the archive's digest costs no second pass.
private final class ArchiveSink {
    let fd: FileDescriptor
    var hasher = SHA256()
    var written: Int64 = 0
    var failure: Errno?

    init(fd: FileDescriptor) { self.fd = fd }

    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        do {
            _ = try fd.writeAll(bytes)
        } catch {
            failure = (error as? Errno) ?? .ioError
            return -1
        }
        hasher.update(bufferPointer: bytes)
        written += Int64(bytes.count)
        return bytes.count
    }
}

/// A pax tar writer over libarchive, valid only inside ``withArchiveWriter(to:options:_:)``.
struct ArchiveWriter {
    fileprivate let archive: OpaquePointer
    fileprivate let entry: OpaquePointer

    /// Writes one regular file entry with normalised metadata (mode 0644, owner 0, time 0), so that the
    /// same content always gives the same bytes. `produce` is handed a function that appends data.
    func addFile(
        named name: String,
        size: Int64,
        _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        archive_entry_clear(entry)
        archive_entry_set_pathname_utf8(entry, name)
        archive_entry_set_filetype(entry, ArchiveFileType.regular)
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_size(entry, size)
        archive_entry_set_mtime(entry, 0, 0)
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        try check(archive_write_header(archive, entry), archive, "cannot write the header of \(name)")
        var remaining = size
        try produce { bytes in
            guard Int64(bytes.count) <= remaining else {
                throw AssetPackFormatError(
                    code: .changedWhilePacking,
                    message: "\(name) grew while it was being packed. Fix: pack again when nothing writes to it"
                )
            }
            var offset = 0
            while offset < bytes.count {
                let base = bytes.baseAddress.map { $0 + offset }
                let wrote = archive_write_data(archive, base, bytes.count - offset)
                if wrote < 0 { try check(Int32(wrote), archive, "cannot write the data of \(name)") }
                if wrote <= 0 { break }
                offset += wrote
            }
            remaining -= Int64(bytes.count)
        }
        guard remaining == 0 else {
            throw AssetPackFormatError(
                code: .changedWhilePacking,
                message: "\(name) shrank while it was being packed. Fix: pack again when nothing writes to it"
            )
        }
        try check(archive_write_finish_entry(archive), archive, "cannot finish \(name)")
    }
}

/// Opens a pax tar writer with the chosen compression over `fd`, runs `body`, closes the archive.
///
/// - Returns: What `body` returns, the SHA-256 of the bytes written and their count.
/// - Throws: ``AssetPackFormatError`` with code `.archive` (libarchive refused), `.io` (the output
///   could not be written) or `.invalidOption`.
func withArchiveWriter<T>(
    to fd: FileDescriptor,
    options: PackBuildOptions,
    _ body: (ArchiveWriter) throws -> T
) throws -> (result: T, sha256: String, size: Int64) {
    let sink = ArchiveSink(fd: fd)
    guard let archive = archive_write_new() else {
        throw AssetPackFormatError(code: .archive, message: "libarchive could not allocate a writer")
    }
    var finished = false
    defer {
        // Freeing an archive that was not closed flushes it through the callback: mark it failed first,
        // and keep the sink alive until libarchive is done with it.
        if !finished { archive_write_fail(archive) }
        archive_write_free(archive)
        withExtendedLifetime(sink) {}
    }
    guard let entry = archive_entry_new() else {
        throw AssetPackFormatError(code: .archive, message: "libarchive could not allocate an entry")
    }
    defer { archive_entry_free(entry) }

    try check(archive_write_set_format_pax_restricted(archive), archive, "cannot select the pax format")
    switch options.compression {
    case .zstd: try check(archive_write_add_filter_zstd(archive), archive, "zstd is not available in libarchive")
    case .gzip: try check(archive_write_add_filter_gzip(archive), archive, "gzip is not available in libarchive")
    case .xz: try check(archive_write_add_filter_xz(archive), archive, "xz is not available in libarchive")
    case .lz4: try check(archive_write_add_filter_lz4(archive), archive, "lz4 is not available in libarchive")
    case .none: break
    }
    let filter = options.compression.rawValue
    if let level = options.effectiveLevel {
        try check(
            archive_write_set_filter_option(archive, filter, "compression-level", String(level)),
            archive,
            "libarchive refused \(filter) level \(level)"
        )
    }
    if options.compression == .zstd || options.compression == .xz, options.threads > 1 {
        try check(
            archive_write_set_filter_option(archive, filter, "threads", String(options.threads)),
            archive,
            "libarchive refused \(options.threads) \(filter) threads"
        )
    }
    if options.compression == .gzip {
        // No timestamp in the gzip header: the same input must give the same bytes.
        try check(archive_write_set_filter_option(archive, "gzip", "timestamp", nil), archive, "gzip option")
    }
    try check(archive_write_set_bytes_per_block(archive, 64 * 1024), archive, "block size")
    try check(archive_write_set_bytes_in_last_block(archive, 1), archive, "last block size")

    let box = Unmanaged.passUnretained(sink)
    let opened = archive_write_open2(
        archive,
        box.toOpaque(),
        nil,
        { _, client, buffer, length in
            guard let client, let buffer else { return 0 }
            let sink = Unmanaged<ArchiveSink>.fromOpaque(client).takeUnretainedValue()
            return sink.write(UnsafeRawBufferPointer(start: buffer, count: length))
        },
        nil,
        nil
    )
    try check(opened, archive, "cannot open the archive for writing")
    do {
        let result = try body(ArchiveWriter(archive: archive, entry: entry))
        let closed = archive_write_close(archive)
        finished = true
        if let failure = sink.failure {
            throw AssetPackFormatError(code: .io, message: "cannot write the pack: \(failure)", cause: failure)
        }
        try check(closed, archive, "cannot finish the archive")
        return (result, sink.hasher.finalize().hexString, sink.written)
    } catch let error as AssetPackFormatError where sink.failure != nil && error.code == .archive {
        let failure = sink.failure ?? .ioError
        throw AssetPackFormatError(code: .io, message: "cannot write the pack: \(failure)", cause: failure)
    }
}

import CLibArchive
import Foundation
import SystemPackage

/// A pax tar writer over libarchive, valid only inside ``withArchiveWriter(to:options:expected:binaryNames:_:)``.
struct ArchiveWriter {
    fileprivate let archive: OpaquePointer
    fileprivate let entry: OpaquePointer

    /// Writes one regular file entry with normalised metadata (mode 0644, owner 0, time 0), so that the
    /// same content always gives the same bytes. `produce` is handed a function that appends data;
    /// what it returns is returned.
    @discardableResult
    func addFile<T>(
        named name: String,
        size: Int64,
        _ produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> T
    ) throws -> T {
        archive_entry_clear(entry)
        archive_entry_copy_pathname(entry, name)  // the bytes as they are: no conversion, no normalization
        archive_entry_set_filetype(entry, ArchiveFileType.regular)
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_size(entry, size)
        archive_entry_set_mtime(entry, 0, 0)
        archive_entry_set_uid(entry, 0)
        archive_entry_set_gid(entry, 0)
        try checkWrite(
            Int(archive_write_header(archive, entry)),
            archive,
            "cannot write the header of \(name)",
            code: .archive
        )
        var remaining = size
        let result = try produce { bytes in
            guard Int64(bytes.count) <= remaining else {
                throw AssetPackFormatError.changedWhilePacking(name, "grew")
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
            throw AssetPackFormatError.changedWhilePacking(name, "shrank")
        }
        try checkWrite(Int(archive_write_finish_entry(archive)), archive, "cannot finish \(name)", code: .archive)
        return result
    }
}

extension AssetPackFormatError {
    /// A file that grew or shrank (`how`) between being listed and being packed.
    static func changedWhilePacking(_ name: String, _ how: String) -> AssetPackFormatError {
        AssetPackFormatError(
            code: .changedWhilePacking,
            message: "\(name) \(how) while it was being packed. Fix: pack again when nothing writes to it"
        )
    }
}

/// Opens a pax tar writer with the chosen compression over `fd`, runs `body`, closes the archive.
///
/// - Returns: What `body` returns, the SHA-256 of the bytes written and their count.
/// - Throws: ``AssetPackFormatError`` with code `.archive` (libarchive refused), `.io` (the output
///   could not be written) or `.invalidOption`.
/// - Parameter expected: About how many bytes the archive's entries hold, to size the sink's buffers.
/// - Parameter binaryNames: Write names as the bytes they are, with `hdrcharset=BINARY`: needed when a name
///   goes beyond ASCII, because libarchive converts names it believes are UTF-8 and normalizes them to NFC on
///   the way (`e` + U+0301 would become U+00E9, a name the index does not have). It costs every entry a pax
///   header, so an archive of ASCII names is written without it (the same bytes as before it existed).
func withArchiveWriter<T>(
    to fd: FileDescriptor,
    options: PackBuildOptions,
    expected: Int64 = .max,
    binaryNames: Bool,
    _ body: (ArchiveWriter) throws -> T
) throws -> (result: T, sha256: String, size: Int64) {
    BlockingIO.checkOffPool("ArchiveWriter.withArchiveWriter")
    return try withUTF8Locale {
        try openArchiveWriter(to: fd, options: options, expected: expected, binaryNames: binaryNames, body)
    }
}

private func openArchiveWriter<T>(
    to fd: FileDescriptor,
    options: PackBuildOptions,
    expected: Int64,
    binaryNames: Bool,
    _ body: (ArchiveWriter) throws -> T
) throws -> (result: T, sha256: String, size: Int64) {
    // zstd on one thread runs in the sink, on a thread of its own; libarchive writes the plain tar.
    let zstd =
        options.compression == .zstd && options.threads <= 1 ? try options.effectiveLevel.map(ZstdStream.init) : nil
    let sink = ArchiveSink(fd: fd, zstd: zstd, expected: expected)
    guard let archive = archive_write_new() else {
        throw AssetPackFormatError(code: .archive, message: "libarchive could not allocate a writer")
    }
    var finished = false
    defer {
        // Freeing an archive that was not closed flushes it through the callback: mark it failed first,
        // and keep the sink alive until libarchive is done with it; then stop its writer.
        if !finished { archive_write_fail(archive) }
        archive_write_free(archive)
        if !finished { sink.abandon() }
        withExtendedLifetime(sink) {}
    }
    guard let entry = archive_entry_new() else {
        throw AssetPackFormatError(code: .archive, message: "libarchive could not allocate an entry")
    }
    defer { archive_entry_free(entry) }

    try configureArchiveWriter(archive, options: options, binaryNames: binaryNames, sinkCompresses: zstd != nil)
    try openArchiveOutput(archive, into: sink)
    do {
        let result = try body(ArchiveWriter(archive: archive, entry: entry))
        let closed = archive_write_close(archive)
        finished = true
        let (sha256, size) = try sink.finish().get()
        try check(closed, archive, "cannot finish the archive")
        return (result, sha256, size)
    } catch let error as AssetPackFormatError where error.code == .archive {
        throw sink.failure ?? error  // libarchive saw only that its callback failed
    }
}

/// Sets the pax format, compression and block sizes; throws `.archive` when refused, `.invalidOption` when unusable.
/// - Parameter sinkCompresses: The sink compresses with zstd: libarchive writes the plain tar, unblocked.
private func configureArchiveWriter(
    _ archive: OpaquePointer,
    options: PackBuildOptions,
    binaryNames: Bool,
    sinkCompresses: Bool
) throws {
    try check(archive_write_set_format_pax_restricted(archive), archive, "cannot select the pax format")
    if binaryNames {
        try check(
            archive_write_set_format_option(archive, "pax", "hdrcharset", "BINARY"),
            archive,
            "cannot select binary pax names"
        )
    }
    switch options.compression {
    case .zstd where sinkCompresses: break
    case .zstd: try check(archive_write_add_filter_zstd(archive), archive, "zstd is not available in libarchive")
    case .gzip: try check(archive_write_add_filter_gzip(archive), archive, "gzip is not available in libarchive")
    case .xz: try check(archive_write_add_filter_xz(archive), archive, "xz is not available in libarchive")
    case .lz4: try check(archive_write_add_filter_lz4(archive), archive, "lz4 is not available in libarchive")
    case .none: break
    case .lzfse, .lzma, .zlib: try options.validate()  // Apple Archive only: says so
    }
    let filter = options.compression.rawValue
    if let level = options.effectiveLevel, !sinkCompresses {
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
    // Blocks shape only what libarchive hands the sink (no padding: one byte in the last block); unblocked,
    // the plain tar reaches the sink's buffers without a copy into libarchive's first.
    try check(archive_write_set_bytes_per_block(archive, sinkCompresses ? 0 : 64 * 1024), archive, "block size")
    try check(archive_write_set_bytes_in_last_block(archive, 1), archive, "last block size")
}

/// Opens `archive` for writing into `sink` through libarchive's write callback; throws when libarchive refuses.
private func openArchiveOutput(_ archive: OpaquePointer, into sink: ArchiveSink) throws {
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
}

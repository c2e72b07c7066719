import CLibArchive
import Crypto
import Foundation
import SystemPackage

/// Receives the compressed bytes libarchive produces and hands them to a thread of its own that hashes
/// and writes them, so the archive's digest costs no second pass and neither it nor the `write` calls hold
/// up the thread that reads, hashes and compresses the input. (Packing 512 MiB of incompressible files,
/// that thread was 84% of the profile and the other core mostly idle; hashing and writing the output was
/// 30% of it.)
///
/// Bytes are gathered into 1 MiB buffers; four of them circulate, so at most 4 MiB wait.
private final class ArchiveSink: @unchecked Sendable {
    private static let bufferSize = 1 << 20
    private static let bufferCount = 4

    // Guarded by `condition`.
    private let condition = NSCondition()
    private var free: [UnsafeMutableRawBufferPointer] = []
    private var full: [(buffer: UnsafeMutableRawBufferPointer, count: Int)] = []
    private var ended = false
    private var writerDone = false
    private var writeFailure: Errno?

    // Only the producer (libarchive's callback) touches these.
    private var current: UnsafeMutableRawBufferPointer?
    private var filled = 0
    private var all: [UnsafeMutableRawBufferPointer] = []

    // Only the writer thread touches these until it is done.
    private var hasher = SHA256()
    private var written: Int64 = 0
    private let fd: FileDescriptor

    init(fd: FileDescriptor) {
        self.fd = fd
        for _ in 0..<Self.bufferCount {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 4096)
            all.append(buffer)
            free.append(buffer)
        }
        let thread = Thread { [self] in drain() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    deinit {
        for buffer in all { buffer.deallocate() }
    }

    /// The first write error, once the writer met one.
    var failure: Errno? {
        condition.lock()
        defer { condition.unlock() }
        return writeFailure
    }

    /// libarchive's write callback: takes the bytes, or returns -1 once a write has failed.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            if current == nil {
                condition.lock()
                while free.isEmpty && writeFailure == nil { condition.wait() }
                if writeFailure != nil {
                    condition.unlock()
                    return -1
                }
                current = free.removeLast()
                condition.unlock()
                filled = 0
            }
            guard let buffer = current else { return -1 }
            let count = min(bytes.count - offset, buffer.count - filled)
            UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<filled + count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            filled += count
            offset += count
            if filled == buffer.count { handOver() }
        }
        return bytes.count
    }

    /// Sends the buffer being filled to the writer.
    private func handOver() {
        guard let buffer = current else { return }
        current = nil
        condition.lock()
        full.append((buffer, filled))
        condition.signal()
        condition.unlock()
    }

    /// Flushes what is left and waits for the writer: the archive's SHA-256 and size, or the write error.
    func finish() -> Swift.Result<(sha256: String, size: Int64), Errno> {
        if current != nil { handOver() }
        condition.lock()
        ended = true
        condition.broadcast()
        while !writerDone { condition.wait() }
        let failure = writeFailure
        condition.unlock()
        if let failure { return .failure(failure) }
        return .success((hasher.finalize().hexString, written))
    }

    /// Stops the writer without waiting for the rest (the archive failed anyway).
    func abandon() {
        condition.lock()
        ended = true
        writeFailure = writeFailure ?? .canceled
        condition.broadcast()
        while !writerDone { condition.wait() }
        condition.unlock()
    }

    /// The writer thread: hashes and writes full buffers in order until the end.
    private func drain() {
        while true {
            condition.lock()
            while full.isEmpty && !ended && writeFailure == nil { condition.wait() }
            if writeFailure != nil || full.isEmpty {
                writerDone = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let (buffer, count) = full.removeFirst()
            condition.unlock()
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            var failed: Errno?
            do {
                _ = try fd.writeAll(bytes)
                hasher.update(bufferPointer: bytes)
                written += Int64(count)
            } catch {
                failed = (error as? Errno) ?? .ioError
            }
            condition.lock()
            if let failed, writeFailure == nil { writeFailure = failed }
            free.append(buffer)
            condition.broadcast()
            condition.unlock()
        }
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
        try checkWrite(Int(archive_write_finish_entry(archive)), archive, "cannot finish \(name)", code: .archive)
    }
}

/// Opens a pax tar writer with the chosen compression over `fd`, runs `body`, closes the archive.
///
/// - Returns: What `body` returns, the SHA-256 of the bytes written and their count.
/// - Throws: ``AssetPackFormatError`` with code `.archive` (libarchive refused), `.io` (the output
///   could not be written) or `.invalidOption`.
/// - Parameter binaryNames: Write names as the bytes they are, with `hdrcharset=BINARY`: needed when a name
///   goes beyond ASCII, because libarchive converts names it believes are UTF-8 and normalizes them to NFC on
///   the way (`e` + U+0301 would become U+00E9, a name the index does not have). It costs every entry a pax
///   header, so an archive of ASCII names is written without it (the same bytes as before it existed).
func withArchiveWriter<T>(
    to fd: FileDescriptor,
    options: PackBuildOptions,
    binaryNames: Bool,
    _ body: (ArchiveWriter) throws -> T
) throws -> (result: T, sha256: String, size: Int64) {
    try withUTF8Locale { try openArchiveWriter(to: fd, options: options, binaryNames: binaryNames, body) }
}

private func openArchiveWriter<T>(
    to fd: FileDescriptor,
    options: PackBuildOptions,
    binaryNames: Bool,
    _ body: (ArchiveWriter) throws -> T
) throws -> (result: T, sha256: String, size: Int64) {
    let sink = ArchiveSink(fd: fd)
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

    try check(archive_write_set_format_pax_restricted(archive), archive, "cannot select the pax format")
    if binaryNames {
        try check(
            archive_write_set_format_option(archive, "pax", "hdrcharset", "BINARY"),
            archive,
            "cannot select binary pax names"
        )
    }
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
        switch sink.finish() {
        case .failure(let failure):
            throw AssetPackFormatError(code: .io, message: "cannot write the pack: \(failure)", cause: failure)
        case .success(let (sha256, size)):
            try check(closed, archive, "cannot finish the archive")
            return (result, sha256, size)
        }
    } catch let error as AssetPackFormatError where sink.failure != nil && error.code == .archive {
        let failure = sink.failure ?? .ioError
        throw AssetPackFormatError(code: .io, message: "cannot write the pack: \(failure)", cause: failure)
    }
}

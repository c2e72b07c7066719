import CLibArchive
import Crypto
import Foundation
import SystemPackage

/// Receives the compressed bytes libarchive produces and passes them through two stages of their own: a
/// thread that hashes them (so the archive's digest costs no second pass) and a thread that writes them,
/// so that neither holds up the thread that compresses. (Packing 1 GiB of incompressible files with the
/// hash and the write on one thread, that thread set the pace: it waited for the disk between hashes.)
///
/// Bytes are gathered into 1 MiB buffers; four of them circulate, so at most 4 MiB wait. Full buffers
/// are written with `O_DIRECT` where the file system takes it: straight to the disk, once, rather than
/// copied into fresh page cache and flushed again by the `fsync` that ends the build. (1 GiB: the writes
/// took 1.8 s of the build's 2 s through the page cache; the whole build now takes about 1.1 s.)
final class ArchiveSink: @unchecked Sendable {
    private static let bufferSize = 1 << 20
    private static let directAlignment = 4096
    private static let oDirect = FileDescriptor.directFlag

    private let buffers = AlignedBuffers(count: 4, size: bufferSize)
    /// Buffers go round by their number in `buffers`: free, then filled (with a count) to be hashed, then
    /// hashed to be written, then free again.
    private let free: BlockingQueue<Int>
    private let toHash = BlockingQueue<(buffer: Int, count: Int)>()
    private let toWrite = BlockingQueue<(buffer: Int, count: Int)>()
    private let stages = DispatchGroup()
    private let lock = NSLock()
    private var writeFailure: Errno?  // guarded by `lock`

    // Only the producer (libarchive's callback) touches these.
    private var current: Int?
    private var filled = 0

    // Only the hashing thread, and only the writing thread, touches each until `stages` is done.
    private var hasher = SHA256()
    private var written: Int64 = 0
    private let fd: FileDescriptor

    init(fd: FileDescriptor) {
        self.fd = fd
        free = BlockingQueue(holding: Array(buffers.all.indices))
        stages.enter()
        stages.enter()
        BlockingIO.startLongJob { [self] in hashStage() }
        BlockingIO.startLongJob { [self] in writeStage() }
    }

    /// The first write error, once the writer met one.
    var failure: Errno? { lock.withLock { writeFailure } }

    /// libarchive's write callback: takes the bytes, or returns -1 once a write has failed.
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            if current == nil {
                guard let number = try? free.receive() else { return -1 }
                current = number
                filled = 0
            }
            guard let number = current else { return -1 }
            let buffer = buffers.all[number]
            let count = min(bytes.count - offset, buffer.count - filled)
            UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<filled + count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            filled += count
            offset += count
            if filled == buffer.count { handOver() }
        }
        return bytes.count
    }

    /// Sends the buffer being filled on.
    private func handOver() {
        guard let number = current else { return }
        current = nil
        toHash.offer((number, filled))
    }

    /// Flushes what is left and waits for the stages: the archive's SHA-256 and size, or the write error.
    func finish() -> Swift.Result<(sha256: String, size: Int64), Errno> {
        handOver()
        toHash.finish()
        stages.wait()
        if let failure { return .failure(failure) }
        return .success((hasher.finalize().hexString, written))
    }

    /// Stops the stages without waiting for the rest (the archive failed anyway).
    func abandon() {
        cancelAll()
        stages.wait()
    }

    private func cancelAll() {
        free.cancel()
        toHash.cancel()
        toWrite.cancel()
    }

    /// The hashing thread: hashes full buffers in order and passes them to the writer.
    private func hashStage() {
        defer {
            toWrite.finish()
            stages.leave()
        }
        while let (number, count) = try? toHash.receive() {
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffers.all[number][0..<count]))
            toWrite.offer((number, count))
        }
    }

    /// The writing thread: writes hashed buffers in order and gives them back to be filled again.
    private func writeStage() {
        defer { stages.leave() }
        var direct = Self.setDirect(fd, true)
        while let (number, count) = try? toWrite.receive() {
            let buffer = buffers.all[number]
            if direct && count % Self.directAlignment != 0 { direct = !Self.setDirect(fd, false) }
            var offset = 0
            while offset < count {
                do {
                    let bytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<count])
                    offset += try fd.write(bytes, retryOnInterrupt: true)
                } catch Errno.invalidArgument where direct && Self.setDirect(fd, false) {
                    direct = false  // took O_DIRECT but not this write: buffered from now on
                } catch {
                    lock.withLock { writeFailure = (error as? Errno) ?? .ioError }
                    cancelAll()
                    return
                }
            }
            written += Int64(count)
            free.offer(number)
        }
    }

    /// Turns `O_DIRECT` on or off for `fd`; whether that worked (tmpfs refuses it, and writes stay
    /// buffered there).
    private static func setDirect(_ fd: FileDescriptor, _ on: Bool) -> Bool {
        let flags = fcntl(fd.rawValue, F_GETFL)
        guard flags >= 0, oDirect != 0 else { return false }
        return fcntl(fd.rawValue, F_SETFL, on ? flags | oDirect : flags & ~oDirect) == 0
    }
}

/// A pax tar writer over libarchive, valid only inside ``withArchiveWriter(to:options:binaryNames:_:)``.
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
    BlockingIO.checkOffPool("ArchiveWriter.withArchiveWriter")
    return try withUTF8Locale { try openArchiveWriter(to: fd, options: options, binaryNames: binaryNames, body) }
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

    try configureArchiveWriter(archive, options: options, binaryNames: binaryNames)
    try openArchiveOutput(archive, into: sink)
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

/// Sets the pax format, compression and block sizes; throws `.archive` when refused, `.invalidOption` when unusable.
private func configureArchiveWriter(_ archive: OpaquePointer, options: PackBuildOptions, binaryNames: Bool) throws {
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
    case .lzfse, .lzma, .zlib: try options.validate()  // Apple Archive only: says so
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

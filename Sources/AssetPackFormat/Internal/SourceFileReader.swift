import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Reads and hashes the source files a pack is built from (the asset folder's, not a pack's), in order, on a
/// thread of its own, so that the thread building the archive only compresses: packing has three stages
/// (read and hash the input; compress; hash and write the output) and the machine two cores, and with the
/// first two on one thread that thread was the whole wall time while the writer's core idled.
///
/// Files are read into buffers of 256 KiB to 1 MiB by their total size, small files several to a buffer
/// (the first buffers go part full, so that the consumer starts early); four buffers circulate, so at most
/// four buffers are read ahead. The consumer takes each file's bytes with ``read(_:_:)``, in the listed
/// order.
///
/// Asked to, the same thread also cuts the large files into content-defined chunks (``ContentChunker``) as it
/// reads them: a server keeps those for deltas, and taking them here costs no second read of the archive.
final class SourceFileReader: @unchecked Sendable {
    /// A run of one file's bytes in a buffer; `digest` is set on the run that ends the file (possibly empty),
    /// with the file's chunks when it was chunked.
    private struct Run {
        var file: Int
        var range: Range<Int>
        var digest: SHA256.Digest?
        var chunks: [ContentChunker.Chunk]? = nil
    }

    /// What one buffer holds: runs of files in order, then possibly the error that stopped the reading.
    private struct Batch {
        var runs: [Run]
        var failure: (any Error)?
    }

    /// A buffer with less room than this goes to the consumer rather than take a short read.
    private static let minimumRoom = 64 << 10

    private let files: [PackFile]
    /// Files of at least this size are chunked; `nil`: none.
    private let chunkFrom: Int64?
    /// Four buffers of 256 KiB to 1 MiB, by the files' total size (``AlignedBuffers/size(forJobOf:largest:)``).
    private let buffers: AlignedBuffers
    /// Buffers go round by their number in `buffers`: free, then full of runs for the consumer.
    private let free: BlockingQueue<Int>
    private let full = BlockingQueue<(buffer: Int, batch: Batch)>()
    private let done = DispatchSemaphore(value: 0)

    // Only the consumer touches these.
    private var batch: (buffer: Int, runs: [Run], failure: (any Error)?, next: Int)?
    private var stopped = false
    /// The chunks of the file ``read(_:_:)`` last finished, when it was chunked.
    private(set) var lastChunks: [ContentChunker.Chunk]?

    /// Starts reading `files` ahead on a thread of its own; files of at least `chunkFrom` bytes are also cut
    /// into chunks.
    init(_ files: [PackFile], chunkFrom: Int64? = nil) {
        self.files = files
        self.chunkFrom = chunkFrom
        let size = AlignedBuffers.size(forJobOf: files.reduce(0) { $0 + $1.size })
        buffers = AlignedBuffers(count: 4, size: size)
        free = BlockingQueue(holding: Array(buffers.all.indices))
        BlockingIO.startLongJob { [self] in produce() }
    }

    /// Hands file number `index` (the next one in order) to `body`, a run at a time, each valid during its
    /// call only.
    /// - Returns: The file's SHA-256.
    /// - Throws: What opening or reading the file threw (``AssetPackFormatError``), or what `body` threw.
    func read(_ index: Int, _ body: (UnsafeRawBufferPointer) throws -> Void) throws -> SHA256.Digest {
        while true {
            if batch == nil {
                try BlockingIO.checkCancellation()  // a build whose caller gave up stops within a buffer
                guard let (buffer, received) = try full.receive() else {
                    throw AssetPackFormatError(code: .io, message: "the file reader stopped early")
                }
                batch = (buffer, received.runs, received.failure, 0)
            }
            guard var current = batch else { continue }
            if current.next == current.runs.count {
                free.offer(current.buffer)
                batch = nil
                if let failure = current.failure { throw failure }
                continue
            }
            let run = current.runs[current.next]
            precondition(run.file == index, "files must be read in the listed order")
            current.next += 1
            batch = current
            if !run.range.isEmpty { try body(UnsafeRawBufferPointer(rebasing: buffers.all[current.buffer][run.range])) }
            if let digest = run.digest {
                lastChunks = run.chunks
                return digest
            }
        }
    }

    /// Stops the reading thread and waits for it; call once, when done or failed.
    func stop() {
        guard !stopped else { return }
        stopped = true
        if let current = batch { free.offer(current.buffer) }
        batch = nil
        free.cancel()
        full.cancel()
        done.wait()
    }

    /// The reading thread: fills buffers with the files' bytes in order, hashing them on the way.
    private func produce() {
        defer { done.signal() }
        var index = 0
        var open: FileDescriptor?
        var hasher = SHA256()
        var chunker: ContentChunker?
        var chunks: [ContentChunker.Chunk] = []
        defer { try? open?.close() }
        // How full a buffer gets before it goes: 64 KiB for the first, twice as much for each next one, up to
        // the whole buffer. The consumer starts after a few small files rather than after 1 MiB of them (at
        // 1 000 files of 1-4 KiB, the compressor had waited for 40% of the reading).
        var fill = Self.minimumRoom
        while index < files.count {
            guard let number = try? free.receive() else { return }
            let buffer = buffers.all[number]
            var used = 0
            var runs: [Run] = []
            var failure: (any Error)?
            while index < files.count, (used < fill && buffer.count - used >= Self.minimumRoom) || runs.isEmpty {
                let file = files[index]
                do {
                    let fd: FileDescriptor
                    if let open {
                        fd = open
                    } else {
                        fd = try Self.openListed(file)
                        open = fd
                        hasher = SHA256()
                        chunker = chunkFrom.map { file.size >= $0 } == true ? ContentChunker() : nil
                        chunks = []
                        if file.size > buffer.count { fd.advise(.sequential) }
                    }
                    let room = UnsafeMutableRawBufferPointer(rebasing: buffer[used...])
                    let count: Int
                    do {
                        count = try fd.read(into: room, retryOnInterrupt: true)
                    } catch let errno as Errno {
                        throw AssetPackFormatError.io("read", file.source, errno)
                    }
                    if count > 0 {
                        let bytes = UnsafeRawBufferPointer(rebasing: room[0..<count])
                        hasher.update(bufferPointer: bytes)
                        chunks += chunker?.feed(bytes) ?? []  // in place: its tail is not copied
                        runs.append(Run(file: index, range: used..<used + count, digest: nil))
                        used += count
                    } else {
                        try? fd.close()
                        open = nil
                        let finished = (chunker?.finish()).map { chunks + $0 }  // nil: not chunked
                        runs.append(Run(file: index, range: used..<used, digest: hasher.finalize(), chunks: finished))
                        (chunker, chunks) = (nil, [])
                        index += 1
                    }
                } catch {
                    failure = error
                    break
                }
            }
            full.offer((number, Batch(runs: runs, failure: failure)))
            fill = min(2 * fill, buffer.count)
            if failure != nil { break }
        }
        full.finish()
    }

    /// Opens a listed file for packing and makes sure it is the file that was listed: the last component is
    /// not followed (`O_NOFOLLOW`), and the descriptor's device and inode are the listed ones, so that what is
    /// read is the listed file whatever happened on its way since (a check and a later open cannot be played
    /// against each other). A folder on the way swapped for a symlink can lead only to that very file (moved,
    /// then linked back); anything else is refused, and the message says where the path led (the kernel's path
    /// of the descriptor, from `/proc/self/fd`, read only then: read for every file, it was a `readlink` per
    /// file that the inode check makes redundant).
    static func openListed(_ file: PackFile) throws -> FileDescriptor {
        let source = file.source
        let raw = source.withPlatformString { open($0, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        guard raw >= 0 else {
            let failure = Errno(rawValue: errno)
            if failure == .tooManySymbolicLinkLevels {
                throw AssetPackFormatError(
                    code: .unsafePath,
                    message: "\(source) became a symlink after it was listed; refused. Fix: pack again"
                )
            }
            throw AssetPackFormatError.io("open", source, failure)
        }
        let fd = FileDescriptor(rawValue: raw)
        // The listed file (device and inode) is what was opened, or nothing is read: a folder on the way swapped
        // for a symlink since the listing can lead only to the very file listed, whose bytes are the listed ones.
        var info = stat()
        guard fstat(raw, &info) == 0, UInt64(info.st_ino) == file.inode, UInt64(info.st_dev) == file.device else {
            let opened = Self.path(of: raw)
            try? fd.close()
            if let opened, opened != source.string {
                throw AssetPackFormatError(
                    code: .unsafePath,
                    message:
                        "\(source) now leads to \(opened) (a folder on its way was replaced by a symlink after the "
                        + "listing); refused. Fix: pack again"
                )
            }
            throw AssetPackFormatError(
                code: .changedWhilePacking,
                message:
                    "\(source) was replaced while it was being packed. Fix: pack again when nothing writes to it"
            )
        }
        return fd
    }

    /// The path the kernel has for an open file (`/proc/self/fd`), for a message; `nil` where there is none.
    private static func path(of raw: Int32) -> String? {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(PATH_MAX) + 1) { link in
            let count = readlink("/proc/self/fd/\(raw)", link.baseAddress!, link.count - 1)
            guard count >= 0 else { return nil }
            return String(decoding: UnsafeRawBufferPointer(start: link.baseAddress, count: count), as: UTF8.self)
        }
    }
}

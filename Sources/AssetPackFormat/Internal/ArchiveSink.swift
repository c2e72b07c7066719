import Crypto
import Foundation
import SystemPackage

/// Receives the bytes of an archive as they are produced and passes them through stages of their own: for a
/// tar of zstd on one thread, a thread that compresses them (``ZstdStream``); then a thread that hashes them
/// (so the archive's digest costs no second pass) and a thread that writes them, so that none holds up the
/// thread that produces the archive. (Packing 1 GiB of incompressible files with the hash and the write on
/// one thread, that thread set the pace: it waited for the disk between hashes. Packing 1 000 files of
/// 1-16 KiB with zstd inside libarchive's thread, that thread set the pace: zstd, the tar's headers and the
/// copies took turns on it while the other core waited.)
///
/// Output bytes are gathered into buffers of up to 1 MiB, sized by the job
/// (``AlignedBuffers/size(forJobOf:largest:)``); four of them circulate, so at most 4 MiB wait. Full buffers
/// are written with `O_DIRECT` where the file system takes it: straight to the disk, once, rather than
/// copied into fresh page cache and flushed again by the `fsync` that ends the build. (1 GiB: the writes took
/// 1.8 s of the build's 2 s through the page cache; the whole build now takes about 1.1 s.) The tar's bytes
/// reach the compressing thread in four buffers of 256 KiB, so that it starts early.
final class ArchiveSink: @unchecked Sendable {
    private static let directAlignment = 4096
    private static let oDirect = FileDescriptor.directFlag

    /// Buffers go round by their number: free, then filled (with a count) to be compressed or hashed, then
    /// hashed to be written, then free again.
    private let output: Lane
    private let toWrite = BlockingQueue<Filled>()
    /// The tar's bytes before zstd, when this sink compresses: their own buffers, for zstd's stage.
    private let tar: Lane?
    private let stages = DispatchGroup()
    private let lock = NSLock()
    private var firstFailure: AssetPackFormatError?  // guarded by `lock`

    /// Only the producer (libarchive's callback, or the Apple Archive writer) touches it.
    private var input: Filler

    // Only the hashing thread, and only the writing thread, touches each until `stages` is done.
    private var hasher = SHA256()
    private var written: Int64 = 0
    private let fd: FileDescriptor

    /// - Parameters:
    ///   - zstd: Compresses what is written before it is hashed and written (one zstd frame); `nil` to pass
    ///     the bytes on as they are.
    ///   - expected: About how many bytes will be written, to size the buffers.
    init(fd: FileDescriptor, zstd: ZstdStream? = nil, expected: Int64 = .max) {
        self.fd = fd
        output = Lane(count: 4, size: AlignedBuffers.size(forJobOf: expected))
        tar = zstd.map { _ in Lane(count: 4, size: AlignedBuffers.size(forJobOf: expected, largest: 256 << 10)) }
        input = Filler(tar ?? output)
        stages.enter()
        stages.enter()
        BlockingIO.startLongJob { [self] in hashStage() }
        BlockingIO.startLongJob { [self] in writeStage() }
        if let zstd, let tar {
            stages.enter()
            BlockingIO.startLongJob { [self] in compressStage(zstd, from: tar) }
        }
    }

    /// The first failure of a stage (a write, or zstd), once one failed.
    var failure: AssetPackFormatError? { lock.withLock { firstFailure } }

    /// Takes the bytes, or returns -1 once a stage has failed (libarchive's write callback).
    func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        var offset = 0
        while offset < bytes.count {
            guard let room = input.room() else { return -1 }
            let count = min(bytes.count - offset, room.count)
            UnsafeMutableRawBufferPointer(rebasing: room[0..<count])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            input.advance(count)
            offset += count
        }
        return bytes.count
    }

    /// Flushes what is left and waits for the stages: the archive's SHA-256 and size, or the first failure.
    func finish() -> Swift.Result<(sha256: String, size: Int64), AssetPackFormatError> {
        input.handOver()
        input.lane.next.finish()
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
        for lane in [output, tar].compactMap({ $0 }) {
            lane.free.cancel()
            lane.next.cancel()
        }
        toWrite.cancel()
    }

    private func fail(_ error: AssetPackFormatError) {
        lock.withLock { firstFailure = firstFailure ?? error }
        cancelAll()
    }

    /// The compressing thread: one zstd frame over the tar's buffers, in order, into output buffers.
    private func compressStage(_ zstd: ZstdStream, from tar: Lane) {
        defer {
            output.next.finish()
            stages.leave()
        }
        var compressed = Filler(output)
        do {
            while let (number, count) = try tar.next.receive() {
                var rest = UnsafeRawBufferPointer(rebasing: tar.buffers.all[number][0..<count])
                while !rest.isEmpty {
                    guard let room = compressed.room() else { return }
                    let (read, wrote) = try zstd.compress(rest, into: room)
                    rest = UnsafeRawBufferPointer(rebasing: rest[read...])
                    compressed.advance(wrote)
                }
                _ = tar.free.offer(number)
            }
            var done = false
            while !done {
                guard let room = compressed.room() else { return }  // stopped: the frame is not needed
                let wrote: Int
                (wrote, done) = try zstd.end(into: room)
                compressed.advance(wrote)
            }
            compressed.handOver()
        } catch {
            fail(error as? AssetPackFormatError ?? AssetPackFormatError(code: .archive, message: "\(error)"))
        }
    }

    /// The hashing thread: hashes full buffers in order and passes them to the writer.
    private func hashStage() {
        defer {
            toWrite.finish()
            stages.leave()
        }
        while let (number, count) = try? output.next.receive() {
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: output.buffers.all[number][0..<count]))
            _ = toWrite.offer((number, count))
        }
    }

    /// The writing thread: writes hashed buffers in order and gives them back to be filled again.
    private func writeStage() {
        defer { stages.leave() }
        var direct = Self.setDirect(fd, true)
        while let (number, count) = try? toWrite.receive() {
            let buffer = output.buffers.all[number]
            if direct && count % Self.directAlignment != 0 { direct = !Self.setDirect(fd, false) }
            var offset = 0
            while offset < count {
                do {
                    let bytes = UnsafeRawBufferPointer(rebasing: buffer[offset..<count])
                    offset += try fd.write(bytes, retryOnInterrupt: true)
                } catch Errno.invalidArgument where direct && Self.setDirect(fd, false) {
                    direct = false  // took O_DIRECT but not this write: buffered from now on
                } catch {
                    let errno = (error as? Errno) ?? .ioError
                    fail(AssetPackFormatError(code: .io, message: "cannot write the pack: \(errno)", cause: errno))
                    return
                }
            }
            written += Int64(count)
            _ = output.free.offer(number)
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

/// A buffer's number and how many of its bytes are filled.
private typealias Filled = (buffer: Int, count: Int)

/// Buffers of one size that circulate: a pool of free ones, and the queue that full ones go to.
private struct Lane {
    let buffers: AlignedBuffers
    let free: BlockingQueue<Int>
    let next = BlockingQueue<Filled>()

    init(count: Int, size: Int) {
        buffers = AlignedBuffers(count: count, size: size)
        free = BlockingQueue(holding: Array(0..<count))
    }
}

/// Fills a lane's buffers in turn, handing each on when it is full: used by one thread.
private struct Filler {
    let lane: Lane
    private var current: Int?
    private var filled = 0

    init(_ lane: Lane) { self.lane = lane }

    /// The unfilled part of the buffer being filled (a free one taken first); `nil` once the lane stopped.
    mutating func room() -> UnsafeMutableRawBufferPointer? {
        if current == nil {
            guard let number = try? lane.free.receive() else { return nil }
            current = number
            filled = 0
        }
        guard let number = current else { return nil }
        return UnsafeMutableRawBufferPointer(rebasing: lane.buffers.all[number][filled...])
    }

    /// Counts `count` more bytes of the buffer as filled, and hands it on once full.
    mutating func advance(_ count: Int) {
        guard let number = current else { return }
        filled += count
        if filled == lane.buffers.all[number].count { handOver() }
    }

    /// Hands the buffer being filled on as it is.
    mutating func handOver() {
        guard let number = current else { return }
        current = nil
        _ = lane.next.offer((number, filled))
    }
}

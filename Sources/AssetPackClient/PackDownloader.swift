import AssetPackFormat
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization
import SystemPackage

/// Progress of one download, in bytes.
public struct DownloadProgress: Sendable, Hashable {
    /// Bytes on disk so far (resumed bytes included).
    public var completed: Int64
    /// The archive's size.
    public var total: Int64
}

/// Streams a pack archive into `.ba-sync/downloads/<id>.partial` while hashing it, resuming with `Range` and
/// `If-Range` after a cut (within a run and in a later one), and checks size and digest against the manifest.
struct PackDownloader: Sendable {
    let client: HTTPClient
    let store: AppGroupStore
    /// How failures are retried; each retry resumes from the bytes already on disk.
    let policy: RetryPolicy
    /// The deadline of one request, body included.
    let timeout: TimeAmount
    /// How long a download may go without a byte before it counts as stalled and is resumed.
    let stallTimeout: Duration

    /// What a partial file was downloading, so that a later run never splices two versions.
    private struct PartialInfo: Codable {
        var sha256: String
        var downloadSize: Int64
        var url: String
    }

    func partialFile(_ pack: AssetPack) -> FilePath { store.downloadsFolder.appending("\(pack.id).partial") }
    private func infoFile(_ pack: AssetPack) -> FilePath { store.downloadsFolder.appending("\(pack.id).partial.json") }

    /// Downloads `pack` and returns the verified archive (the partial file, complete).
    /// - Parameters:
    ///   - progress: Called as bytes arrive.
    ///   - paused: Called when a connection broke and the download is about to resume from what is on disk.
    func download(
        _ pack: AssetPack,
        progress: @escaping @Sendable (DownloadProgress) -> Void,
        paused: @Sendable () -> Void = {}
    ) async throws -> FilePath {
        let path = partialFile(pack)
        var failures = 0
        var mismatches = 0
        while true {
            try preparePartial(pack)
            do {
                let digest = try await fetch(pack, into: path, progress: progress)
                return try verify(pack, path, digest: digest)
            } catch let error as AssetPackClientError {
                if error.code == .sizeMismatch || error.code == .digestMismatch {
                    mismatches += 1
                } else {
                    failures += 1
                }
                switch policy.decide(error, failures: failures, mismatches: mismatches) {
                case .fail:
                    if error.code == .sizeMismatch || error.code == .digestMismatch || error.code == .httpStatus
                        || (error.cause as? Errno) == .noSpace
                    {
                        discard(pack)
                    }
                    var final = error
                    if failures + mismatches > 1 { final.message += " (after \(failures + mismatches) attempts)" }
                    throw final
                case .refetch:
                    discard(pack)  // the bytes are bad: start over
                    paused()
                case .retry(let delay):
                    paused()
                    try await Task.sleep(for: delay)
                }
            }
        }
    }

    /// Keeps a partial file only if it is of this very archive.
    private func preparePartial(_ pack: AssetPack) throws {
        if !partialInfoMatches(pack) {
            discard(pack)
            let data = try JSONEncoder().encode(
                PartialInfo(sha256: pack.sha256, downloadSize: pack.downloadSize, url: pack.url.absoluteString)
            )
            do {
                try AtomicFile.write(data, to: infoFile(pack))
            } catch let error as AssetPackFormatError {
                throw AssetPackClientError(code: .io, message: error.message, assetPackID: pack.id, cause: error)
            }
        }
    }

    /// Whether a partial download of this very archive is on disk, left by an earlier run.
    func hasPartial(of pack: AssetPack) -> Bool {
        var status = stat()
        return partialInfoMatches(pack) && stat(partialFile(pack).string, &status) == 0 && status.st_size > 0
    }

    /// Whether the partial file's description names this very archive (digest and size).
    private func partialInfoMatches(_ pack: AssetPack) -> Bool {
        let info = try? JSONDecoder().decode(
            PartialInfo.self,
            from: Data(contentsOf: URL(fileURLWithPath: infoFile(pack).string))
        )
        return info?.sha256 == pack.sha256 && info?.downloadSize == pack.downloadSize
    }

    /// Removes a partial download and its description.
    func discard(_ pack: AssetPack) {
        _ = unlink(partialFile(pack).string)
        _ = unlink(infoFile(pack).string)
    }

    /// Fetches what is missing of the archive into `path`, hashing as the bytes arrive (a resumed download
    /// first hashes the bytes already on disk), and returns the whole file's SHA-256.
    private func fetch(_ pack: AssetPack, into path: FilePath, progress: @escaping @Sendable (DownloadProgress) -> Void)
        async throws -> String
    {
        let fd: SystemPackage.FileDescriptor
        do {
            fd = try SystemPackage.FileDescriptor.open(
                path,
                .readWrite,
                options: [.create],
                permissions: [.ownerReadWrite, .groupRead, .otherRead]
            )
        } catch {
            throw AssetPackClientError.io("open", path, error)
        }
        defer { try? fd.close() }
        var offset = Int64((try? fd.seek(offset: 0, from: .end)) ?? 0)
        if offset > pack.downloadSize {
            _ = ftruncate(fd.rawValue, 0)
            offset = 0
        }
        if offset == pack.downloadSize { return try FileDigest.sha256(of: path) }
        let (response, whole) = try await request(pack, from: offset)
        if whole {
            offset = 0  // the server ignored the range or the pack changed: start over
            _ = ftruncate(fd.rawValue, 0)
        }
        do {
            _ = try fd.seek(offset: offset, from: .start)
        } catch {
            throw AssetPackClientError.io("seek in", path, error)
        }
        progress(DownloadProgress(completed: offset, total: pack.downloadSize))
        let resumed = try hashPrefix(of: fd, length: offset, path: path)
        do {
            return try await receive(pack, response, from: offset, skipping: 0, hasher: resumed, progress: progress) {
                chunk in
                try chunk.withUnsafeReadableBytes { _ = try fd.writeAll($0) }
            }
        } catch let error as Errno {
            if error == .noSpace {
                throw AssetPackClientError(
                    code: .io,
                    message:
                        "no space left on the device holding \(path) while downloading pack \(pack.id); the partial "
                        + "download was removed and what was installed is kept. Fix: free space and run again",
                    assetPackID: pack.id,
                    cause: error
                )
            }
            throw AssetPackClientError.io("write", path, error)
        }
    }

    /// Streams the archive into `feed` (an extraction reading it), hashing as the bytes arrive; transient
    /// failures resume with `Range` from the bytes already handed over, as file downloads do. A server that
    /// answers a resume with the whole body has its first bytes skipped: if the pack changed meanwhile, the
    /// digest says so at the end.
    /// - Throws: ``AssetPackClientError`` (a mismatch is for the caller to refetch, with a new feed), or
    ///   ``ExtractionStopped`` when the extraction gave up.
    func stream(
        _ pack: AssetPack,
        into feed: ByteFeed,
        progress: @escaping @Sendable (DownloadProgress) -> Void,
        paused: @Sendable () -> Void = {}
    ) async throws {
        let received = StreamedBytes()
        var failures = 0
        while true {
            do {
                let (start, hasher) = received.snapshot
                let (response, whole) = try await request(pack, from: start)
                progress(DownloadProgress(completed: start, total: pack.downloadSize))
                let digest = try await receive(
                    pack,
                    response,
                    from: start,
                    skipping: whole ? start : 0,
                    hasher: hasher,
                    progress: progress,
                    received: received
                ) { chunk in try await feed.push(chunk) }
                try check(pack, size: received.snapshot.count, digest: digest)
                return
            } catch let error as AssetPackClientError {
                guard error.code != .sizeMismatch, error.code != .digestMismatch else { throw error }
                failures += 1
                guard case .retry(let delay) = policy.decide(error, failures: failures, mismatches: 0) else {
                    var final = error
                    if failures > 1 { final.message += " (after \(failures) attempts)" }
                    throw final
                }
                paused()
                try await Task.sleep(for: delay)
            }
        }
    }

    /// Asks for the archive from byte `offset` on. Returns the response and whether it is the whole body
    /// (a 200: the server ignored the range, or the pack changed).
    private func request(_ pack: AssetPack, from offset: Int64) async throws -> (HTTPClientResponse, whole: Bool) {
        var request = HTTPClientRequest(url: pack.url.absoluteString)
        if offset > 0 {
            request.headers.add(name: "Range", value: "bytes=\(offset)-")
            request.headers.add(name: "If-Range", value: "\"\(pack.sha256)\"")
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: timeout)
        } catch {
            throw AssetPackClientError(
                code: .network,
                message:
                    "cannot download pack \(pack.id) from \(pack.url): \(error); \(offset) bytes kept to resume",
                assetPackID: pack.id,
                cause: error
            )
        }
        switch response.status.code {
        case 206 where offset > 0:
            let range = response.headers.first(name: "Content-Range") ?? ""
            guard range.hasPrefix("bytes \(offset)-") else {
                throw AssetPackClientError(
                    code: .httpStatus,
                    message: "\(pack.url) answered a resume from byte \(offset) with Content-Range \(range)",
                    assetPackID: pack.id
                )
            }
            return (response, false)
        case 200:
            if let length = response.headers.first(name: "Content-Length").flatMap(Int64.init),
                length != pack.downloadSize
            {
                throw AssetPackClientError(
                    code: .sizeMismatch,
                    message:
                        "\(pack.url) sends \(length) bytes but the manifest says pack \(pack.id) has "
                        + "\(pack.downloadSize); nothing was installed",
                    assetPackID: pack.id
                )
            }
            return (response, true)
        case 404, 410:
            var error = AssetPackClientError(
                code: .httpStatus,
                message:
                    "\(pack.url) answered \(response.status.code): pack \(pack.id) is not there; nothing was installed",
                assetPackID: pack.id
            )
            error.httpStatus = Int(response.status.code)
            throw error
        default:
            var error = AssetPackClientError(
                code: .httpStatus,
                message:
                    "\(pack.url) answered \(response.status.code) \(response.status.reasonPhrase) for pack "
                    + "\(pack.id); \(offset) bytes kept to resume",
                assetPackID: pack.id
            )
            error.httpStatus = Int(response.status.code)
            error.retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
            throw error
        }
    }

    /// Reads a response body to its end into `write`, hashing it, with a stall watchdog; skips its first
    /// `skip` bytes (already received before a resume the server answered in full). Returns the digest of
    /// everything received, `offset` bytes before this body included.
    private func receive(
        _ pack: AssetPack,
        _ response: HTTPClientResponse,
        from offset: Int64,
        skipping skip: Int64,
        hasher resumed: SHA256,
        progress: @escaping @Sendable (DownloadProgress) -> Void,
        received: StreamedBytes? = nil,
        write: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async throws -> String {
        let watch = TransferWatch(written: offset)
        let (body, stallTimeout, total) = (response.body, self.stallTimeout, pack.downloadSize)
        let digest: String?
        do {
            digest = try await withThrowingTaskGroup(of: String?.self) { group in
                group.addTask {
                    var hasher = resumed
                    var skip = skip
                    for try await var chunk in body {
                        if skip > 0 {
                            let dropped = Int(min(skip, Int64(chunk.readableBytes)))
                            chunk.moveReaderIndex(forwardBy: dropped)
                            skip -= Int64(dropped)
                            if chunk.readableBytes == 0 { continue }
                        }
                        let written = watch.written
                        if written + Int64(chunk.readableBytes) > total {
                            throw AssetPackClientError(
                                code: .sizeMismatch,
                                message:
                                    "\(pack.url) sent more than the \(total) bytes the manifest gives pack "
                                    + "\(pack.id); nothing was installed",
                                assetPackID: pack.id
                            )
                        }
                        chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
                        try await write(chunk)
                        watch.advance(by: Int64(chunk.readableBytes))
                        received?.record(hasher, count: watch.written)
                        progress(DownloadProgress(completed: watch.written, total: total))
                    }
                    return hasher.finalize().hexString
                }
                group.addTask {
                    // A stall: no byte for longer than the timeout. The read is cancelled and resumed later.
                    while true {
                        try await Task.sleep(for: stallTimeout / 4)
                        if watch.idle > stallTimeout {
                            throw AssetPackClientError(
                                code: .network,
                                message:
                                    "download of pack \(pack.id) from \(pack.url) stalled for \(stallTimeout) at byte "
                                    + "\(watch.written); kept to resume",
                                assetPackID: pack.id
                            )
                        }
                    }
                }
                let first = try await group.next()
                group.cancelAll()
                return first ?? nil
            }
        } catch let error as AssetPackClientError {
            throw error
        } catch let error as Errno {
            throw error
        } catch let error as ExtractionStopped {
            throw error
        } catch {
            throw AssetPackClientError(
                code: .network,
                message:
                    "download of pack \(pack.id) from \(pack.url) broke off at byte \(watch.written): \(error); kept to resume",
                assetPackID: pack.id,
                cause: error
            )
        }
        let written = watch.written
        if written < pack.downloadSize {
            throw AssetPackClientError(
                code: .network,
                message:
                    "download of pack \(pack.id) ended at byte \(written) of \(pack.downloadSize); kept to resume",
                assetPackID: pack.id
            )
        }
        guard let digest else {
            throw AssetPackClientError(code: .network, message: "download of pack \(pack.id) ended without a body")
        }
        return digest
    }

    /// The SHA-256 state after the first `length` bytes of a partial file, read in 1 MiB chunks.
    private func hashPrefix(of fd: SystemPackage.FileDescriptor, length: Int64, path: FilePath) throws -> SHA256 {
        var hasher = SHA256()
        guard length > 0 else { return hasher }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            let count: Int
            do {
                count = try fd.read(
                    fromAbsoluteOffset: offset,
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want])
                )
            } catch {
                throw AssetPackClientError.io("read", path, error)
            }
            if count == 0 { break }
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            offset += Int64(count)
        }
        return hasher
    }

    /// Checks the complete file's size and its SHA-256 (computed as it arrived) against the manifest.
    private func verify(_ pack: AssetPack, _ path: FilePath, digest: String) throws -> FilePath {
        let size = (try? FileManager.default.attributesOfItem(atPath: path.string)[.size] as? Int64) ?? -1
        try check(pack, size: size, digest: digest)
        return path
    }

    /// Checks a download's size and SHA-256 against the manifest.
    private func check(_ pack: AssetPack, size: Int64, digest: String) throws {
        guard size == pack.downloadSize else {
            throw AssetPackClientError(
                code: .sizeMismatch,
                message:
                    "pack \(pack.id) from \(pack.url) is \(size) bytes, the manifest says \(pack.downloadSize); nothing was installed",
                assetPackID: pack.id
            )
        }
        guard digest == pack.sha256 else {
            throw AssetPackClientError(
                code: .digestMismatch,
                message:
                    "pack \(pack.id) from \(pack.url) has SHA-256 \(digest.prefix(16))…, the manifest says "
                    + "\(pack.sha256.prefix(16))…; the download was discarded and nothing was installed",
                assetPackID: pack.id
            )
        }
    }
}

/// What a streamed download has handed over so far, across its resumes: a resume continues the hash.
final class StreamedBytes: Sendable {
    private let state = Mutex<(hasher: SHA256, count: Int64)>((SHA256(), 0))

    var snapshot: (count: Int64, hasher: SHA256) {
        state.withLock { ($0.count, $0.hasher) }
    }

    func record(_ hasher: SHA256, count: Int64) {
        state.withLock { $0 = (hasher, count) }
    }
}

/// Thrown into a streamed download when its extraction gave up; the extraction's own error says why.
struct ExtractionStopped: Error, Sendable {}

/// The bytes a transfer has written and when the last ones arrived, shared with its stall watchdog.
private final class TransferWatch: Sendable {
    private let total: Atomic<Int64>
    private let lastProgress: Atomic<Int64>

    init(written: Int64) {
        total = Atomic(written)
        lastProgress = Atomic(Self.now())
    }

    var written: Int64 { total.load(ordering: .relaxed) }

    /// Time since the last bytes.
    var idle: Duration { .nanoseconds(Self.now() - lastProgress.load(ordering: .relaxed)) }

    func advance(by count: Int64) {
        total.add(count, ordering: .relaxed)
        lastProgress.store(Self.now(), ordering: .relaxed)
    }

    private static func now() -> Int64 {
        let elapsed = ContinuousClock.now - Self.origin
        return elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
    }

    private static let origin = ContinuousClock.now
}

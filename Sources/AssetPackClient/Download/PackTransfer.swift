import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Synchronization

/// One request for a pack archive: asks for it from a byte offset (`Range` and `If-Range`, so that a resume
/// never splices two versions), checks the answer's status, and streams the body out with a stall watchdog,
/// never past the manifest's size. Retrying is the caller's (``RetryPolicy``).
struct PackTransfer: Sendable {
    let client: HTTPClient
    /// The deadline of one request, body included.
    let timeout: Duration
    /// How long a download may go without a byte, or below ``minimumRate``, before it counts as stalled.
    let stallTimeout: Duration
    /// The slowest a download may be over a whole ``stallTimeout`` before it counts as stalled: a server
    /// that drips a byte now and then never leaves the transfer idle, but never finishes it either.
    static let minimumRate = 1024  // bytes per second

    /// Streams the archive of `pack` from byte `offset` to its end into `push`.
    ///
    /// A server that answers with the whole body (it ignored the range, or the pack changed) has the first
    /// `offset` bytes skipped: if the pack changed, the digest says so at the end.
    /// - Parameters:
    ///   - offset: The bytes already received.
    ///   - progress: Called as bytes arrive, with the total received so far.
    ///   - push: Takes each chunk, in order.
    /// - Throws: ``AssetPackClientError`` (`.network`, `.httpStatus`, `.sizeMismatch`), or what `push` throws.
    /// - Parameter validator: What identifies the archive for `If-Range`: the manifest's digest when it has
    ///   one, else the first response's strong `ETag` or `Last-Modified` (kept here for the resumes).
    func fetch(
        _ pack: AssetPack,
        from offset: Int64,
        validator: Validator,
        progress: @escaping @Sendable (DownloadProgress) -> Void,
        push: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        let (response, whole) = try await request(pack, from: offset, validator: validator.value(for: pack))
        if whole { validator.record(response) }
        progress(DownloadProgress(completed: offset, total: pack.downloadSize))
        let written = try await receive(
            pack,
            response,
            from: offset,
            skipping: whole ? offset : 0,
            progress: progress,
            push: push
        )
        if written < pack.downloadSize {
            throw AssetPackClientError.network(
                "download of pack \(pack.id) ended at byte \(written) of \(pack.downloadSize)",
                reason: "ended at byte \(written) of \(pack.downloadSize)",
                pack: pack
            )
        }
    }

    /// Asks for the archive from byte `offset` on. Returns the response and whether it is the whole body
    /// (a 200: the server ignored the range, or the pack changed).
    private func request(_ pack: AssetPack, from offset: Int64, validator: String?) async throws -> (
        HTTPClientResponse, whole: Bool
    ) {
        var request = HTTPClientRequest(url: pack.url.absoluteString)
        // A resume needs a validator, so that a server whose pack changed sends it whole instead of the rest of
        // another version; without one, the whole pack is asked for again (and the first bytes skipped).
        if offset > 0, let validator {
            request.headers.add(name: "Range", value: "bytes=\(offset)-")
            request.headers.add(name: "If-Range", value: validator)
        }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: TimeAmount(timeout))
        } catch {
            let connect = AssetPackClientError.isConnectFailure(error)
            // A system error in its own words ("Connection refused"), not as NIO renders it.
            let text = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            var failure = AssetPackClientError.network(
                "cannot download pack \(pack.id) from \(pack.url) (at byte \(offset)): \(text)",
                reason: connect ? "cannot connect" : "request failed",
                pack: pack,
                cause: error
            )
            // A download under way keeps its retries; one that cannot even start fails at once.
            failure.retryable = offset > 0 || !connect
            throw failure
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
                    + "\(pack.id) (after byte \(offset))",
                assetPackID: pack.id
            )
            error.httpStatus = Int(response.status.code)
            error.retryAfter = Backoff.retryAfter(response.headers.first(name: "Retry-After"))
            throw error
        }
    }

    /// Reads a response body to its end into `push`, with a stall watchdog; skips its first `skip` bytes
    /// (received before a resume the server answered in full). Returns the bytes received in all, the
    /// `offset` before this body included.
    private func receive(
        _ pack: AssetPack,
        _ response: HTTPClientResponse,
        from offset: Int64,
        skipping skip: Int64,
        progress: @escaping @Sendable (DownloadProgress) -> Void,
        push: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async throws -> Int64 {
        let watch = TransferWatch(written: offset)
        let (body, stallTimeout, total) = (response.body, self.stallTimeout, pack.downloadSize)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await Self.pushBody(
                        body,
                        of: pack,
                        skipping: skip,
                        total: total,
                        watch: watch,
                        progress: progress,
                        push: push
                    )
                }
                group.addTask {
                    try await Self.watchForStall(of: pack, watch: watch, stallTimeout: stallTimeout)
                }
                try await group.next()
                group.cancelAll()
            }
        } catch let error as AssetPackClientError {
            throw error
        } catch let error as ConsumerStopped {
            throw error
        } catch let error as CancellationError {
            throw error
        } catch {
            throw AssetPackClientError.network(
                "download of pack \(pack.id) from \(pack.url) broke off at byte \(watch.written): \(error)",
                reason: "connection broke at byte \(watch.written)",
                pack: pack,
                cause: error
            )
        }
        return watch.written
    }

    /// Pushes the body on past its first `skip` bytes; throws `.sizeMismatch` past `total`, or what `push` throws.
    private static func pushBody(
        _ body: HTTPClientResponse.Body,
        of pack: AssetPack,
        skipping skip: Int64,
        total: Int64,
        watch: TransferWatch,
        progress: @escaping @Sendable (DownloadProgress) -> Void,
        push: @escaping @Sendable (ByteBuffer) async throws -> Void
    ) async throws {
        var skip = skip
        for try await var chunk in body {
            if skip > 0 {
                let dropped = Int(min(skip, Int64(chunk.readableBytes)))
                chunk.moveReaderIndex(forwardBy: dropped)
                skip -= Int64(dropped)
                if chunk.readableBytes == 0 { continue }
            }
            // Compared without adding: a byte count near Int64.max cannot overflow.
            guard Int64(chunk.readableBytes) <= total - watch.written else {
                throw AssetPackClientError(
                    code: .sizeMismatch,
                    message:
                        "\(pack.url) sent more than the \(total) bytes the manifest gives pack "
                        + "\(pack.id); nothing was installed",
                    assetPackID: pack.id
                )
            }
            try await push(chunk)
            watch.advance(by: Int64(chunk.readableBytes))
            progress(DownloadProgress(completed: watch.written, total: total))
        }
    }

    /// Checks the transfer four times per `stallTimeout`; throws `.network` once it stalls or runs too slow.
    private static func watchForStall(of pack: AssetPack, watch: TransferWatch, stallTimeout: Duration) async throws {
        // A stall: no byte for longer than the timeout, or less than the minimum rate over a whole
        // timeout. The read is cancelled and resumed later.
        let clock = ContinuousClock()
        var window = (start: clock.now, written: watch.written)
        let least = Int64(Double(Self.minimumRate) * stallTimeout.inSeconds)
        while true {
            try await Task.sleep(for: stallTimeout / 4)
            if watch.idle > stallTimeout {
                throw AssetPackClientError.network(
                    "download of pack \(pack.id) from \(pack.url) stalled for \(stallTimeout) at byte "
                        + "\(watch.written)",
                    reason: "stalled for \(stallTimeout) at byte \(watch.written)",
                    pack: pack
                )
            }
            if clock.now - window.start >= stallTimeout {
                if watch.written - window.written < least {
                    throw AssetPackClientError.network(
                        "download of pack \(pack.id) from \(pack.url) ran slower than "
                            + "\(Self.minimumRate) bytes/s for \(stallTimeout) at byte \(watch.written)",
                        reason: "slower than \(Self.minimumRate) bytes/s at byte \(watch.written)",
                        pack: pack
                    )
                }
                window = (clock.now, watch.written)
            }
        }
    }
}

/// What a download's resumes send in `If-Range`: the manifest's digest as an entity tag when it has one
/// (ba-mock's `ETag` is the digest), else what the first response said.
final class Validator: Sendable {
    private let recorded = Mutex<String?>(nil)

    func value(for pack: AssetPack) -> String? {
        pack.sha256.map { "\"\($0)\"" } ?? recorded.withLock { $0 }
    }

    func record(_ response: HTTPClientResponse) {
        if let etag = response.headers.first(name: "ETag"), etag.hasPrefix("\"") {
            recorded.withLock { $0 = etag }
        } else if let date = response.headers.first(name: "Last-Modified") {
            recorded.withLock { $0 = date }
        }
    }
}

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

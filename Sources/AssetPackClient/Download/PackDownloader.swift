import AssetPackFormat
import Foundation
import SystemPackage

/// What a download tells its watcher.
struct DownloadEvents: Sendable {
    /// The download begins (after the choice of a delta or the whole archive).
    var began: @Sendable () -> Void = {}
    /// Bytes arrived.
    var progress: @Sendable (DownloadProgress) -> Void
    /// A connection broke, or the bytes were bad: the download is about to resume, or start over.
    var paused: @Sendable (RetryNotice) -> Void
    /// The download goes on after a pause (the network is back).
    var resumed: @Sendable () -> Void = {}
    /// A request goes on from a byte offset.
    var resuming: @Sendable (Int64) -> Void
    /// An update goes through a delta archive.
    var delta: @Sendable (DeltaNotice) -> Void = { _ in }
    /// The delta failed (why, in a few words): the whole archive follows.
    var deltaFailed: @Sendable (String) -> Void = { _ in }
}

/// Downloads pack archives: one retry loop (``RetryPolicy/run(_:onRetry:)``) around ``PackTransfer`` requests
/// that feed a ``TransferConsumer``. A transient failure resumes into the same consumer with a range; a
/// size, digest or archive failure discards the consumer and starts over with a new one; the end checks
/// size and SHA-256 against the manifest.
struct PackDownloader: Sendable {
    let transfer: PackTransfer
    let policy: RetryPolicy
    /// The device played: its network can be away, or drop in the middle.
    var device = SimulatedDevice(DeviceConditions())

    /// Downloads `pack` through consumers made by `start`.
    /// - Parameters:
    ///   - start: Makes a consumer for a clean attempt (resuming from what its destination holds).
    ///   - end: Disposes of a consumer that will not be used again, with the error that ended it: stop it
    ///     and remove or keep what it wrote.
    /// - Returns: The product of the consumer that received every byte, once size and digest match.
    /// - Throws: ``AssetPackClientError`` (after the policy's retries), the consumer's error, or
    ///   `CancellationError`.
    func download<Product: Sendable>(
        _ pack: AssetPack,
        events: DownloadEvents,
        start: () async throws -> TransferConsumer<Product>,
        end: (TransferConsumer<Product>, any Error) async -> Void
    ) async throws -> Product {
        var current: TransferConsumer<Product>?
        var paused = false
        var announced: Int64 = 0  // the byte the last "resuming" event named
        let device = self.device
        do {
            return try await policy.run {
                if paused {
                    // A paused download waits for the network, as a device's does, then goes on.
                    try await device.waitForNetwork()
                    paused = false
                    events.resumed()
                } else {
                    try device.requireNetwork(for: "pack \(pack.id) from \(pack.url)", pack: pack.id)
                }
                let consumer: TransferConsumer<Product>
                if let current {
                    consumer = current
                } else {
                    consumer = try await start()
                    current = consumer
                }
                do {
                    // Said once per place: attempts that could not connect do not say it again.
                    if consumer.pushed > 0 && consumer.pushed != announced {
                        events.resuming(consumer.pushed)
                        announced = consumer.pushed
                    }
                    if consumer.pushed < pack.downloadSize {
                        try await transfer.fetch(
                            pack,
                            from: consumer.pushed,
                            validator: consumer.validator,
                            progress: events.progress
                        ) { chunk in
                            try await consumer.push(chunk)
                            try device.received(consumer.pushed, of: pack)
                        }
                    }
                    let outcome = try await consumer.finish()
                    try Self.check(pack, size: outcome.size, digest: outcome.sha256)
                    current = nil
                    return outcome.product
                } catch is ConsumerStopped {
                    let failure = await consumer.failure()
                    current = nil
                    await end(consumer, failure)
                    throw failure
                } catch let error as AssetPackClientError where error.isIntegrityFailure {
                    current = nil
                    await end(consumer, error)
                    throw error
                }
            } onRetry: { notice in
                paused = true
                events.paused(notice)
            }
        } catch {
            if let current { await end(current, error) }
            throw error
        }
    }

    /// Downloads `pack` into its partial file (which a later run resumes) and returns the file, verified.
    /// The partial file is removed when its bytes are bad, the server refuses the pack or the disk is full;
    /// it is kept after a network failure.
    func downloadToFile(_ pack: AssetPack, store: AppGroupStore, events: DownloadEvents) async throws -> FilePath {
        let partial = PartialDownload(store: store, pack: pack)
        return try await download(pack, events: events) {
            let offset = try await BlockingIO.shortCall { try partial.prepare() }
            return TransferConsumer(destination: partial.file, startOffset: offset, hashing: pack.sha256 != nil) {
                reader in
                let fd = try partial.open(keeping: offset)
                defer { try? fd.close() }
                do {
                    if offset > 0 { try reader.resume(hasher: FileDigest.hasher(of: fd, upTo: offset), count: offset) }
                    while true {
                        let block = try reader.next()
                        if block.isEmpty { break }
                        _ = try fd.writeAll(block)
                    }
                } catch let errno as Errno {
                    throw Self.writeFailure(errno, partial: partial)
                }
                return partial.file
            }
        } end: { consumer, error in
            await consumer.stop()
            let client = error as? AssetPackClientError
            if client?.isIntegrityFailure == true || client?.code == .httpStatus
                || AssetPackClientError.isDiskFull(error)
            {
                _ = try? await BlockingIO.shortCall { partial.discard() }
            }
        }
    }

    private static func writeFailure(_ errno: Errno, partial: PartialDownload) -> AssetPackClientError {
        guard errno == .noSpace else { return .io("write", partial.file, errno) }
        var failure = AssetPackClientError(
            code: .io,
            message:
                "no space left on the device holding \(partial.file) while downloading pack \(partial.pack.id); "
                + "the partial download was removed and what was installed is kept. Fix: free space and run again",
            assetPackID: partial.pack.id,
            cause: errno
        )
        failure.saysDiskFull = true
        return failure
    }

    /// Checks a download's size and SHA-256 (`nil` when it was not hashed) against the manifest.
    static func check(_ pack: AssetPack, size: Int64, digest: String?) throws {
        guard size == pack.downloadSize else {
            throw AssetPackClientError(
                code: .sizeMismatch,
                message:
                    "pack \(pack.id) from \(pack.url) is \(size) bytes, the manifest says \(pack.downloadSize); nothing was installed",
                assetPackID: pack.id
            )
        }
        // Without a digest in the manifest (Apple's shape), every file is still checked against the index.
        guard let expected = pack.sha256, digest != expected else { return }
        let (received, published) = FileDigest.shown(digest ?? "(not computed)", expected, digits: 16)
        throw AssetPackClientError(
            code: .digestMismatch,
            message:
                "pack \(pack.id) from \(pack.url) has SHA-256 \(received)…, the manifest says \(published)…; the "
                + "download was discarded and nothing was installed",
            assetPackID: pack.id
        )
    }
}

import AssetPackFormat
import Crypto
import Foundation
import NIOCore
import Synchronization
import SystemPackage

/// The thread end of a download: takes the bytes the network hands over through a queue, hashes them
/// in order (when there is a digest to check them against) and passes them to its work (an extraction, or a
/// partial file), on a thread of its own, so that neither the hashing nor the file writes run on Swift's
/// cooperative pool.
///
/// At most 8 MiB wait in the queue: a full queue suspends the network side (its reads slow down, TCP pushes
/// back) until the consumer has taken half. If the consumer gives up (a corrupt archive, a full disk), the
/// next push fails at once: nothing is read from the network for a consumer that is gone.
///
/// One consumer lives for one clean attempt at a pack: resumed requests keep feeding it (from ``pushed``);
/// a download that starts over makes a new one.
final class TransferConsumer<Product: Sendable>: Sendable {
    private let feed: BlockingQueue<ByteBuffer>
    private let task: Task<Outcome, any Error>
    private let pushedCount: Atomic<Int64>
    /// What the consumer writes to (a staging folder, a partial file), for whoever disposes of it.
    let destination: FilePath
    /// What the resumes into this consumer send in `If-Range`.
    let validator = Validator()

    /// What the consumer saw: its work's product, the SHA-256 of every byte from 0 (`nil` when it did not
    /// hash them), and their count.
    struct Outcome: Sendable {
        var product: Product
        var sha256: String?
        var size: Int64
    }

    /// Starts the consumer thread.
    /// - Parameters:
    ///   - destination: What the work writes to.
    ///   - startOffset: Bytes the destination already holds (a partial file left by an earlier run); the
    ///     work must hand them to ``HashingReader/resume(hasher:count:)`` first.
    ///   - hashing: Whether to hash the bytes: only when the manifest gives the archive's SHA-256. Without
    ///     one (Apple's shape) the digest would check nothing, and it was a whole SHA-256 pass of its own.
    ///   - work: Reads the bytes through the reader, on the consumer's thread, and returns what it made. Once
    ///     it returns, whatever follows in the feed is read (and hashed: the digest covers every byte);
    ///     zeros (tar pads with zero blocks) but at most `trailingLimit` other bytes: an archive is not
    ///     followed by megabytes of anything else.
    init(
        destination: FilePath,
        startOffset: Int64 = 0,
        trailingLimit: Int64 = 1 << 20,
        hashing: Bool,
        work: @escaping @Sendable (HashingReader) throws -> Product
    ) {
        let feed = BlockingQueue<ByteBuffer>(capacity: 8 << 20, cost: { $0.readableBytes })
        self.feed = feed
        self.destination = destination
        self.pushedCount = Atomic(startOffset)
        self.task = Task {
            try await BlockingIO.longJob {
                let reader = HashingReader(feed, hashing: hashing)
                do {
                    let product = try work(reader)
                    let end = reader.count
                    var trailing: Int64 = 0
                    while true {
                        let block = try reader.next()
                        if block.isEmpty { break }
                        if !block.allSatisfy({ $0 == 0 }) { trailing += Int64(block.count) }
                        guard trailing <= trailingLimit else {
                            throw AssetPackClientError(
                                code: .corruptPack,
                                message:
                                    "the download goes on for more than \(ByteFormat.string(trailingLimit)) after the "
                                    + "end of its archive (at byte \(end)); nothing was installed"
                            )
                        }
                    }
                    return Outcome(product: product, sha256: reader.digest, size: reader.count)
                } catch {
                    feed.abandon()
                    throw error
                }
            }
        }
    }

    /// The bytes handed over so far, those the destination held at the start included: where a resumed
    /// request starts.
    var pushed: Int64 { pushedCount.load(ordering: .relaxed) }

    /// Hands over the next bytes; suspends while the consumer is behind by more than the feed holds.
    /// - Throws: ``ConsumerStopped`` when the consumer gave up (``outcome()`` throws its error), or
    ///   `CancellationError`.
    func push(_ chunk: ByteBuffer) async throws {
        let count = Int64(chunk.readableBytes)
        guard count > 0 else { return }  // an empty block would read as the end
        do {
            try await feed.send(chunk)
        } catch is QueueStopped {
            throw ConsumerStopped()
        }
        pushedCount.add(count, ordering: .relaxed)
    }

    /// Marks the end of the bytes and waits for the consumer.
    /// - Returns: What the consumer made, the digest and count of every byte.
    /// - Throws: The work's error.
    func finish() async throws -> Outcome {
        feed.finish()
        return try await task.value
    }

    /// The consumer's error, once it gave up (after a push threw ``ConsumerStopped``).
    func failure() async -> any Error {
        switch await task.result {
        case .failure(let error): error
        case .success: ConsumerStopped()
        }
    }

    /// Stops the consumer (its work sees an error) and waits until its thread is done, so that the caller
    /// may remove what it was writing.
    func stop() async {
        feed.fail(ConsumerStopped())
        _ = await task.result
    }
}

/// The consumer thread's view of the feed: every block it reads is counted, and (unless told not to) hashed
/// on a thread of its own while the consumer decodes and writes it (the digest was a third of an install's
/// work on one thread on a CPU without SHA extensions). At most 4 MiB wait to be hashed: a consumer that runs
/// ahead waits.
final class HashingReader: @unchecked Sendable {
    /// The hashing thread's end: its hasher once the blocks ran out.
    private final class Hashed: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        private var hasher: SHA256?

        func finish(_ hasher: SHA256) {
            self.hasher = hasher
            done.signal()
        }

        func wait() -> SHA256 {
            done.wait()
            done.signal()  // asked again, it answers again
            return hasher ?? SHA256()
        }
    }

    private let feed: BlockingQueue<ByteBuffer>
    /// Whether the blocks are hashed at all.
    private let hashes: Bool
    /// Blocks handed out, on their way to the hashing thread, and what that thread ends with.
    private let behind = BlockingQueue<ByteBuffer>(capacity: 4 << 20, cost: { $0.readableBytes })
    private let hashed = Hashed()
    // Only the consumer thread touches these.
    private var start = SHA256()
    private var hashing = false
    private(set) var count: Int64 = 0
    /// The storage of the block handed out last, retained until the next call (NIO's way to keep a buffer's
    /// bytes valid beyond a closure).
    private var current: Unmanaged<AnyObject>?

    /// - Parameter hashing: Whether to hash the blocks (``digest`` is `nil` without).
    init(_ feed: BlockingQueue<ByteBuffer>, hashing: Bool = true) {
        self.feed = feed
        self.hashes = hashing
    }

    deinit {
        current?.release()
        behind.cancel()  // a reader given up on: its hashing thread stops
    }

    /// Starts from bytes the destination already holds, already hashed; before the first ``next()``.
    /// `hasher` is only asked for when this reader hashes (it reads those bytes again).
    func resume(hasher: @autoclosure () throws -> SHA256, count: Int64) rethrows {
        precondition(self.count == 0 && current == nil, "resume before the first block")  // hashing or not
        if hashes { start = try hasher() }
        self.count = count
    }

    /// The next block, valid until the next call; empty at the end. Blocks while the feed is empty, and while
    /// the hashing thread is 4 MiB behind.
    /// - Throws: The producer's error.
    func next() throws -> UnsafeRawBufferPointer {
        current?.release()
        current = nil
        if hashes && !hashing { startHashing() }
        guard let chunk = try feed.receive() else {
            behind.finish()
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        if hashes { try behind.put(chunk) }  // shares the storage: the thread hashes the same bytes
        let block = chunk.withUnsafeReadableBytesWithStorageManagement { bytes, storage in
            current = storage.retain()
            return bytes
        }
        count += Int64(block.count)
        return block
    }

    private func startHashing() {
        hashing = true
        let (behind, hashed, start) = (self.behind, self.hashed, self.start)
        BlockingIO.startLongJob {
            var hasher = start
            while let chunk = try? behind.receive() {
                chunk.withUnsafeReadableBytes { hasher.update(bufferPointer: $0) }
            }
            hashed.finish(hasher)
        }
    }

    /// The SHA-256 of the bytes read so far, once the feed has ended (``next()`` returned an empty block);
    /// `nil` for a reader that does not hash.
    var digest: String? {
        guard hashes else { return nil }
        if !hashing { startHashing() }
        behind.finish()
        return hashed.wait().finalize().hexString
    }
}

/// Thrown into a download's producer when the consumer of its bytes gave up; the consumer's own error says
/// why.
struct ConsumerStopped: Error, Sendable {}

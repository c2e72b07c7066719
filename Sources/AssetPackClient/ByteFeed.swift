import Foundation
import NIOCore

/// Hands a download's bytes from the network (an async producer) to the thread that extracts them (a
/// blocking consumer, inside libarchive's read callback), so that a pack is extracted while it arrives and
/// never written to disk whole.
///
/// At most `capacity` bytes wait in between: a full feed suspends the producer (the network reads slow down,
/// TCP pushes back) until the consumer has taken half. If the consumer gives up (a corrupt archive), the
/// feed either drops what arrives from then on, so the download can finish and its digest can tell a
/// damaged transfer from a damaged pack, or makes the producer fail at once.
final class ByteFeed: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var chunks = CircularBuffer<ByteBuffer>()
    private var queued = 0
    private var finished = false
    private var failure: (any Error)?
    private var abandoned = false
    private var abandonError: (any Error)?
    private var producer: CheckedContinuation<Void, any Error>?
    private var producerCancelled = false
    /// The block the consumer is reading; kept alive until it asks for the next one.
    private var current: ByteBuffer?

    let capacity: Int

    init(capacity: Int = 8 << 20) { self.capacity = capacity }

    // MARK: Producer

    /// Queues a chunk; suspends while the feed is full.
    /// - Throws: ``ExtractionStopped`` if the consumer gave up and asked for the download to stop.
    func push(_ chunk: ByteBuffer) async throws {
        guard try enqueue(chunk) else { return }
        // Cancellable, so that a stall watchdog (which cancels the download) can always end the wait.
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                wait(continuation)
            }
        } onCancel: {
            cancelWait()
        }
    }

    /// Ends a producer's wait with `CancellationError`, now or as soon as it starts waiting.
    private func cancelWait() {
        condition.lock()
        producerCancelled = true
        let waiting = producer
        producer = nil
        condition.unlock()
        waiting?.resume(throwing: CancellationError())
    }

    /// Queues a chunk; returns whether the feed is now full.
    private func enqueue(_ chunk: ByteBuffer) throws -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if abandoned {
            if let abandonError { throw abandonError }
            return false  // draining: the download finishes for its digest, the bytes go nowhere
        }
        chunks.append(chunk)
        queued += chunk.readableBytes
        condition.signal()
        return queued > capacity
    }

    /// Parks the producer until the consumer has taken half (or gave up).
    private func wait(_ continuation: CheckedContinuation<Void, any Error>) {
        condition.lock()
        defer { condition.unlock() }
        if abandoned {
            if let abandonError { continuation.resume(throwing: abandonError) } else { continuation.resume() }
        } else if producerCancelled {
            producerCancelled = false
            continuation.resume(throwing: CancellationError())
        } else if queued <= capacity / 2 {
            continuation.resume()
        } else {
            producer = continuation
        }
    }

    /// Marks the end of the bytes: the consumer reads what is queued, then sees the end.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    /// Ends the feed with an error: the consumer's next read throws it.
    func fail(_ error: any Error) {
        condition.lock()
        failure = error
        chunks.removeAll()
        queued = 0
        condition.signal()
        condition.unlock()
    }

    // MARK: Consumer

    /// The next block, valid until the next call; empty at the end. Blocks the calling thread while the feed
    /// is empty.
    /// - Throws: The producer's error (``fail(_:)``).
    func next() throws -> UnsafeRawBufferPointer {
        condition.lock()
        defer { condition.unlock() }
        current = nil
        while chunks.isEmpty && !finished && failure == nil { condition.wait() }
        if let failure { throw failure }
        guard let chunk = chunks.popFirst() else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        queued -= chunk.readableBytes
        if queued <= capacity / 2, let producer {
            self.producer = nil
            producer.resume()
        }
        current = chunk
        // The pointer stays valid: `current` keeps the buffer's storage alive and nothing writes to it.
        return chunk.withUnsafeReadableBytes { $0 }
    }

    /// The consumer stops reading. With `drain`, whatever arrives later is dropped and the producer goes on;
    /// otherwise the producer's next push throws ``ExtractionStopped``.
    func abandon(drain: Bool) {
        let error = ExtractionStopped()
        condition.lock()
        abandoned = true
        abandonError = drain ? nil : error
        chunks.removeAll()
        queued = 0
        current = nil
        let waiting = producer
        producer = nil
        condition.unlock()
        if let waiting {
            if drain { waiting.resume() } else { waiting.resume(throwing: error) }
        }
    }
}

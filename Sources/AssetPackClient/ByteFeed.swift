import Foundation
import NIOCore

/// Hands a download's bytes from the network (an async producer) to the thread that extracts them (a
/// blocking consumer, inside libarchive's read callback), so that a pack is extracted while it arrives and
/// never written to disk whole.
///
/// At most `capacity` bytes wait in between: a full feed suspends the producer (the network reads slow down,
/// TCP pushes back) until the consumer has taken half. If the consumer gives up (a corrupt archive, a full
/// disk), the producer's next push fails at once: nothing is read from the network for a consumer that is
/// gone.
final class ByteFeed: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var chunks = CircularBuffer<ByteBuffer>()
    private var queued = 0
    private var finished = false
    private var failure: (any Error)?
    private var abandoned = false
    private var producer: CheckedContinuation<Void, any Error>?
    private var producerCancelled = false
    /// The block the consumer is reading; kept alive until it asks for the next one.
    private var current: ByteBuffer?

    let capacity: Int

    init(capacity: Int = 8 << 20) { self.capacity = capacity }

    // MARK: Producer

    /// Queues a chunk; suspends while the feed is full.
    /// - Throws: ``ConsumerStopped`` if the consumer gave up.
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
        if abandoned { throw ConsumerStopped() }
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
            continuation.resume(throwing: ConsumerStopped())
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

    /// The consumer stops reading: the producer's next push (or its current wait) throws ``ConsumerStopped``.
    func abandon() {
        condition.lock()
        abandoned = true
        chunks.removeAll()
        queued = 0
        current = nil
        let waiting = producer
        producer = nil
        condition.unlock()
        waiting?.resume(throwing: ConsumerStopped())
    }
}

/// Thrown into a download's producer when the consumer of its bytes gave up; the consumer's own error says
/// why.
struct ConsumerStopped: Error, Sendable {}

import Foundation
import NIOCore

/// The one queue between a sender and a receiving thread that blocks: the stages of a pack build (read and
/// hash the input; compress; hash and write the output), a download and its extraction, and the writers of a
/// stream and the thread that writes it out.
///
/// First in, first out, bounded by `capacity` in the units `cost` measures (items by default, bytes for
/// data). When it is full, the sender chooses: ``offer(_:)`` never blocks (the item is dropped and counted,
/// for output a slow reader must not hold up), ``send(_:)`` suspends its task until the receiver has
/// taken half (the network slows down, TCP pushes back) and ``put(_:)`` blocks its thread until then. A
/// queue built with ``init(holding:)`` is a pool: it starts full of items (free buffers) and is never over
/// capacity.
///
/// It ends one of four ways: ``finish()`` (the receiver drains what was sent, then sees `nil`), ``fail(_:)``
/// (the receiver's next ``receive()`` throws the error), ``cancel()`` (both sides stop at once: the receiver
/// sees `nil`, senders are refused) or the receiver's ``abandon()`` (it gives up: senders are refused with
/// ``QueueStopped``).
package final class BlockingQueue<Element: Sendable>: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var items: CircularBuffer<Element>
    private var queued = 0
    private var finished = false
    private var stopped = false
    private var failure: (any Error)?
    private var dropped = 0
    private var busy = false
    private var sender: CheckedContinuation<Void, any Error>?
    /// Threads blocked in ``put(_:)``: a receive wakes them only when there are some.
    private var putters = 0
    private var senderCancelled = false

    /// The most the queue holds, in `cost` units, before ``offer(_:)`` drops and ``send(_:)`` suspends.
    package let capacity: Int
    private let cost: @Sendable (Element) -> Int

    /// An empty queue.
    /// - Parameters:
    ///   - capacity: The most it holds (`Int.max`: unbounded).
    ///   - cost: What an item counts against `capacity` (1 by default; bytes for data).
    package init(capacity: Int = .max, cost: @escaping @Sendable (Element) -> Int = { _ in 1 }) {
        self.capacity = capacity
        self.cost = cost
        items = CircularBuffer()
    }

    /// A pool: a queue that starts holding `initial` (free buffers that circulate and come back).
    package init(holding initial: [Element]) {
        capacity = .max
        cost = { _ in 1 }
        items = CircularBuffer(initial)
        queued = initial.count
    }

    // MARK: Senders

    /// Queues `item` without ever blocking.
    /// - Returns: Whether it was queued: `false` when the queue is full (the item is dropped and counted in
    ///   ``droppedCount``) or stopped.
    @discardableResult
    package func offer(_ item: Element) -> Bool {
        let size = cost(item)
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else { return false }
        guard size <= capacity - queued else {
            dropped += 1
            return false
        }
        items.append(item)
        queued += size
        if items.count == 1 { condition.broadcast() }  // only a receiver waits for items, and only on none
        return true
    }

    /// Queues `item`, then suspends while the queue holds more than its capacity, until the receiver has
    /// taken half. Cancellable: a watchdog that cancels the task always ends the wait.
    /// - Throws: ``QueueStopped`` once the receiver gave up or the queue was cancelled; `CancellationError`.
    package func send(_ item: Element) async throws {
        guard try enqueue(item) else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                park(continuation)
            }
        } onCancel: {
            condition.lock()
            senderCancelled = true
            let waiting = sender
            sender = nil
            condition.unlock()
            waiting?.resume(throwing: CancellationError())
        }
    }

    /// ``send(_:)`` for a sender that is a thread: queues `item`, then blocks the thread while the queue holds
    /// more than its capacity, until the receiver has taken half.
    /// - Throws: ``QueueStopped`` once the receiver gave up or the queue was cancelled.
    package func put(_ item: Element) throws {
        BlockingIO.checkOffPool("BlockingQueue.put")
        guard try enqueue(item) else { return }
        condition.lock()
        defer { condition.unlock() }
        putters += 1
        while !stopped && queued > capacity / 2 { condition.wait() }
        putters -= 1
        if stopped { throw QueueStopped() }
    }

    /// Queues `item`; returns whether the queue is now over capacity.
    private func enqueue(_ item: Element) throws -> Bool {
        let size = cost(item)
        condition.lock()
        defer { condition.unlock() }
        if stopped { throw QueueStopped() }
        items.append(item)
        queued += size
        if items.count == 1 { condition.broadcast() }
        return queued > capacity
    }

    /// Parks the sender until the receiver has taken half (or gave up, or the task was cancelled).
    private func park(_ continuation: CheckedContinuation<Void, any Error>) {
        condition.lock()
        defer { condition.unlock() }
        if stopped {
            continuation.resume(throwing: QueueStopped())
        } else if senderCancelled {
            senderCancelled = false
            continuation.resume(throwing: CancellationError())
        } else if queued <= capacity / 2 {
            continuation.resume()
        } else {
            sender = continuation
        }
    }

    /// Nothing more will be sent: the receiver takes what is queued, then sees `nil`.
    package func finish() {
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Ends the queue with an error: what is queued is dropped and the receiver's next ``receive()`` throws
    /// `error`.
    package func fail(_ error: any Error) {
        condition.lock()
        failure = error
        items.removeAll()
        queued = 0
        condition.broadcast()
        condition.unlock()
    }

    /// Stops both sides at once: ``receive()`` returns `nil` from now on and senders are refused (an item
    /// sent and not received comes back through no one, so the side that cancels must not wait for it).
    package func cancel() { stop() }

    // MARK: The receiver

    /// The next item, blocking the calling thread while there is none; `nil` once finished and drained, or
    /// stopped. Calling it again also says the receiver is done with the item before (``waitUntilDone(until:)``).
    /// - Throws: The error given to ``fail(_:)``.
    package func receive() throws -> Element? {
        BlockingIO.checkOffPool("BlockingQueue.receive")
        return try take { items in
            let item = items.removeFirst()
            return (item, cost(item))
        }
    }

    /// Every item waiting (at least one), in order, blocking the calling thread while there is none; otherwise
    /// as ``receive()``: `nil` once finished and drained, or stopped, and calling it again says the receiver
    /// is done with the items before. For a receiver that handles a batch at the cost of one item (a line
    /// writer: one `write(2)` for many lines).
    package func receiveAll() throws -> [Element]? {
        BlockingIO.checkOffPool("BlockingQueue.receiveAll")
        return try take { items in
            defer { items.removeAll(keepingCapacity: true) }
            return (Array(items), queued)
        }
    }

    /// Waits for items, then takes what `body` removes from them (with its cost) and wakes the senders waiting
    /// for room.
    private func take<Taken>(_ body: (inout CircularBuffer<Element>) -> (Taken, cost: Int)) throws -> Taken? {
        condition.lock()
        defer { condition.unlock() }
        busy = false
        condition.broadcast()
        while items.isEmpty && !finished && !stopped && failure == nil { condition.wait() }
        if let failure { throw failure }
        guard !stopped, !items.isEmpty else { return nil }
        let (taken, cost) = body(&items)
        queued -= cost
        busy = true
        if queued <= capacity / 2 {
            if putters > 0 { condition.broadcast() }
            if let waiting = sender {
                sender = nil
                waiting.resume()
            }
        }
        return taken
    }

    /// The receiver gives up: what is queued is dropped, and senders (a waiting one at once) are refused
    /// with ``QueueStopped``.
    package func abandon() { stop() }

    private func stop() {
        condition.lock()
        stopped = true
        items.removeAll()
        queued = 0
        let waiting = sender
        sender = nil
        condition.broadcast()
        condition.unlock()
        waiting?.resume(throwing: QueueStopped())
    }

    // MARK: State

    /// Whether nothing waits to be received.
    package var isEmpty: Bool {
        condition.lock()
        defer { condition.unlock() }
        return items.isEmpty
    }

    /// How many items ``offer(_:)`` dropped so far.
    package var droppedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return dropped
    }

    /// Waits until the queue is empty and the receiver is done with the last item it took (it asked for the
    /// next), or `deadline` passed.
    /// - Returns: Whether everything sent was dealt with.
    package func waitUntilDone(until deadline: Date) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while !items.isEmpty || busy {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }
}

/// Thrown into a sender of a ``BlockingQueue`` once its receiver gave up or it was cancelled; the receiver's
/// own error says why.
package struct QueueStopped: Error, Sendable {
    package init() {}
}

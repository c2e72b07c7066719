import Foundation
import NIOCore

/// A first-in, first-out queue between threads that block: the link between two stages of a pipeline
/// (read and hash the input; compress; hash the output; write it), each on a thread of its own.
///
/// Ending lets the receiver drain what was sent and then see `nil`; cancelling stops both sides at once
/// (a sender's buffers come back through no one, so the side that cancels must not wait for them).
final class Handoff<Element>: @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var items: CircularBuffer<Element>
    private var ended = false
    private var cancelled = false

    /// Creates a queue holding `initial` (for a pool of free buffers).
    init(_ initial: [Element] = []) {
        items = CircularBuffer(initial)
    }

    /// Queues `item` for the receiver; dropped once cancelled.
    func send(_ item: Element) {
        condition.lock()
        if !cancelled { items.append(item) }
        condition.signal()
        condition.unlock()
    }

    /// The next item, waiting for one; `nil` once ended and drained, or once cancelled.
    func receive() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while items.isEmpty && !ended && !cancelled { condition.wait() }
        guard !cancelled else { return nil }
        return items.popFirst()
    }

    /// Nothing more will be sent.
    func end() {
        condition.lock()
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    /// Stops both sides: `receive` returns `nil` from now on.
    func cancel() {
        condition.lock()
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }
}

/// A fixed set of page-aligned buffers that circulate through ``Handoff`` queues: no more ever exist, so
/// memory stays flat whatever flows through. Freed with this object, so every stage must be done with
/// them first.
final class AlignedBuffers: @unchecked Sendable {
    let all: [UnsafeMutableRawBufferPointer]

    init(count: Int, size: Int) {
        all = (0..<count).map { _ in UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 4096) }
    }

    deinit {
        for buffer in all { buffer.deallocate() }
    }
}

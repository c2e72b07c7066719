import AssetPackFormat
import Foundation
import SystemPackage

/// Writes text to a file descriptor from a thread of its own, through a bounded queue, so that a caller
/// (a request handler, a download's progress) never blocks on a slow reader of stdout or stderr.
///
/// When more than `capacity` bytes wait, new text is dropped and counted; once the reader catches up, a line
/// says how many writes were dropped, where the gap is. Each write goes out in one `write(2)` where the
/// descriptor allows it, so lines of concurrent writers never interleave.
public final class OutputQueue: Sendable {
    private let queue: BlockingQueue<[UInt8]>

    /// Starts the writer thread, which ends once this queue is released and what it holds is written.
    /// - Parameters:
    ///   - fd: Where the text goes.
    ///   - capacity: The most bytes that wait before writes are dropped.
    ///   - what: What the writes are, for the line about dropped ones (e.g. "request lines").
    public init(_ fd: FileDescriptor, capacity: Int = 4 << 20, what: String = "lines") {
        let queue = BlockingQueue<[UInt8]>(capacity: capacity, cost: { $0.count })
        self.queue = queue
        // The thread holds the queue, not this object: releasing it finishes the queue and ends the thread.
        let thread = Thread { Self.drain(queue, to: fd, what: what) }
        thread.stackSize = 256 << 10
        thread.start()
    }

    deinit { queue.finish() }

    /// Queues `text`; never blocks. Dropped (and counted) when the queue is full.
    public func write(_ text: String) { queue.offer(Array(text.utf8)) }

    /// Queues `line` and a newline.
    public func writeLine(_ line: String) { write(line + "\n") }

    /// How many writes were dropped so far.
    public var droppedCount: Int { queue.droppedCount }

    /// Waits until everything queued is written, or `timeout` passed (a reader that is gone must not hold a
    /// process that is shutting down).
    /// - Returns: Whether everything was written.
    @discardableResult
    public func flush(timeout: Duration = .seconds(2)) -> Bool {
        queue.waitUntilDone(until: Date().addingTimeInterval(timeout.inSeconds))
    }

    /// The writer thread: writes each text as it comes and, once it has written all that waited, a line that
    /// says how many were dropped since the last such line, if any were: drops happen while the queue is full,
    /// after what it holds, so that is where the gap is.
    private static func drain(_ queue: BlockingQueue<[UInt8]>, to fd: FileDescriptor, what: String) {
        var reported = 0
        while let bytes = try? queue.receive() {
            _ = try? fd.writeAll(bytes)
            guard queue.isEmpty else { continue }
            let dropped = queue.droppedCount
            if dropped > reported {
                _ = try? fd.writeAll(Array("(\(dropped - reported) \(what) dropped: the reader fell behind)\n".utf8))
                reported = dropped
            }
        }
    }
}

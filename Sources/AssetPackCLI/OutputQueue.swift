import AssetPackFormat
import Foundation
import SystemPackage

/// Writes text to a file descriptor from a thread of its own, through a bounded queue, so that a caller
/// (a request handler, a download's progress) never blocks on a slow reader of stdout or stderr.
///
/// When more than `capacity` bytes wait, new text is dropped and counted; once the reader catches up, a line
/// says how many writes were dropped, where the gap is. Texts that wait together go out together, in
/// `write(2)`s of whole texts of at most `PIPE_BUF` bytes (one per text above that), so a busy writer (a
/// request line per response) costs one system call per batch, and lines of concurrent writers never
/// interleave where the descriptor allows it.
public final class OutputQueue: Sendable {
    /// A text to write, with a newline after it or not (appended on the writer's thread, not the caller's).
    private struct Text: Sendable {
        var string: String
        var newline: Bool
        var count: Int { string.utf8.count + (newline ? 1 : 0) }
    }

    private let queue: BlockingQueue<Text>

    /// Starts the writer thread, which ends once this queue is released and what it holds is written.
    /// - Parameters:
    ///   - fd: Where the text goes.
    ///   - capacity: The most bytes that wait before writes are dropped.
    ///   - what: What the writes are, for the line about dropped ones (e.g. "request lines").
    public init(_ fd: FileDescriptor, capacity: Int = 4 << 20, what: String = "lines") {
        let queue = BlockingQueue<Text>(capacity: capacity, cost: { $0.count })
        self.queue = queue
        // The thread holds the queue, not this object: releasing it finishes the queue and ends the thread.
        let thread = Thread { Self.drain(queue, to: fd, what: what) }
        thread.stackSize = 256 << 10
        thread.start()
    }

    deinit { queue.finish() }

    /// Queues `text`; never blocks. Dropped (and counted) when the queue is full.
    public func write(_ text: String) { queue.offer(Text(string: text, newline: false)) }

    /// Queues `line` and a newline.
    public func writeLine(_ line: String) { queue.offer(Text(string: line, newline: true)) }

    /// How many writes were dropped so far.
    public var droppedCount: Int { queue.droppedCount }

    /// Waits until everything queued is written, or `timeout` passed (a reader that is gone must not hold a
    /// process that is shutting down).
    /// - Returns: Whether everything was written.
    @discardableResult
    public func flush(timeout: Duration = .seconds(2)) -> Bool {
        queue.waitUntilDone(until: Date().addingTimeInterval(timeout.inSeconds))
    }

    /// The writer thread: writes the texts that wait as they come and, once it has written all that waited, a
    /// line that says how many were dropped since the last such line, if any were: drops happen while the queue
    /// is full, after what it holds, so that is where the gap is.
    private static func drain(_ queue: BlockingQueue<Text>, to fd: FileDescriptor, what: String) {
        let atomic = 4096  // PIPE_BUF on Linux: what a pipe writes whole
        var buffer: [UInt8] = []
        buffer.reserveCapacity(atomic)
        var reported = 0
        while let texts = try? queue.receiveAll() {
            for text in texts {
                if !buffer.isEmpty && buffer.count + text.count > atomic {
                    _ = try? fd.writeAll(buffer)
                    buffer.removeAll(keepingCapacity: true)
                }
                buffer.append(contentsOf: text.string.utf8)
                if text.newline { buffer.append(UInt8(ascii: "\n")) }
            }
            _ = try? fd.writeAll(buffer)
            buffer.removeAll(keepingCapacity: true)
            // Texts came faster than one at a time: let the next batch gather for 2 ms rather than wake for each
            // (a request line per response at 30 000 a second woke this thread as often, on a two-core machine).
            if texts.count > 1 { usleep(2000) }
            guard queue.isEmpty else { continue }
            let dropped = queue.droppedCount
            if dropped > reported {
                _ = try? fd.writeAll(Array("(\(dropped - reported) \(what) dropped: the reader fell behind)\n".utf8))
                reported = dropped
            }
        }
    }
}

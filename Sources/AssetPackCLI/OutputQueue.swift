import Foundation
import SystemPackage

/// Writes text to a file descriptor from a thread of its own, through a bounded queue, so that a caller
/// (a request handler, a download's progress) never blocks on a slow reader of stdout or stderr.
///
/// When more than `capacity` bytes wait, new text is dropped and counted; once the reader catches up, a line
/// says how many writes were dropped, where the gap is. Each write goes out in one `write(2)` where the
/// descriptor allows it, so lines of concurrent writers never interleave.
public final class OutputQueue: @unchecked Sendable {
    private let fd: FileDescriptor
    private let capacity: Int
    private let what: String
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [[UInt8]] = []
    private var queued = 0
    private var dropped = 0
    private var writing = false

    /// Starts the writer thread.
    /// - Parameters:
    ///   - fd: Where the text goes.
    ///   - capacity: The most bytes that wait before writes are dropped.
    ///   - what: What the writes are, for the line about dropped ones (e.g. "request lines").
    public init(_ fd: FileDescriptor, capacity: Int = 4 << 20, what: String = "lines") {
        self.fd = fd
        self.capacity = capacity
        self.what = what
        let thread = Thread { [self] in drain() }
        thread.stackSize = 256 << 10
        thread.start()
    }

    /// Queues `text`; never blocks. Dropped (and counted) when the queue is full.
    public func write(_ text: String) {
        let bytes = Array(text.utf8)
        condition.lock()
        defer { condition.unlock() }
        guard queued + bytes.count <= capacity else {
            dropped += 1
            return
        }
        pending.append(bytes)
        queued += bytes.count
        condition.broadcast()
    }

    /// Queues `line` and a newline.
    public func writeLine(_ line: String) { write(line + "\n") }

    /// How many writes were dropped so far.
    public var droppedCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return dropped
    }

    /// Waits until everything queued is written, or `timeout` passed (a reader that is gone must not hold a
    /// process that is shutting down).
    /// - Returns: Whether everything was written.
    @discardableResult
    public func flush(timeout: Duration = .seconds(2)) -> Bool {
        let deadline = Date().addingTimeInterval(timeout.seconds)
        condition.lock()
        defer { condition.unlock() }
        while !pending.isEmpty || writing {
            if !condition.wait(until: deadline) { return false }
        }
        return true
    }

    private func drain() {
        var reported = 0
        while true {
            condition.lock()
            while pending.isEmpty && dropped == reported { condition.wait() }
            var batch = pending
            pending.removeAll(keepingCapacity: true)
            queued = 0
            if dropped > reported {
                batch.append(Array("(\(dropped - reported) \(what) dropped: the reader fell behind)\n".utf8))
                reported = dropped
            }
            writing = true
            condition.unlock()
            for bytes in batch { _ = try? fd.writeAll(bytes) }
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }
}

extension Duration {
    fileprivate var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

import AssetPackCLI
import Foundation
import SystemPackage
import Testing

@Suite("Output that never blocks its writers")
struct OutputQueueTests {
    @Test func aReaderThatStopsReadingCostsLinesNotTime() throws {
        let pipe = try FileDescriptor.pipe()
        defer { try? pipe.readEnd.close() }
        let queue = OutputQueue(pipe.writeEnd, capacity: 64 << 10, what: "request lines")
        let line = String(repeating: "x", count: 99)
        // 2 MiB of lines into a pipe that holds 64 KiB and a queue of 64 KiB: nobody reads. A writer that waited
        // for room would hang here; lines dropped are what not waiting costs (no clock: what the queue decides).
        for _ in 0..<20_000 { queue.writeLine(line) }
        let dropped = queue.droppedCount
        #expect(dropped > 15_000)
        #expect(!queue.flush(timeout: .milliseconds(100)))  // the reader is still gone

        // The reader comes back: every line kept arrives whole, and lines say how many were dropped.
        let received = Received()
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while let count = try? buffer.withUnsafeMutableBytes({ try pipe.readEnd.read(into: $0) }), count > 0 {
                received.append(buffer[0..<count])
            }
            received.finish()
        }
        reader.start()
        #expect(queue.flush(timeout: .seconds(5)))
        try pipe.writeEnd.close()
        let lines = received.wait().split(separator: "\n").map(String.init)
        let notices = lines.filter { $0 != line }
        let counted = notices.compactMap { notice -> Int? in
            guard notice.hasPrefix("("), notice.hasSuffix(" request lines dropped: the reader fell behind)") else {
                return nil
            }
            return Int(notice.dropFirst().prefix { $0.isNumber })
        }
        #expect(counted.count == notices.count, "only whole lines and notices: \(notices.prefix(3))")
        #expect(counted.reduce(0, +) == dropped)
        #expect(lines.count - notices.count + dropped == 20_000)
        #expect(lines.last.map { notices.contains($0) } == true)
    }
}

/// Bytes a reader thread collected, handed over when it saw the end.
private final class Received: @unchecked Sendable {
    private let condition = NSCondition()
    private var bytes: [UInt8] = []
    private var done = false

    func append(_ chunk: ArraySlice<UInt8>) {
        condition.lock()
        bytes += chunk
        condition.unlock()
    }

    func finish() {
        condition.lock()
        done = true
        condition.broadcast()
        condition.unlock()
    }

    func wait() -> String {
        condition.lock()
        defer { condition.unlock() }
        while !done { condition.wait() }
        return String(decoding: bytes, as: UTF8.self)
    }
}

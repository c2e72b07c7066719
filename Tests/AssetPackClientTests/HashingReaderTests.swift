import AssetPackFormat
import Crypto
import Foundation
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import AssetPackClient

/// A download's bytes are hashed on a thread of their own while the consumer decodes and writes them (the
/// fast path); the digest, the count and the bytes handed out must be those of one plain pass.
@Suite("Hashing a download beside its consumer")
struct HashingReaderTests {
    /// Runs `consume` on a thread of its own over a reader fed `blocks`, as a download's consumer runs.
    func consume<T: Sendable>(
        _ blocks: [[UInt8]],
        _ consume: @escaping @Sendable (HashingReader) throws -> T
    ) async throws -> T {
        let feed = BlockingQueue<ByteBuffer>(capacity: 8 << 20, cost: { $0.readableBytes })
        let task = Task { try await BlockingIO.longJob { try consume(HashingReader(feed)) } }
        for block in blocks { try await feed.send(ByteBuffer(bytes: block)) }
        feed.finish()
        return try await task.value
    }

    /// 12 MiB in blocks of odd sizes, read by a consumer slower than the hashing (so the 4 MiB bound is met
    /// both ways), after a prefix that a resumed download already held: every byte comes out in order, and
    /// the digest and the count are those of the prefix and the blocks in one SHA-256 pass.
    @Test func theDigestIsThatOfEveryByteInOrder() async throws {
        let prefix = Array(Scratch.noise(100_000, seed: 1))
        var blocks: [[UInt8]] = []
        var total = 0
        var seed: UInt64 = 2
        while total < 12 << 20 {
            let size = [1, 4_095, 65_536, 1 << 20, 3_000_001][Int(seed % 5)]
            blocks.append(Array(Scratch.noise(size, seed: seed)))
            total += size
            seed += 1
        }
        let all = prefix + Array(blocks.joined())
        let (bytes, digest, count) = try await consume(blocks) { reader in
            reader.resume(
                hasher: {
                    var h = SHA256(); h.update(data: prefix); return h
                }(),
                count: Int64(prefix.count)
            )
            var seen: [UInt8] = []
            var reads = 0
            while true {
                let block = try reader.next()
                if block.isEmpty { break }
                seen += block
                reads += 1
                if reads % 7 == 0 { usleep(2_000) }  // behind now and then
            }
            return (seen, reader.digest, reader.count)
        }
        #expect(bytes == Array(all.dropFirst(prefix.count)))
        #expect(count == Int64(all.count))
        #expect(digest == FileDigest.sha256(of: all))
    }

    /// Without a digest to check (a manifest of Apple's shape), the reader hashes nothing: the bytes and the
    /// count are those of the plain pass, the digest is absent, and the bytes a resumed download already held
    /// are not read again to hash them.
    @Test func withoutADigestToCheckNothingIsHashed() async throws {
        let blocks = (0..<40).map { Array(Scratch.noise([1, 4_095, 65_536, 1 << 20][$0 % 4], seed: UInt64($0))) }
        let feed = BlockingQueue<ByteBuffer>(capacity: 8 << 20, cost: { $0.readableBytes })
        let prefixRead = Mutex(false)
        let task = Task {
            try await BlockingIO.longJob {
                let reader = HashingReader(feed, hashing: false)
                reader.resume(
                    hasher: {
                        prefixRead.withLock { $0 = true }
                        return SHA256()
                    }(),
                    count: 100
                )
                var seen: [UInt8] = []
                while true {
                    let block = try reader.next()
                    if block.isEmpty { break }
                    seen += block
                }
                return (seen, reader.digest, reader.count)
            }
        }
        for block in blocks { try await feed.send(ByteBuffer(bytes: block)) }
        feed.finish()
        let (bytes, digest, count) = try await task.value
        #expect(bytes == Array(blocks.joined()))
        #expect(count == 100 + Int64(bytes.count))
        #expect(digest == nil)
        #expect(prefixRead.withLock { $0 } == false)
    }

    /// A consumer that gives up before the end (a corrupt archive) leaves no thread behind that holds the
    /// feed: the reader goes, its hashing thread ends, and the producer's next send is refused.
    @Test(.timeLimit(.minutes(1))) func aConsumerThatGivesUpLeavesNothingWaiting() async throws {
        let feed = BlockingQueue<ByteBuffer>(capacity: 1 << 20, cost: { $0.readableBytes })
        let task = Task {
            try await BlockingIO.longJob {
                let reader = HashingReader(feed)
                _ = try reader.next()
                feed.abandon()
                return reader.count
            }
        }
        var refused = false
        for index in 0..<64 {
            do {
                try await feed.send(ByteBuffer(bytes: Array(Scratch.noise(256 << 10, seed: UInt64(index)))))
            } catch is QueueStopped {
                refused = true
                break
            }
        }
        #expect(try await task.value == 256 << 10)
        #expect(refused)
    }
}

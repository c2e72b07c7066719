import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import TestSupport
import Testing

@testable import AssetPackServer

/// ``FileBody`` streams a file range through four buffers it reuses in turn, 256 KiB at a time, as its
/// comment and the README say.
@Suite("File bodies")
struct FileBodyTests {
    /// Collects what a body writes: its bytes, the size of each write and the storage each write came from.
    final class Recorder: ResponseBodyWriter, Sendable {
        let seen = Mutex<(bytes: Data, sizes: [Int], storage: Set<UInt>)>((Data(), [], []))

        func write(_ buffer: ByteBuffer) async throws {
            let address = buffer.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
            seen.withLock {
                $0.bytes.append(contentsOf: buffer.readableBytesView)
                $0.sizes.append(buffer.readableBytes)
                $0.storage.insert(address)
            }
            // The buffer is dropped here, as NIO drops it once sent: the body's next fill reuses its storage.
        }

        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    @Test(arguments: [0...((3 << 20) + 776), 100...(1 << 20) + 5000])
    func aRangeGoesThroughFourReusedBuffersOf256KiB(_ range: ClosedRange<Int>) async throws {
        let scratch = try Scratch()
        let content = Scratch.noise((3 << 20) + 777, seed: 11)
        let path = try scratch.write("pack.bin", content)
        let recorder = Recorder()
        try await FileBody.make(path: path, range: range, waitUntilWritable: {}).write(recorder)
        let (bytes, sizes, storage) = recorder.seen.withLock { ($0.bytes, $0.sizes, $0.storage) }
        #expect(bytes == content[range])
        #expect(sizes.dropLast().allSatisfy { $0 == 256 << 10 }, "\(sizes)")
        #expect(sizes.count == (range.count + (256 << 10) - 1) / (256 << 10))
        #expect(storage.count == 4, "\(storage.count) buffers for \(sizes.count) chunks")
        // Under TLS, one buffer: NIOSSL has dropped the plaintext by the next read.
        let single = Recorder()
        try await FileBody.make(path: path, range: range, slots: FileBody.tlsSlotCount, waitUntilWritable: {})
            .write(single)
        #expect(single.seen.withLock { $0.bytes } == content[range])
        #expect(single.seen.withLock { $0.storage.count } == 1)
    }
}

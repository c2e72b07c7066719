import CAppleCompression
import Foundation

/// One block of a pbz stream for a codec: its input, room for its output, and the codec's answer once it ran.
///
/// A job goes round: the thread that owns it fills `input`, hands it to ``BlockCodecWorkers`` (or runs it
/// itself), waits for it with ``wait()``, uses `output`, and fills it again. Only one thread touches it at a
/// time: the owner before the hand-over and after ``wait()`` returns, a worker in between.
final class BlockCodecJob: @unchecked Sendable {
    private(set) var input = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    private(set) var output = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    /// The bytes of `input` to code, and the most `output` may take.
    var inputCount = 0
    var outputCapacity = 0
    /// The codec's answer: the bytes written to `output`, or an `AC_ERROR_*` value.
    private(set) var result = 0
    private let done = DispatchSemaphore(value: 0)

    deinit {
        input.deallocate()
        output.deallocate()
    }

    /// Makes room for `input` bytes in and `output` bytes out (buffers are kept from block to block and only
    /// ever grow, to the largest block seen).
    func reserve(input inputBytes: Int, output outputBytes: Int) {
        if input.count < inputBytes { Self.grow(&input, to: inputBytes) }
        if output.count < outputBytes { Self.grow(&output, to: outputBytes) }
        inputCount = inputBytes
        outputCapacity = outputBytes
    }

    /// Codes the input (encodes it with `algorithm`, or decodes it), on the calling thread, and marks the job
    /// done.
    func run(_ algorithm: UInt32, encode: Bool) {
        let to = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
        let from = input.baseAddress?.assumingMemoryBound(to: UInt8.self)
        result =
            encode
            ? ac_block_encode(algorithm, to, outputCapacity, from, inputCount)
            : ac_block_decode(algorithm, to, outputCapacity, from, inputCount)
        done.signal()
    }

    /// Waits until the job ran; then its `output` and `result` are the owner's again.
    /// - Returns: The codec's answer.
    func wait() -> Int {
        done.wait()
        return result
    }

    private static func grow(_ buffer: inout UnsafeMutableRawBufferPointer, to count: Int) {
        buffer.deallocate()
        buffer = .allocate(byteCount: count, alignment: 64)
    }
}

/// Threads of their own that run the blocks of one pbz stream through its codec, so that both cores compress
/// (or decode) while one thread fills blocks and takes them back in order.
///
/// A pbz stream's blocks are independent (each is its own LZFSE, LZMA, zlib or LZ4 stream), so coding them
/// apart and putting them back in order gives the bytes a serial run gives. The owner bounds what is in
/// flight (it waits for its oldest job before it starts another past its limit); the workers hold no block
/// of their own. Started at a stream's first full block (writing) or second compressed block (reading), so
/// a small pack starts no thread.
final class BlockCodecWorkers: @unchecked Sendable {
    /// The threads a stream's codec takes when the caller does not say: one per core.
    static var defaultCount: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    private let todo = BlockingQueue<BlockCodecJob>()
    private let running = DispatchGroup()

    /// Starts `count` threads that code with `algorithm`.
    init(count: Int, algorithm: UInt32, encode: Bool) {
        for _ in 0..<max(1, count) {
            running.enter()
            BlockingIO.startLongJob { [todo, running] in
                while let job = try? todo.receive() { job.run(algorithm, encode: encode) }
                running.leave()
            }
        }
    }

    /// Hands `job` to the next free thread.
    func start(_ job: BlockCodecJob) {
        todo.offer(job)
    }

    /// Runs what was started, then stops the threads and waits for them: afterwards no thread touches a job,
    /// and the owner may free them.
    func close() {
        todo.finish()
        running.wait()
    }
}

import AssetPackClient
import AssetPackFormat
import Foundation
import Histogram
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// One thread's state across the rounds of a case; only its own thread touches it during a round.
final class Worker: @unchecked Sendable {
    var histogram = Histogram<UInt64>(
        lowestDiscernibleValue: 1,
        highestTrackableValue: 3_600_000_000_000,
        numberOfSignificantValueDigits: .three
    )
    var operations = 0
    var bytes = 0
    var sink: UInt64 = 0
    var random: SplitMix64
    let buffer: UnsafeMutableRawBufferPointer
    /// When this thread's first and last operation of the current round began and ended.
    var roundStart: UInt64 = 0
    var roundEnd: UInt64 = 0
    /// Time between this round's operations spent keeping a cold case cold (not the reads').
    var roundUntimed: UInt64 = 0
    var error: (any Error)?
    let threadIndex: Int

    init(thread: Int, block: Int?, seed: UInt64) {
        threadIndex = thread
        random = SplitMix64(seed: seed &+ UInt64(thread) &* 0x9E37_79B9)
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(1 << 20, block ?? 0), alignment: 4096)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)  // fault the pages in now, not while timed
    }

    deinit { buffer.deallocate() }
}

/// Hands out operation numbers to the threads of a round.
final class Counter: Sendable {
    private let next = Atomic<Int>(0)
    func take() -> Int { next.wrappingAdd(1, ordering: .relaxed).oldValue }
}

/// Files opened (random pattern) for a round, shared by its threads.
struct RoundHandles: Sendable {
    var mappings: [Data] = []
    var descriptors: [FileDescriptor] = []

    func close() {
        for fd in descriptors { try? fd.close() }
    }
}

/// How the operations of a case are done.
struct RoundPlan: Sendable {
    let benchmark: ReadBenchmark
    let benchCase: ReadBenchmark.Case
    /// Files the pattern reads (for random: those at least one block long).
    let targets: [ReadBenchmark.Target]
    /// Running total of whole blocks per target, for a uniform pick over all blocks.
    let blockEnds: [Int]
    let operationsPerRound: Int

    init(benchmark: ReadBenchmark, benchCase: ReadBenchmark.Case) throws {
        self.benchmark = benchmark
        self.benchCase = benchCase
        if benchCase.pattern == .random, let block = benchCase.block {
            targets = benchmark.targets.filter { $0.size >= block }
            var total = 0
            blockEnds = targets.map {
                total += $0.size / block
                return total
            }
            operationsPerRound = max(16384, targets.count)
        } else {
            targets = benchmark.targets
            blockEnds = []
            operationsPerRound = targets.count
        }
    }

    /// Whether each random block's pages are dropped after it is read (and untimed), so that a long cold
    /// case does not end up reading from the page cache.
    var dropsEachBlock: Bool { benchCase.pattern == .random && benchCase.cache == .cold }

    func open() throws -> RoundHandles {
        guard benchCase.pattern == .random else { return RoundHandles() }
        var handles = RoundHandles()
        do {
            for target in targets {
                if benchCase.method == .contents {
                    handles.mappings.append(
                        try benchmark.reader.contents(
                            at: target.namespacePath,
                            searchingInAssetPackWithID: target.pack
                        )
                    )
                }
                if benchCase.method != .contents || dropsEachBlock {
                    handles.descriptors.append(try benchmark.openFile(target.file))
                }
                if dropsEachBlock {  // no read-ahead: a neighbour brought in would make the next block warm
                    if benchCase.method != .contents {
                        handles.descriptors.last!.advise(.random)
                    }
                    handles.mappings.last?.withUnsafeBytes { bytes in
                        if let base = bytes.baseAddress {
                            _ = madvise(UnsafeMutableRawPointer(mutating: base), bytes.count, MADV_RANDOM)
                        }
                    }
                }
            }
        } catch {
            handles.close()
            throw error
        }
        return handles
    }

    func work(_ worker: Worker, handles: RoundHandles, counter: Counter, limit: Int, deadline: UInt64) {
        // The loop keeps its state in locals and hands it back at the end: every access to a class's stored
        // property is checked for exclusivity at run time, and five of them per operation were 0.03-0.05 µs
        // of a 1 µs pread.
        var histogram = worker.histogram
        worker.histogram = Histogram(
            lowestDiscernibleValue: 1,
            highestTrackableValue: 2,
            numberOfSignificantValueDigits: .one
        )
        var operations = worker.operations
        var totalBytes = worker.bytes
        var sink = worker.sink
        var random = worker.random
        var roundStart: UInt64 = 0
        var roundEnd: UInt64 = 0
        var roundUntimed: UInt64 = 0
        defer {
            worker.histogram = histogram
            worker.operations = operations
            worker.bytes = totalBytes
            worker.sink = sink
            worker.random = random
            worker.roundStart = roundStart
            worker.roundEnd = roundEnd
            worker.roundUntimed = roundUntimed
        }
        let reader = benchmark.reader
        let buffer = worker.buffer
        // Each thread starts at its own place in the file list, so threads do not read the same file at once.
        let start = targets.count * worker.threadIndex / max(1, benchCase.threads)
        do {
            // One clock read per operation: an operation begins when the one before it ended (the loop's
            // own few instructions between them count, as in any back-to-back timing), except after an
            // untimed pause, which reads the clock again. Two reads per operation were 4-5% of a 1 µs pread.
            var previousEnd: UInt64 = 0
            while true {
                let number = counter.take()
                if number >= limit { break }
                let began = previousEnd != 0 ? previousEnd : now()
                if roundStart == 0 { roundStart = began }
                let (bytes, block) = try operate(
                    number,
                    from: start,
                    handles: handles,
                    reader: reader,
                    buffer: buffer,
                    random: &random,
                    sink: &sink
                )
                let ended = now()
                roundEnd = ended
                histogram.record(max(1, ended - began))
                operations += 1
                totalBytes += bytes
                if ended >= deadline { break }
                previousEnd = ended
                if dropsEachBlock, let (index, offset) = block {
                    drop(handles, index: index, offset: offset)
                    previousEnd = now()
                    roundUntimed += previousEnd - ended
                }
            }
        } catch {
            worker.error = error
        }
    }

    /// Does operation `number` of the case's pattern; returns the bytes read and, for random, which block.
    @inline(__always)
    private func operate(
        _ number: Int,
        from start: Int,
        handles: RoundHandles,
        reader: AssetPackReader,
        buffer: UnsafeMutableRawBufferPointer,
        random: inout SplitMix64,
        sink: inout UInt64
    ) throws -> (bytes: Int, block: (index: Int, offset: Int)?) {
        var bytes = 0
        var block: (index: Int, offset: Int)?
        switch benchCase.pattern {
        case .lookup:
            let target = targets[(start + number) % targets.count]
            let holder =
                try target.pack.map { pack in
                    _ = try reader.installedFile(at: target.namespacePath, searchingInAssetPackWithID: pack)
                    return pack
                } ?? reader.assetPackID(containing: target.namespacePath)
            if holder == nil {
                throw AssetPackClientError(
                    code: .fileNotFound,
                    message: "\(target.path) vanished during the benchmark"
                )
            }
        case .sequential:
            let target = targets[(start + number) % targets.count]
            bytes = try readWhole(target, reader: reader, buffer: buffer, sink: &sink)
        case .firstByte:
            let target = targets[(start + number) % targets.count]
            bytes = try readFirstPage(target, reader: reader, buffer: buffer, sink: &sink)
        case .random:
            (bytes, block) = try readRandomBlock(handles: handles, random: &random, buffer: buffer, sink: &sink)
        }
        return (bytes, block)
    }

    private func readWhole(
        _ target: ReadBenchmark.Target,
        reader: AssetPackReader,
        buffer: UnsafeMutableRawBufferPointer,
        sink: inout UInt64
    ) throws -> Int {
        switch benchCase.method {
        case .contents, .copy, .none:
            let data = try wholeFile(target, reader: reader)
            data.withUnsafeBytes { sink &+= checksum($0) }
            return data.count
        case .descriptor:
            let fd = try reader.descriptor(for: target.namespacePath, searchingInAssetPackWithID: target.pack)
            defer { try? fd.close() }
            var total = 0
            while true {
                let count = try read(fd, into: buffer, at: nil, target.file)
                if count == 0 { return total }
                sink &+= checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                total += count
            }
        }
    }

    /// `contents(at:)` of the target: mapped, or a copy for the `copy` method.
    private func wholeFile(_ target: ReadBenchmark.Target, reader: AssetPackReader) throws -> Data {
        try reader.contents(
            at: target.namespacePath,
            searchingInAssetPackWithID: target.pack,
            options: benchCase.method == .copy ? [] : .mappedIfSafe
        )
    }

    private func readFirstPage(
        _ target: ReadBenchmark.Target,
        reader: AssetPackReader,
        buffer: UnsafeMutableRawBufferPointer,
        sink: inout UInt64
    ) throws -> Int {
        // The same for every method: open, the first page (4 KiB or the whole file if smaller), close.
        switch benchCase.method {
        case .contents, .none:
            let data = try wholeFile(target, reader: reader)
            let page = min(4096, data.count)
            data.withUnsafeBytes { sink &+= checksum(UnsafeRawBufferPointer(rebasing: $0[0..<page])) }
            return page
        case .copy:
            // Into fresh memory, as a copying read puts it.
            let fd = try reader.descriptor(for: target.namespacePath, searchingInAssetPackWithID: target.pack)
            defer { try? fd.close() }
            var copy = Data(count: 4096)
            let count = try copy.withUnsafeMutableBytes { try read(fd, into: $0, at: 0, target.file) }
            if count > 0 { sink &+= UInt64(copy[0]) }
            return count
        case .descriptor:
            let fd = try reader.descriptor(for: target.namespacePath, searchingInAssetPackWithID: target.pack)
            defer { try? fd.close() }
            let page = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<4096])
            let count = try read(fd, into: page, at: 0, target.file)
            if count > 0 { sink &+= UInt64(buffer[0]) }
            return count
        }
    }

    /// Drops the pages of the block just read from the page cache (and from the round's mapping).
    private func drop(_ handles: RoundHandles, index: Int, offset: Int) {
        guard let block = benchCase.block else { return }
        if benchCase.method == .contents {
            let start = offset / pageSize * pageSize
            handles.mappings[index].withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress else { return }
                _ = madvise(UnsafeMutableRawPointer(mutating: base + start), offset + block - start, MADV_DONTNEED)
            }
        }
        handles.descriptors[index].advise(.dontNeed, offset: Int64(offset), length: Int64(block))
    }

    /// Reads a random block. - Returns: The bytes read, and which file and offset.
    private func readRandomBlock(
        handles: RoundHandles,
        random: inout SplitMix64,
        buffer: UnsafeMutableRawBufferPointer,
        sink: inout UInt64
    ) throws -> (Int, (index: Int, offset: Int)?) {
        guard let block = benchCase.block, let totalBlocks = blockEnds.last, totalBlocks > 0 else { return (0, nil) }
        let pick = Int(random.next() % UInt64(totalBlocks))
        var low = 0
        var high = blockEnds.count - 1
        while low < high {
            let middle = (low + high) / 2
            if blockEnds[middle] > pick { high = middle } else { low = middle + 1 }
        }
        let firstBlock = low == 0 ? 0 : blockEnds[low - 1]
        let offset = (pick - firstBlock) * block
        switch benchCase.method {
        case .contents, .none:
            handles.mappings[low].withUnsafeBytes { bytes in
                sink &+= checksum(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + block]))
            }
            return (block, (low, offset))
        case .descriptor:
            let count = try read(
                handles.descriptors[low],
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<block]),
                at: offset,
                targets[low].file
            )
            return (count, (low, offset))
        case .copy:
            var copy = Data(count: block)
            let count = try copy.withUnsafeMutableBytes { bytes in
                try read(handles.descriptors[low], into: bytes, at: offset, targets[low].file)
            }
            sink &+= UInt64(copy.count)
            return (count, (low, offset))
        }
    }

    /// One read; the file is named only when it fails (the random pattern passes `targets[i].file`, and a copy
    /// of the target per read retained and released its strings: about 1% of a 1.3 µs read).
    private func read(
        _ fd: FileDescriptor,
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int?,
        _ file: @autoclosure () -> FilePath
    ) throws -> Int {
        do {
            if let offset {
                return try fd.read(fromAbsoluteOffset: Int64(offset), into: buffer, retryOnInterrupt: true)
            }
            return try fd.read(into: buffer, retryOnInterrupt: true)
        } catch {
            throw AssetPackClientError.io("read", file(), error)
        }
    }
}

/// The memory page size, read once.
private let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))

/// Sums the bytes as 64-bit words, so that every byte is loaded (and the compiler vectorises the loop).
@inline(__always)
private func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
    guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
    let words = bytes.count / 8
    var sum: UInt64 = 0
    if Int(bitPattern: base) % 8 == 0 {
        let buffer = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt64.self), count: words)
        for word in buffer { sum &+= word }
    } else {
        for index in 0..<words { sum &+= bytes.loadUnaligned(fromByteOffset: index * 8, as: UInt64.self) }
    }
    for index in (words * 8)..<bytes.count { sum &+= UInt64(bytes[index]) }
    return sum
}

/// CLOCK_MONOTONIC in nanoseconds.
@inline(__always)
func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}

import AssetPackFormat
import Foundation
import Histogram
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Measures reads from installed packs the ways Apple's API offers them: `contents(at:)` (a mapping),
/// `descriptor(for:)` (pread/read) and a copying read (`Data(contentsOf:)` without mapping).
///
/// A benchmark runs one case per combination of read method, pattern, block size and cache state. Each case
/// runs in rounds: a round reads every selected file once (sequential, first byte, lookup) or draws
/// `max(16384, files)` random blocks per thread. A cold round first drops the files' pages from the page cache
/// with `posix_fadvise(POSIX_FADV_DONTNEED)` (no root needed; pages mapped by another process stay); a warm
/// case first reads every file once, untimed. Latencies go into an HDR histogram per thread (nanoseconds,
/// 3 significant digits), merged at the end.
public struct ReadBenchmark: Sendable {
    /// How a file is read.
    public enum Method: String, CaseIterable, Sendable, Codable {
        /// `contents(at:)`: a memory mapping; the benchmark sums its bytes.
        case contents
        /// `descriptor(for:)`: `read`/`pread` into a reused buffer.
        case descriptor
        /// `contents(at:options: [])`: a copy in fresh memory (whole files), or a fresh buffer per block.
        case copy
    }

    /// What is read.
    public enum Pattern: String, CaseIterable, Sendable, Codable {
        /// Every file whole, one after another (one operation = one file).
        case sequential
        /// Random aligned blocks of `block` bytes, uniform over the bytes of the files at least that large.
        case random
        /// Open, read the first page (4 KiB or less), close; with `copy`, the whole-file copy it costs.
        case firstByte = "first-byte"
        /// Resolve a path in the merged namespace only (no file is opened); method and cache do not apply.
        case lookup
    }

    /// Whether the files' pages are in the page cache when timed.
    public enum Cache: String, CaseIterable, Sendable, Codable {
        case warm, cold
    }

    /// What to run.
    public struct Options: Sendable {
        /// The read methods to compare.
        public var methods: [Method] = Method.allCases
        /// The patterns to run.
        public var patterns: [Pattern] = Pattern.allCases
        /// The cache states to run.
        public var caches: [Cache] = Cache.allCases
        /// Block sizes of the random pattern, in bytes.
        public var blockSizes: [Int] = [4096, 65536]
        /// Threads reading at once.
        public var threads = 1
        /// How long each case runs; ignored when `iterations` is set.
        public var duration: Duration = .seconds(1)
        /// Operations per case (over all threads), instead of a duration.
        public var iterations: Int?
        /// Seed of the random block choice.
        public var seed: UInt64 = 1

        /// The defaults: every method, pattern and cache state, 4 KiB and 64 KiB blocks, 1 thread, 1 s.
        public init() {}
    }

    /// One case: what was run.
    public struct Case: Sendable, Hashable, Codable, CustomStringConvertible {
        /// `nil` for lookups.
        public var method: Method?
        public var pattern: Pattern
        /// `nil` for lookups.
        public var cache: Cache?
        /// Block size of the random pattern, else `nil`.
        public var block: Int?
        public var threads: Int

        public var description: String {
            var words = [method?.rawValue ?? "namespace", pattern.rawValue]
            if let block { words.append(ByteFormat.string(Int64(block))) }
            if let cache { words.append(cache.rawValue) }
            if threads > 1 { words.append("\(threads) threads") }
            return words.joined(separator: " ")
        }
    }

    /// Latency percentiles of a case, in microseconds.
    public struct Latency: Sendable, Codable {
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double
        public var max: Double
        public var mean: Double
    }

    /// What one case measured.
    public struct Result: Sendable, Codable {
        public var benchCase: Case
        /// Operations timed (files read, blocks read or lookups).
        public var operations: Int
        /// Bytes read by the timed operations.
        public var bytes: Int
        /// Time spent in timed rounds (page drops and warm-ups excluded), in seconds.
        public var seconds: Double
        /// Bytes per second / 1e6.
        public var megabytesPerSecond: Double { seconds > 0 ? Double(bytes) / seconds / 1e6 : 0 }
        /// Operations per second.
        public var operationsPerSecond: Double { seconds > 0 ? Double(operations) / seconds : 0 }
        public var latency: Latency

        enum CodingKeys: String, CodingKey {
            case method, pattern, cache, block, threads, operations, bytes, seconds
            case megabytesPerSecond, operationsPerSecond, latencyMicroseconds
        }

        public init(benchCase: Case, operations: Int, bytes: Int, seconds: Double, latency: Latency) {
            self.benchCase = benchCase
            self.operations = operations
            self.bytes = bytes
            self.seconds = seconds
            self.latency = latency
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            benchCase = Case(
                method: try container.decodeIfPresent(Method.self, forKey: .method),
                pattern: try container.decode(Pattern.self, forKey: .pattern),
                cache: try container.decodeIfPresent(Cache.self, forKey: .cache),
                block: try container.decodeIfPresent(Int.self, forKey: .block),
                threads: try container.decode(Int.self, forKey: .threads)
            )
            operations = try container.decode(Int.self, forKey: .operations)
            bytes = try container.decode(Int.self, forKey: .bytes)
            seconds = try container.decode(Double.self, forKey: .seconds)
            latency = try container.decode(Latency.self, forKey: .latencyMicroseconds)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(benchCase.method, forKey: .method)
            try container.encode(benchCase.pattern, forKey: .pattern)
            try container.encode(benchCase.cache, forKey: .cache)
            try container.encode(benchCase.block, forKey: .block)
            try container.encode(benchCase.threads, forKey: .threads)
            try container.encode(operations, forKey: .operations)
            try container.encode(bytes, forKey: .bytes)
            try container.encode(seconds, forKey: .seconds)
            try container.encode(megabytesPerSecond, forKey: .megabytesPerSecond)
            try container.encode(operationsPerSecond, forKey: .operationsPerSecond)
            try container.encode(latency, forKey: .latencyMicroseconds)
        }
    }

    /// A file the benchmark reads.
    public struct Target: Sendable {
        /// Its path in the merged namespace.
        public var path: String
        /// The installed file.
        public var file: FilePath
        public var size: Int
    }

    /// The files read, in namespace order.
    public let targets: [Target]
    public let options: Options
    fileprivate let manager: AssetPackManager

    /// Selects the files to read.
    /// - Parameters:
    ///   - manager: The app group's manager.
    ///   - paths: Namespace paths; empty for every file of `assetPackID`, or of every installed pack.
    ///   - assetPackID: Read this pack only.
    ///   - options: What to run.
    /// - Throws: ``AssetPackClientError``: `.fileNotFound` for a path that is not installed,
    ///   `.assetPackNotFound` for a pack that is not, or when nothing is installed.
    public init(
        manager: AssetPackManager,
        paths: [FilePath] = [],
        assetPackID: String? = nil,
        options: Options = Options()
    ) throws {
        self.manager = manager
        self.options = options
        let view = try manager.currentNamespace()
        if let assetPackID, view.installed[assetPackID] == nil {
            throw AssetPackClientError(
                code: .assetPackNotFound,
                message:
                    "pack \(assetPackID) is not installed in \(manager.store.root). Fix: `ba-sync ensure \(assetPackID)`",
                assetPackID: assetPackID
            )
        }
        var names: [String]
        if paths.isEmpty {
            names = view.files.compactMap { path, holders in
                assetPackID == nil || holders.contains(assetPackID ?? "") ? path : nil
            }
            names.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        } else {
            names = try paths.map { try namespacePath($0) }
        }
        var targets: [Target] = []
        for name in names {
            guard let (_, file) = view.resolve(name, in: assetPackID, root: manager.store.root) else {
                throw AssetPackClientError(
                    code: .fileNotFound,
                    message:
                        "\(name) is not in \(assetPackID.map { "pack \($0)" } ?? "any installed pack"). Fix: `ba-sync status` lists installed packs",
                    assetPackID: assetPackID
                )
            }
            var info = stat()
            guard stat(file.string, &info) == 0 else {
                throw AssetPackClientError.io("stat", file, Errno(rawValue: errno))
            }
            targets.append(Target(path: name, file: file, size: Int(info.st_size)))
        }
        guard !targets.isEmpty else {
            throw AssetPackClientError(
                code: .fileNotFound,
                message: "no installed files to read in \(manager.store.root). Fix: `ba-sync ensure ID` first"
            )
        }
        self.targets = targets
    }

    /// The cases ``run(progress:)`` runs, in order. A random block larger than every file is left out.
    public var cases: [Case] {
        var cases: [Case] = []
        let largest = targets.map(\.size).max() ?? 0
        for pattern in options.patterns {
            if pattern == .lookup {
                cases.append(Case(method: nil, pattern: .lookup, cache: nil, block: nil, threads: options.threads))
                continue
            }
            for method in options.methods {
                for cache in options.caches {
                    if pattern == .random {
                        for block in options.blockSizes where block <= largest {
                            cases.append(
                                Case(
                                    method: method,
                                    pattern: pattern,
                                    cache: cache,
                                    block: block,
                                    threads: options.threads
                                )
                            )
                        }
                    } else {
                        cases.append(
                            Case(method: method, pattern: pattern, cache: cache, block: nil, threads: options.threads)
                        )
                    }
                }
            }
        }
        return cases
    }

    /// Runs every case.
    /// - Parameter progress: Called before each case with the case, its index from 0 and the number of cases.
    /// - Returns: One result per case, in ``cases`` order.
    /// - Throws: ``AssetPackClientError`` when a file cannot be read (removed or updated underneath).
    public func run(progress: (Case, Int, Int) -> Void = { _, _, _ in }) throws -> [Result] {
        let cases = self.cases
        guard !cases.isEmpty else {
            throw AssetPackClientError(
                code: .fileNotFound,
                message:
                    "every file is smaller than the --block size (largest: \(ByteFormat.string(Int64(targets.map(\.size).max() ?? 0))))"
            )
        }
        var results: [Result] = []
        for (index, benchCase) in cases.enumerated() {
            progress(benchCase, index, cases.count)
            results.append(try run(benchCase))
        }
        return results
    }

    /// Runs one case.
    public func run(_ benchCase: Case) throws -> Result {
        // The duration is timed time: warm-up reads and page drops do not use it up.
        let budget = options.iterations == nil ? UInt64(nanoseconds(options.duration)) : UInt64.max
        var remaining = options.iterations ?? Int.max
        let threads = max(1, benchCase.threads)
        let plan = try RoundPlan(benchmark: self, benchCase: benchCase)
        if benchCase.cache == .warm { try warm() }
        // Each thread's buffer, histogram and random generator live across rounds, made and touched
        // before anything is timed.
        let workers = (0..<threads).map { Worker(thread: $0, block: benchCase.block, seed: options.seed) }
        var elapsed: UInt64 = 0
        repeat {
            if benchCase.cache == .cold { try dropPages() }
            let deadline = budget == UInt64.max ? UInt64.max : now() + (budget - elapsed)
            let handles = try plan.open()
            let roundOperations = min(remaining, plan.operationsPerRound * threads)
            let counter = Counter()
            if threads == 1 {
                // On the calling thread: with a second thread merely waiting, every munmap of a
                // contents(at:) mapping paid a TLB-shootdown IPI to the other core.
                plan.work(workers[0], handles: handles, counter: counter, limit: roundOperations, deadline: deadline)
            } else {
                runOnThreadsOfTheirOwn(threads) { thread in
                    plan.work(
                        workers[thread],
                        handles: handles,
                        counter: counter,
                        limit: roundOperations,
                        deadline: deadline
                    )
                }
            }
            handles.close()
            for worker in workers { if let error = worker.error { throw error } }
            // The round's time runs from the first operation to the last: thread start-up is not timed.
            let busy = workers.filter { $0.roundEnd > 0 }
            if let start = busy.map(\.roundStart).min(), let end = busy.map(\.roundEnd).max() { elapsed += end - start }
            remaining -= roundOperations
        } while remaining > 0 && elapsed < budget
        var histogram = workers[0].histogram
        for worker in workers.dropFirst() { histogram.add(worker.histogram) }
        let operations = workers.reduce(0) { $0 + $1.operations }
        let bytes = workers.reduce(0) { $0 + $1.bytes }
        let sink = workers.reduce(UInt64(0)) { $0 ^ $1.sink }
        ReadBenchmark.keep(sink)
        let micro = { (value: UInt64) in Double(value) / 1000 }
        return Result(
            benchCase: benchCase,
            operations: operations,
            bytes: bytes,
            seconds: Double(elapsed) / 1e9,
            latency: Latency(
                p50: micro(histogram.valueAtPercentile(50)),
                p90: micro(histogram.valueAtPercentile(90)),
                p99: micro(histogram.valueAtPercentile(99)),
                p999: micro(histogram.valueAtPercentile(99.9)),
                max: micro(histogram.max),
                mean: histogram.mean / 1000
            )
        )
    }

    /// Reads every file once so that a warm case starts warm (pages idle for a while are paged out).
    private func warm() throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        for target in targets {
            let fd = try openFile(target.file)
            defer { try? fd.close() }
            while try buffer.withUnsafeMutableBytes({ try fd.read(into: $0, retryOnInterrupt: true) }) > 0 {}
        }
    }

    /// Drops the files' pages from the page cache.
    private func dropPages() throws {
        for target in targets {
            let fd = try openFile(target.file)
            _ = posix_fadvise(fd.rawValue, 0, 0, Int32(POSIX_FADV_DONTNEED))
            try? fd.close()
        }
    }

    fileprivate func openFile(_ file: FilePath) throws -> FileDescriptor {
        do {
            return try FileDescriptor.open(file, .readOnly, retryOnInterrupt: true)
        } catch {
            throw AssetPackClientError.io("open", file, error)
        }
    }

    @inline(never)
    private static func keep(_ value: UInt64) {
        if value == 0x5eed_5eed_5eed_5eed { print("") }
    }
}

// MARK: - Rounds

/// One thread's state across the rounds of a case; only its own thread touches it during a round.
private final class Worker: @unchecked Sendable {
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
private final class Counter: Sendable {
    private let next = Atomic<Int>(0)
    func take() -> Int { next.wrappingAdd(1, ordering: .relaxed).oldValue }
}

/// Files opened (random pattern) for a round, shared by its threads.
private struct RoundHandles: Sendable {
    var mappings: [Data] = []
    var descriptors: [FileDescriptor] = []

    func close() {
        for fd in descriptors { try? fd.close() }
    }
}

/// How the operations of a case are done.
private struct RoundPlan: Sendable {
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

    func open() throws -> RoundHandles {
        guard benchCase.pattern == .random else { return RoundHandles() }
        var handles = RoundHandles()
        do {
            for target in targets {
                if benchCase.method == .contents {
                    handles.mappings.append(try benchmark.manager.contents(at: FilePath(target.path)))
                } else {
                    handles.descriptors.append(try benchmark.openFile(target.file))
                }
            }
        } catch {
            handles.close()
            throw error
        }
        return handles
    }

    func work(_ worker: Worker, handles: RoundHandles, counter: Counter, limit: Int, deadline: UInt64) {
        worker.roundStart = 0
        worker.roundEnd = 0
        let manager = benchmark.manager
        let buffer = worker.buffer
        // Each thread starts at its own place in the file list, so threads do not read the same file at once.
        let start = targets.count * worker.threadIndex / max(1, benchCase.threads)
        do {
            while true {
                let number = counter.take()
                if number >= limit { break }
                let began = now()
                if worker.roundStart == 0 { worker.roundStart = began }
                var bytes = 0
                switch benchCase.pattern {
                case .lookup:
                    let target = targets[(start + number) % targets.count]
                    if try manager.assetPackID(containing: FilePath(target.path)) == nil {
                        throw AssetPackClientError(
                            code: .fileNotFound,
                            message: "\(target.path) vanished during the benchmark"
                        )
                    }
                case .sequential:
                    let target = targets[(start + number) % targets.count]
                    bytes = try readWhole(target, manager: manager, buffer: buffer, sink: &worker.sink)
                case .firstByte:
                    let target = targets[(start + number) % targets.count]
                    bytes = try readFirstPage(target, manager: manager, buffer: buffer, sink: &worker.sink)
                case .random:
                    bytes = try readRandomBlock(
                        handles: handles,
                        random: &worker.random,
                        buffer: buffer,
                        sink: &worker.sink
                    )
                }
                let ended = now()
                worker.roundEnd = ended
                worker.histogram.record(max(1, ended - began))
                worker.operations += 1
                worker.bytes += bytes
                if ended >= deadline { break }
            }
        } catch {
            worker.error = error
        }
    }

    private func readWhole(
        _ target: ReadBenchmark.Target,
        manager: AssetPackManager,
        buffer: UnsafeMutableRawBufferPointer,
        sink: inout UInt64
    ) throws -> Int {
        switch benchCase.method {
        case .contents, .copy, .none:
            let data = try wholeFile(target, manager: manager)
            data.withUnsafeBytes { sink &+= checksum($0) }
            return data.count
        case .descriptor:
            let fd = try manager.descriptor(for: FilePath(target.path))
            defer { try? fd.close() }
            var total = 0
            while true {
                let count = try read(fd, into: buffer, at: nil, target)
                if count == 0 { return total }
                sink &+= checksum(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                total += count
            }
        }
    }

    /// `contents(at:)` of the target: mapped, or a copy for the `copy` method.
    private func wholeFile(_ target: ReadBenchmark.Target, manager: AssetPackManager) throws -> Data {
        try manager.contents(
            at: FilePath(target.path),
            options: benchCase.method == .copy ? [] : .mappedIfSafe
        )
    }

    private func readFirstPage(
        _ target: ReadBenchmark.Target,
        manager: AssetPackManager,
        buffer: UnsafeMutableRawBufferPointer,
        sink: inout UInt64
    ) throws -> Int {
        switch benchCase.method {
        case .contents, .copy, .none:
            // A copying read has no cheaper way to the first byte than the copy of the whole file.
            let data = try wholeFile(target, manager: manager)
            if let first = data.first { sink &+= UInt64(first) }
            return benchCase.method == .copy ? data.count : min(1, data.count)
        case .descriptor:
            let fd = try manager.descriptor(for: FilePath(target.path))
            defer { try? fd.close() }
            let count = try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<4096]), at: 0, target)
            if count > 0 { sink &+= UInt64(buffer[0]) }
            return count
        }
    }

    private func readRandomBlock(
        handles: RoundHandles,
        random: inout SplitMix64,
        buffer: UnsafeMutableRawBufferPointer,
        sink: inout UInt64
    ) throws -> Int {
        guard let block = benchCase.block, let totalBlocks = blockEnds.last, totalBlocks > 0 else { return 0 }
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
            return block
        case .descriptor:
            return try read(
                handles.descriptors[low],
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<block]),
                at: offset,
                targets[low]
            )
        case .copy:
            var copy = Data(count: block)
            let count = try copy.withUnsafeMutableBytes { bytes in
                try read(handles.descriptors[low], into: bytes, at: offset, targets[low])
            }
            sink &+= UInt64(copy.count)
            return count
        }
    }

    private func read(
        _ fd: FileDescriptor,
        into buffer: UnsafeMutableRawBufferPointer,
        at offset: Int?,
        _ target: ReadBenchmark.Target
    ) throws -> Int {
        do {
            if let offset {
                return try fd.read(fromAbsoluteOffset: Int64(offset), into: buffer, retryOnInterrupt: true)
            }
            return try fd.read(into: buffer, retryOnInterrupt: true)
        } catch {
            throw AssetPackClientError.io("read", target.file, error)
        }
    }
}

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
private func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
}

private func nanoseconds(_ duration: Duration) -> Int64 {
    let (seconds, attoseconds) = duration.components
    return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
}

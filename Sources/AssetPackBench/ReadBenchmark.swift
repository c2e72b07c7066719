import AssetPackClient
import AssetPackFormat
import Foundation
import Histogram
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Measures reads from installed packs the ways Apple's API offers them: `contents(at:)` (a mapping),
/// `descriptor(for:)` (pread/read) and a copying read (whole files through `contents(at:options: [])`, blocks
/// and first pages read into fresh memory).
///
/// A benchmark runs one case per combination of read method, pattern, block size and cache state. Each case
/// runs in rounds: a round reads every selected file once (sequential, first byte, lookup) or draws
/// `max(16384, files)` random blocks per thread. A cold round first drops the files' pages from the page cache
/// with `posix_fadvise(POSIX_FADV_DONTNEED)` (no root needed; pages mapped by another process stay), and a
/// cold random case also turns read-ahead off and drops each block after reading it, untimed; a warm
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
        /// Open, read the first page (4 KiB, or the whole file if smaller), close: the same bytes for every
        /// method (`copy` reads them into fresh memory).
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
        /// Times each case runs; the result is the run with the median operations per second, and the
        /// spread of all of them is reported.
        public var repeats = 1

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
        /// How the repeats of the case spread (`--repeat`), or `nil` for one run.
        public var spread: Spread?
        /// The latencies of the reported run, in nanoseconds (not in JSON; `--histogram` writes them).
        public var histogram: Histogram<UInt64>?
        /// The latency at the percentiles `--html` plots (JSON `latencyDistribution`), or `nil` in a report
        /// saved by an older version.
        public var distribution: [LatencyPoint]?

        enum CodingKeys: String, CodingKey {
            case method, pattern, cache, block, threads, operations, bytes, seconds
            case megabytesPerSecond, operationsPerSecond, latencyMicroseconds, spread, latencyDistribution
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
            spread = try container.decodeIfPresent(Spread.self, forKey: .spread)
            distribution = try container.decodeIfPresent([LatencyPoint].self, forKey: .latencyDistribution)
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
            try container.encodeIfPresent(spread, forKey: .spread)
            try container.encodeIfPresent(distribution, forKey: .latencyDistribution)
        }
    }

    /// A file the benchmark reads.
    public struct Target: Sendable {
        /// Its path in the merged namespace.
        public var path: String
        /// The same path as the reads take it, made once, outside the timed loop.
        public var namespacePath: FilePath
        /// The installed file.
        public var file: FilePath
        public var size: Int
        /// The pack a read names (`--pack`), or `nil` to read through the namespace's rules.
        public var pack: String?
    }

    /// The files read, in namespace order.
    public let targets: [Target]
    public let options: Options
    /// The app group's reads.
    let reader: AssetPackReader

    /// Selects the files to read.
    /// - Parameters:
    ///   - reader: The app group's reads.
    ///   - paths: Namespace paths; empty for every file of `assetPackID`, or of every installed pack.
    ///   - assetPackID: Read this pack only.
    ///   - options: What to run.
    /// - Throws: ``AssetPackClientError``: `.fileNotFound` for a path that is not installed,
    ///   `.assetPackNotFound` for a pack that is not, or when nothing is installed.
    public init(
        reader: AssetPackReader,
        paths: [FilePath] = [],
        assetPackID: String? = nil,
        options: Options = Options()
    ) throws {
        self.reader = reader
        self.options = options
        let names = paths.isEmpty ? try reader.paths(inAssetPackWithID: assetPackID) : paths.map(\.string)
        var targets: [Target] = []
        for name in names {
            let file = try reader.installedFile(at: FilePath(name), searchingInAssetPackWithID: assetPackID)
            var info = stat()
            guard stat(file.string, &info) == 0 else {
                throw AssetPackClientError.io("stat", file, Errno(rawValue: errno))
            }
            targets.append(
                Target(
                    path: name,
                    namespacePath: FilePath(name),
                    file: file,
                    size: Int(info.st_size),
                    pack: assetPackID
                )
            )
        }
        guard !targets.isEmpty else {
            throw AssetPackClientError(
                code: .fileNotFound,
                message: "no installed files to read in \(reader.store.root). Fix: `ba-sync ensure ID` first"
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
            var runs: [Result] = []
            for _ in 0..<max(1, options.repeats) { runs.append(try run(benchCase)) }
            results.append(Result(median: runs))
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
                BlockingIO.longJobs(threads) { thread in
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
            // Keeping a cold case cold between operations is not reading: the least any thread spent on it is
            // taken off (all of it with one thread).
            let busy = workers.filter { $0.roundEnd > 0 }
            if let start = busy.map(\.roundStart).min(), let end = busy.map(\.roundEnd).max() {
                elapsed += end - start - min(end - start, busy.map(\.roundUntimed).min() ?? 0)
            }
            remaining -= roundOperations
        } while remaining > 0 && elapsed < budget
        var histogram = workers[0].histogram
        for worker in workers.dropFirst() { histogram.add(worker.histogram) }
        let operations = workers.reduce(0) { $0 + $1.operations }
        let bytes = workers.reduce(0) { $0 + $1.bytes }
        let sink = workers.reduce(UInt64(0)) { $0 ^ $1.sink }
        ReadBenchmark.keep(sink)
        var result = Result(
            benchCase: benchCase,
            operations: operations,
            bytes: bytes,
            seconds: Double(elapsed) / 1e9,
            latency: Latency(histogram)
        )
        result.histogram = histogram
        result.distribution = Self.distribution(of: histogram)
        return result
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
            fd.advise(.dontNeed)
            try? fd.close()
        }
    }

    func openFile(_ file: FilePath) throws -> FileDescriptor {
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

import ArgumentParser
import AssetPackBench
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure reads of installed files the three ways AssetPackManager offers (offline).",
        discussion: """
            Runs one case per method × pattern × cache state (× block size for random reads) and reports \
            MB/s, operations/s and latency percentiles from a histogram of every operation.
            Methods: contents (contents(at:), a memory mapping, every byte summed), descriptor \
            (descriptor(for:), read/pread into a reused buffer), copy (contents(at:options: []), a copy in \
            fresh memory).
            Patterns: sequential (whole files), random (aligned blocks, uniform over the bytes), first-byte \
            (open, first page, close), lookup (a path in the merged namespace, nothing opened).
            Cold rounds drop the files' pages first (posix_fadvise DONTNEED, no root needed); warm cases \
            read every file once, untimed, first.
            Units: \(ReadBenchmark.units). \
            The first line (and --json's "environment") says what ran: tool, debug or release build, kernel, \
            file system, CPU, seed, length. A case of fewer than 100 operations is flagged: its high \
            percentiles are a handful of samples.
            For CI: save a run with --json, then compare later runs with --baseline FILE: the change of each \
            case's operations per second is printed, and the command exits 1 when a case is slower by more \
            than --tolerance percent and more than its own noise (the spread of its --repeat runs, here or in \
            the baseline: repeat both runs 5 times so that the gate sees it). --html FILE writes the report as one HTML page to open offline.
            Examples:
              ba-sync bench --app-group /tmp/ag
              ba-sync bench --app-group /tmp/ag --pack Levels --method descriptor --pattern random --block 4k --threads 2 --json
              ba-sync bench --app-group /tmp/ag --repeat 5 --json > base.json
              ba-sync bench --app-group /tmp/ag --repeat 5 --baseline base.json --tolerance 15 --histogram now.hgrm
              ba-sync bench --app-group /tmp/ag --repeat 5 --baseline base.json --html report.html
            """
    )

    @OptionGroup var app: AppGroupOptions

    @Argument(help: "Namespace paths to read, e.g. Levels/World1/level.json; default: every installed file.")
    var paths: [String] = []

    @Option(help: "Read the files of this pack only. (default: every installed pack)")
    var pack: String?

    @Option(
        help: ArgumentHelp(
            "Read methods, comma-separated: contents, descriptor, copy. (default: all three)",
            valueName: "list"
        ),
        transform: { try list($0, ReadBenchmark.Method.init(rawValue:), "method") }
    )
    var method: [ReadBenchmark.Method] = ReadBenchmark.Method.allCases

    @Option(
        help: ArgumentHelp(
            "Patterns, comma-separated: sequential, random, first-byte, lookup. (default: all four)",
            valueName: "list"
        ),
        transform: { try list($0, ReadBenchmark.Pattern.init(rawValue:), "pattern") }
    )
    var pattern: [ReadBenchmark.Pattern] = ReadBenchmark.Pattern.allCases

    @Option(
        help: ArgumentHelp("Cache states, comma-separated: warm, cold. (default: both)", valueName: "list"),
        transform: { try list($0, ReadBenchmark.Cache.init(rawValue:), "cache state") }
    )
    var cache: [ReadBenchmark.Cache] = ReadBenchmark.Cache.allCases

    @Option(
        help: ArgumentHelp(
            "Block sizes of random reads, comma-separated, in bytes (k, m and g suffixes). (default: 4k,64k)",
            valueName: "list"
        ),
        transform: { try list($0, byteCount, "block size") }
    )
    var block: [Int] = [4096, 65536]

    @Option(help: "Threads reading at once.")
    var threads = 1

    @Option(help: "Seconds each case runs.")
    var duration: Double = 1

    @Option(help: "Operations per case instead of a duration (over all threads). (default: run for --duration)")
    var iterations: Int?

    @Option(help: "Seed of the random block choice.")
    var seed: UInt64 = 1

    @Option(name: .customLong("repeat"), help: "Runs of each case; the median run is shown with the spread of all.")
    var repeats = 1

    @Option(
        help: ArgumentHelp(
            "A report saved with --json to compare with: exits 1 when a case's operations per second fall by more than --tolerance and more than its own noise.",
            valueName: "file"
        )
    )
    var baseline: String?

    @Option(
        help: ArgumentHelp(
            "The slowdown against --baseline still accepted, in percent; a case whose --repeat runs (here or in the baseline) spread wider is held to its spread instead.",
            valueName: "percent"
        )
    )
    var tolerance: Double = 10

    @Option(
        help: ArgumentHelp(
            "Write each case's latency distribution to this file (HDR histogram .hgrm percentile tables, µs).",
            valueName: "file"
        )
    )
    var histogram: String?

    @Option(
        help: ArgumentHelp(
            "Write a self-contained HTML report to this file: the environment, throughput bars with the spread of --repeat, each case's latency percentile plot (cold and warm side by side, the --baseline dashed, slower cases marked in red).",
            valueName: "file"
        )
    )
    var html: String?

    @Flag(help: "CSV on stdout (a header row, then a row per case).")
    var csv = false

    @Flag(
        help:
            "Compare Apple's BackgroundAssets declarations (import BackgroundAssets) with the engine underneath on --pack's installed files: the first contents(at:) after ensureLocalAvailability(of:) in a fresh manager (20 rounds; the pack is local, so no server is asked), and contents(at:) with its first byte, back to back (--iterations calls per layer, default 20 000). The read options above do not apply."
    )
    var layers = false

    func validate() throws {
        guard threads >= 1 else { throw ValidationError("--threads must be 1 or more") }
        if let problem = secondsProblem(duration, option: "--duration", positive: true) {
            throw ValidationError(problem)
        }
        if let iterations, iterations < 1 { throw ValidationError("--iterations must be 1 or more") }
        guard block.allSatisfy({ $0 >= 1 }) else { throw ValidationError("--block sizes must be 1 byte or more") }
        guard !(csv && app.json) else { throw ValidationError("choose one of --csv and --json") }
        guard repeats >= 1 else { throw ValidationError("--repeat must be 1 or more") }
        guard tolerance >= 0, tolerance.isFinite else { throw ValidationError("--tolerance must be 0 or more") }
    }

    func run() async throws {
        if layers { return try await compareLayers() }
        var settings = ReadBenchmark.Options()
        settings.methods = method
        settings.patterns = pattern
        settings.caches = cache
        settings.blockSizes = block
        settings.threads = threads
        settings.duration = .seconds(duration)
        settings.iterations = iterations
        settings.seed = seed
        settings.repeats = repeats
        var request = ReadBenchmark.Request(options: settings, tool: "ba-sync \(BASync.configuration.version)")
        request.paths = paths.map { FilePath($0) }
        request.assetPackID = pack
        request.baselineFile = baseline.map { FilePath($0) }
        request.tolerance = tolerance
        request.histogramFile = histogram.map { FilePath($0) }
        request.htmlFile = html.map { FilePath($0) }
        try app.read { reader in
            let showProgress = !app.json && !csv && Console.stderrIsTerminal
            let report: ReadBenchmark.Report
            do {
                report = try ReadBenchmark.run(request, reader: reader) { benchCase, index, count in
                    if showProgress { Console.statusLine("[\(index + 1)/\(count)] \(benchCase)") }
                }
            } catch let error as AssetPackFormatError where error.code == .invalidOption {
                throw ValidationError(error.message)  // a baseline or a report file the user can fix
            }
            if showProgress { Console.statusLine(nil) }
            if ReadBenchmark.Environment.isDebugBuild && !app.json {
                Console.err("ba-sync bench: a DEBUG build; its numbers say little about a release build (make install)")
            }
            if app.json {
                Console.out(try report.json())
            } else if csv {
                for line in report.csvLines() { Console.out(line) }
            } else {
                show(report)
            }
            if report.baseline?.contains(where: \.regressed) == true { throw ExitCode.failure }
        }
    }

    private func compareLayers() async throws {
        guard let pack else {
            throw ValidationError("--layers needs --pack ID: the installed pack whose files both layers read")
        }
        var options = LayerBenchmark.Options()
        if let iterations { options.calls = iterations }
        let report: LayerBenchmark.Report
        do {
            report = try await LayerBenchmark.run(appGroup: try app.appGroupPath, assetPackID: pack, options: options)
        } catch {
            if app.json { Console.jsonError(error) }
            throw error
        }
        if app.json {
            Console.out(try report.json())
            return
        }
        if ReadBenchmark.Environment.isDebugBuild {
            Console.err("ba-sync bench: a DEBUG build; its numbers say little about a release build (make install)")
        }
        Console.out(
            "\(report.assetPackID): \(report.files) files, \(report.rounds) rounds, \(report.calls) calls per layer"
        )
        Console.table(report.tableRows())
        Console.out("ratio = BackgroundAssets / engine: what Apple's declarations cost here over the library")
    }

    private func show(_ report: ReadBenchmark.Report) {
        if let environment = report.environment {
            Console.out((environment.build == "debug" ? "DEBUG BUILD: " : "") + environment.summary)
        }
        Console.out("\(report.files) files, \(ByteFormat.string(Int64(report.bytes))), \(report.threads) thread(s)")
        Console.table(report.tableRows())
        Console.out(ReadBenchmark.units)
        for warning in report.warnings { Console.out("note: \(warning)") }
        if let comparisons = report.baseline {
            Console.out("")
            Console.out(
                "against \(baseline ?? "") (tolerance \(String(format: "%g", tolerance))%, or a case's noise when wider):"
            )
            Console.table(report.baselineRows())
            let slower = comparisons.filter(\.regressed).count
            if slower > 0 {
                Console.out(
                    "\(slower) case(s) slower than the baseline by more than their gate (the tolerance or their noise)"
                )
            }
        }
    }
}

/// `a,b,c` → values, or a usage error naming the bad item.
private func list<T>(_ text: String, _ make: (String) -> T?, _ what: String) throws -> [T] {
    switch listValues(text, make, what) {
    case .success(let values): return values
    case .failure(let error): throw ValidationError(error.description)
    }
}

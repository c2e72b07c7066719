import AssetPackFormat
import Foundation
import Histogram

extension ReadBenchmark {
    /// What `ba-sync bench --json` prints: the files read and a result per case.
    public struct Report: Sendable, Codable {
        /// `result`: the line a script waits for, as every `ba-sync --json` command ends with one.
        public var event = "result"
        /// Files read.
        public var files: Int
        /// Their total size in bytes.
        public var bytes: Int
        /// Threads per case.
        public var threads: Int
        /// What the run ran on and with (`nil` in a report saved by an older version).
        public var environment: Environment?
        public var results: [Result]
        /// Cases with fewer than ``ReadBenchmark/meaningfulOperations`` operations.
        public var warnings: [String] = []
        /// Each case against a saved run (`--baseline`), or `nil`.
        public var baseline: [Comparison]?

        /// Collects the results of a run.
        public init(benchmark: ReadBenchmark, results: [Result], environment: Environment? = nil) {
            self.init(
                files: benchmark.targets.count,
                bytes: benchmark.targets.reduce(0) { $0 + $1.size },
                threads: benchmark.options.threads,
                results: results,
                environment: environment
            )
        }

        /// Collects results measured over `files` files of `bytes` bytes in all.
        public init(files: Int, bytes: Int, threads: Int, results: [Result], environment: Environment? = nil) {
            self.files = files
            self.bytes = bytes
            self.threads = threads
            self.environment = environment
            self.results = results
            warnings = results.filter { $0.operations < ReadBenchmark.meaningfulOperations }.map {
                "\($0.benchCase): fewer than \(ReadBenchmark.meaningfulOperations) operations; its high percentiles "
                    + "are not meaningful (run longer, or more --iterations)"
            }
        }

        /// The results of a report a run saved with `--json` (for `--baseline`): only they are compared, so a
        /// report of an older version, without the fields added since, serves as well.
        public static func savedResults(_ data: Data) throws -> [Result] {
            struct Saved: Decodable { var results: [Result] }
            return try JSONDecoder().decode(Saved.self, from: data).results
        }

        /// The latency distribution of every case as HDR histogram percentile tables (`.hgrm`, in
        /// microseconds), each after a `# case` line: what HdrHistogram's plotter reads.
        public func histograms() -> String {
            var text = ""
            for result in results {
                guard let histogram = result.histogram else { continue }
                text += "# \(result.benchCase)\n"
                histogram.outputPercentileDistribution(to: &text, outputValueUnitScalingRatio: 1000)
                text += "\n"
            }
            return text
        }

        /// One JSON document (sorted keys).
        public func json() throws -> String {
            try JSONOutput.line(self)
        }

        /// A header row and a row per case, as a terminal table shows them.
        public func tableRows() -> [[String]] {
            let spread = results.contains { $0.spread != nil }
            var header = ["case", "ops", "MB/s", "ops/s", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs"]
            if spread { header += ["ops/s min–max", "p99 µs min–max"] }
            var rows = [header]
            for result in results {
                let moves = result.bytes > 0
                var row = [
                    result.benchCase.description, "\(result.operations)",
                    moves ? format(result.megabytesPerSecond) : "-", format(result.operationsPerSecond),
                    format(result.latency.p50), format(result.latency.p90), format(result.latency.p99),
                    format(result.latency.p999), format(result.latency.max),
                ]
                if spread {
                    row +=
                        result.spread.map { spread in
                            [
                                "\(format(spread.operationsPerSecondMin))–\(format(spread.operationsPerSecondMax))",
                                "\(format(spread.p99Min))–\(format(spread.p99Max))",
                            ]
                        } ?? ["-", "-"]
                }
                rows.append(row)
            }
            return rows
        }

        /// A header row and a row per case of the comparison with a baseline.
        public func baselineRows() -> [[String]] {
            var rows = [["case", "baseline ops/s", "ops/s", "change", "noise", "gate", ""]]
            for comparison in baseline ?? [] {
                rows.append(
                    [
                        comparison.benchCase, comparison.baselineOperationsPerSecond.map(format) ?? "-",
                        format(comparison.operationsPerSecond),
                        comparison.changePercent.map { String(format: "%+.1f%%", $0) } ?? "not in the baseline",
                        comparison.noisePercent.map { String(format: "%.1f%%", $0) } ?? "-",
                        String(format: "-%.1f%%", comparison.thresholdPercent),
                        comparison.regressed ? "SLOWER" : "",
                    ]
                )
            }
            return rows
        }

        /// A header line and a line per case.
        public func csvLines() -> [String] {
            var lines = [
                "method,pattern,cache,block,threads,operations,bytes,seconds,mb_per_s,ops_per_s,p50_us,p90_us,p99_us,p999_us,max_us,mean_us"
            ]
            for result in results {
                let benchCase = result.benchCase
                let cells: [String] = [
                    benchCase.method?.rawValue ?? "", benchCase.pattern.rawValue, benchCase.cache?.rawValue ?? "",
                    benchCase.block.map(String.init) ?? "", "\(benchCase.threads)", "\(result.operations)",
                    "\(result.bytes)", String(format: "%.6f", result.seconds),
                    String(format: "%.1f", result.megabytesPerSecond),
                    String(format: "%.1f", result.operationsPerSecond),
                    String(format: "%.3f", result.latency.p50), String(format: "%.3f", result.latency.p90),
                    String(format: "%.3f", result.latency.p99), String(format: "%.3f", result.latency.p999),
                    String(format: "%.3f", result.latency.max), String(format: "%.3f", result.latency.mean),
                ]
                lines.append(cells.joined(separator: ","))
            }
            return lines
        }

        /// Three significant digits, no exponent: 0.123, 12.3, 1234.
        private func format(_ value: Double) -> String {
            if value >= 100 { return String(format: "%.0f", value) }
            if value >= 10 { return String(format: "%.1f", value) }
            if value >= 1 { return String(format: "%.2f", value) }
            return String(format: "%.3f", value)
        }
    }
}

import AssetPackFormat
import Foundation

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
        public var results: [Result]

        /// Collects the results of a run.
        public init(benchmark: ReadBenchmark, results: [Result]) {
            files = benchmark.targets.count
            bytes = benchmark.targets.reduce(0) { $0 + $1.size }
            threads = benchmark.options.threads
            self.results = results
        }

        /// One JSON document (sorted keys).
        public func json() throws -> String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return String(decoding: try encoder.encode(self), as: UTF8.self)
        }

        /// A header row and a row per case, as a terminal table shows them.
        public func tableRows() -> [[String]] {
            var rows = [["case", "ops", "MB/s", "ops/s", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs"]]
            for result in results {
                let moves = result.bytes > 0
                rows.append(
                    [
                        result.benchCase.description, "\(result.operations)",
                        moves ? format(result.megabytesPerSecond) : "-", format(result.operationsPerSecond),
                        format(result.latency.p50), format(result.latency.p90), format(result.latency.p99),
                        format(result.latency.p999), format(result.latency.max),
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

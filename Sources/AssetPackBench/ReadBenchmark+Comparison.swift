import Foundation

extension ReadBenchmark {
    /// How the runs of one case spread (`--repeat N`): the lowest and highest of each figure.
    public struct Spread: Sendable, Codable, Hashable {
        /// Runs of the case.
        public var runs: Int
        public var operationsPerSecondMin: Double
        public var operationsPerSecondMax: Double
        public var megabytesPerSecondMin: Double
        public var megabytesPerSecondMax: Double
        /// p99 latency in microseconds.
        public var p99Min: Double
        public var p99Max: Double
    }

    /// A case's operations per second against a saved run's (`--baseline`).
    public struct Comparison: Sendable, Codable, Hashable {
        /// The case, as the table names it.
        public var benchCase: String
        /// The saved run's operations per second, or `nil` for a case it did not run.
        public var baselineOperationsPerSecond: Double?
        public var operationsPerSecond: Double
        /// The change in percent (negative: slower), or `nil` without a baseline figure.
        public var changePercent: Double?
        /// The case's run-to-run noise in percent: the wider relative spread, (highest − lowest) / median of
        /// operations per second, of its `--repeat` runs here and in the baseline; `nil` when neither repeated
        /// it (one run shows no noise).
        public var noisePercent: Double?
        /// The slowdown that counts: the tolerance, or the noise when that is larger, so that the gate holds
        /// against the spread the machine showed in these very runs.
        public var thresholdPercent: Double
        /// Slower than the baseline by more than the threshold.
        public var regressed: Bool
    }

    /// Fewer operations than this and a case's high percentiles are a handful of samples.
    public static let meaningfulOperations = 100

    /// The units of every figure, as the table, the help and `--json` state them.
    public static let units = "MB/s = 10^6 bytes per second; KiB, MiB = 2^10, 2^20 bytes; latencies in microseconds"
}

extension ReadBenchmark.Result {
    /// The run with the median operations per second, carrying the spread of all of them (one run: itself).
    init(median runs: [ReadBenchmark.Result]) {
        let sorted = runs.sorted { $0.operationsPerSecond < $1.operationsPerSecond }
        self = sorted[(sorted.count - 1) / 2]
        guard runs.count > 1 else { return }
        spread = ReadBenchmark.Spread(
            runs: runs.count,
            operationsPerSecondMin: sorted.first!.operationsPerSecond,
            operationsPerSecondMax: sorted.last!.operationsPerSecond,
            megabytesPerSecondMin: runs.map(\.megabytesPerSecond).min()!,
            megabytesPerSecondMax: runs.map(\.megabytesPerSecond).max()!,
            p99Min: runs.map(\.latency.p99).min()!,
            p99Max: runs.map(\.latency.p99).max()!
        )
    }
}

extension ReadBenchmark.Report {
    /// Compares each case's operations per second with the same case in `baseline` (matched by method,
    /// pattern, cache state, block size and threads). A case regressed when it is slower by more than
    /// `tolerance` and by more than its own noise (see ``ReadBenchmark/Comparison/noisePercent``).
    /// - Parameter tolerance: The slowdown in percent accepted whatever the noise.
    public func compared(with baseline: [ReadBenchmark.Result], tolerance: Double) -> [ReadBenchmark.Comparison] {
        var saved: [ReadBenchmark.Case: ReadBenchmark.Result] = [:]
        for result in baseline { saved[result.benchCase] = result }
        return results.map { result in
            let before = saved[result.benchCase]
            let change = before.flatMap {
                $0.operationsPerSecond > 0 ? (result.operationsPerSecond / $0.operationsPerSecond - 1) * 100 : nil
            }
            let noise = [result, before].compactMap { $0?.noisePercent }.max()
            let threshold = max(tolerance, noise ?? 0)
            return ReadBenchmark.Comparison(
                benchCase: result.benchCase.description,
                baselineOperationsPerSecond: before?.operationsPerSecond,
                operationsPerSecond: result.operationsPerSecond,
                changePercent: change,
                noisePercent: noise,
                thresholdPercent: threshold,
                regressed: (change ?? 0) < -threshold
            )
        }
    }

    /// A note when the gate cannot see the noise: cases run once, here or in the baseline.
    public func noiseNote(baseline: [ReadBenchmark.Result]) -> String? {
        let once = results.contains { $0.spread == nil } || baseline.contains { $0.spread == nil }
        guard once else { return nil }
        return "a case run once shows no noise, so --baseline holds it to --tolerance alone; run both the baseline "
            + "and this run with --repeat 5 so that the gate holds against the spread the runs show"
    }
}

extension ReadBenchmark.Result {
    /// (highest − lowest) / median of the operations per second of the case's runs, in percent; `nil` for
    /// one run.
    public var noisePercent: Double? {
        guard let spread, operationsPerSecond > 0 else { return nil }
        return (spread.operationsPerSecondMax - spread.operationsPerSecondMin) / operationsPerSecond * 100
    }
}

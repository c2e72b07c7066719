import Histogram

extension ReadBenchmark {
    /// A point of a latency distribution: the latency at or below which `percentile` percent of the operations
    /// took.
    public struct LatencyPoint: Sendable, Codable, Hashable {
        /// 0 to 100; 100 is the slowest operation.
        public var percentile: Double
        /// In microseconds.
        public var microseconds: Double

        /// A point of a distribution.
        public init(percentile: Double, microseconds: Double) {
            self.percentile = percentile
            self.microseconds = microseconds
        }
    }

    /// The percentiles below 100 a distribution is sampled at, as HdrHistogram's plotter spaces its ticks on a
    /// scale of 1/(1 - p): a few per decade of 0%, 90%, 99%, 99.9%...
    public static let plottedPercentiles: [Double] = [
        0, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.995, 99.999, 99.9995, 99.9999,
    ]

    /// Where the slowest of `operations` operations sits on the 1/(1 - p) scale: the percentile of the last
    /// sample, 1 - 1/n, as HdrHistogram's plotter puts it (at least 2, so that one operation still draws a line).
    public static func slowestScale(operations: Int) -> Double {
        Double(Swift.max(2, operations))
    }

    /// The percentiles of ``plottedPercentiles`` that `operations` samples resolve (1/(1 - p) below the
    /// slowest's place), in order.
    public static func resolvedPercentiles(operations: Int) -> [Double] {
        plottedPercentiles.filter { 1 / (1 - $0 / 100) < slowestScale(operations: operations) }
    }

    /// A histogram (nanoseconds) sampled at the percentiles its count resolves, then its maximum at 100%.
    static func distribution(of histogram: Histogram<UInt64>) -> [LatencyPoint] {
        let operations = Int(clamping: histogram.totalCount)
        var points = resolvedPercentiles(operations: operations).map {
            LatencyPoint(percentile: $0, microseconds: Double(histogram.valueAtPercentile($0)) / 1000)
        }
        points.append(LatencyPoint(percentile: 100, microseconds: Double(histogram.max) / 1000))
        return points
    }
}

extension ReadBenchmark.Result {
    /// The distribution to plot: the one measured, or for a report saved by an older version the summary
    /// percentiles it holds (p50, p90, p99, p99.9 as far as its operations resolve them, and the maximum).
    public var plottedDistribution: [ReadBenchmark.LatencyPoint] {
        if let distribution, !distribution.isEmpty { return distribution }
        let slowest = ReadBenchmark.slowestScale(operations: operations)
        var points = [(50, latency.p50), (90, latency.p90), (99, latency.p99), (99.9, latency.p999)]
            .filter { 1 / (1 - $0.0 / 100) < slowest }
            .map { ReadBenchmark.LatencyPoint(percentile: $0.0, microseconds: $0.1) }
        points.append(ReadBenchmark.LatencyPoint(percentile: 100, microseconds: latency.max))
        return points
    }
}

extension ReadBenchmark.Latency {
    /// The percentiles of a histogram of nanoseconds, in microseconds.
    init(_ histogram: Histogram<UInt64>) {
        let micro = { (value: UInt64) in Double(value) / 1000 }
        self.init(
            p50: micro(histogram.valueAtPercentile(50)),
            p90: micro(histogram.valueAtPercentile(90)),
            p99: micro(histogram.valueAtPercentile(99)),
            p999: micro(histogram.valueAtPercentile(99.9)),
            max: micro(histogram.max),
            mean: histogram.mean / 1000
        )
    }
}

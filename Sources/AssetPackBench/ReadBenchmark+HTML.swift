import AssetPackFormat
import Foundation

extension ReadBenchmark.Report {
    /// What `--html` shows beside the report itself.
    public struct HTMLOptions: Sendable {
        /// The app group read, as the user named it.
        public var appGroup: String?
        /// The `--baseline` file, as the user named it.
        public var baselineFile: String?
        /// The baseline's results, whose distributions are drawn dashed under the new ones.
        public var baselineResults: [ReadBenchmark.Result]?
        /// The `--tolerance` the comparison used, in percent.
        public var tolerance: Double?

        /// Options for a report.
        public init(
            appGroup: String? = nil,
            baselineFile: String? = nil,
            baselineResults: [ReadBenchmark.Result]? = nil,
            tolerance: Double? = nil
        ) {
            self.appGroup = appGroup
            self.baselineFile = baselineFile
            self.baselineResults = baselineResults
            self.tolerance = tolerance
        }
    }

    /// The report as one self-contained HTML page (no script, no external font or style sheet, valid XML
    /// too): the environment, throughput bars with the spread of `--repeat`, and for each pattern and block
    /// size the latency percentile distribution of each method, cold and warm side by side, with the
    /// baseline's dashed under it and the cases slower than the baseline marked.
    public func html(_ options: HTMLOptions = HTMLOptions()) -> String {
        let escape = SVGPlot.escape
        var page = """
            <!DOCTYPE html>
            <html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>
            <title>ba-sync bench</title>
            <style>\(Self.style)</style></head><body>
            <h1>ba-sync bench</h1>

            """
        page += environmentSection(options)
        if !warnings.isEmpty {
            page += "<section id=\"warnings\"><h2>Notes</h2><ul>"
            for warning in warnings { page += "<li>\(escape(warning))</li>" }
            page += "</ul></section>\n"
        }
        if let comparisons = baseline { page += baselineSection(comparisons, options) }
        page += throughputSection(options)
        page += latencySection(options)
        return page + "</body></html>\n"
    }

    private func environmentSection(_ options: HTMLOptions) -> String {
        let escape = SVGPlot.escape
        var rows: [(String, String)] = []
        if let environment {
            let length =
                environment.iterations.map { "\($0) operations per case" }
                ?? "\(environment.durationSeconds.map { String(format: "%g", $0) } ?? "?") s per case"
            rows = [
                ("tool", environment.tool), ("build", environment.build), ("kernel", environment.kernel),
                ("file system", environment.fileSystem), ("CPU", "\(environment.cpuModel) × \(environment.cpus)"),
                ("seed", "\(environment.seed)"), ("length", length),
                ("runs per case", environment.repeats > 1 ? "\(environment.repeats) (the median run shown)" : "1"),
                ("cold cache", environment.coldCache), ("units", environment.units),
            ]
        } else {
            rows = [("environment", "not recorded")]
        }
        if let appGroup = options.appGroup { rows.insert(("app group", appGroup), at: 0) }
        rows.append(("read", "\(files) files, \(ByteFormat.string(Int64(bytes))), \(threads) thread(s)"))
        var section = "<section id=\"environment\"><h2>Environment</h2>"
        if environment?.build == "debug" {
            section += "<p class=\"warning\">A DEBUG build: its numbers say little about a release build.</p>"
        }
        section += "<dl>"
        for (name, value) in rows { section += "<dt>\(escape(name))</dt><dd>\(escape(value))</dd>" }
        return section + "</dl></section>\n"
    }

    private func baselineSection(_ comparisons: [ReadBenchmark.Comparison], _ options: HTMLOptions) -> String {
        let escape = SVGPlot.escape
        let tolerance = options.tolerance.map { " (tolerance \(String(format: "%g", $0))%)" } ?? ""
        let slower = comparisons.filter(\.regressed).count
        var section =
            "<section id=\"baseline\"><h2>Against the baseline</h2><p>Against "
            + "<code>\(escape(options.baselineFile ?? "the baseline"))</code>\(escape(tolerance)): "
            + (slower > 0
                ? "<span class=\"badge regressed\">\(slower) case(s) slower</span>"
                : "no case slower than the tolerance")
            + ". Operations per second; the plots below draw the baseline dashed.</p><table><tr>"
        for header in ["case", "baseline ops/s", "ops/s", "change"] { section += "<th>\(header)</th>" }
        section += "</tr>"
        for comparison in comparisons {
            let change = comparison.changePercent.map { String(format: "%+.1f%%", $0) } ?? "not in the baseline"
            section +=
                "<tr\(comparison.regressed ? " class=\"regressed\"" : "")><td>\(escape(comparison.benchCase))</td>"
                + "<td>\(comparison.baselineOperationsPerSecond.map(SVGPlot.figure) ?? "-")</td>"
                + "<td>\(SVGPlot.figure(comparison.operationsPerSecond))</td>"
                + "<td>\(escape(change))\(comparison.regressed ? " SLOWER" : "")</td></tr>"
        }
        return section + "</table></section>\n"
    }

    private func throughputSection(_ options: HTMLOptions) -> String {
        let saved = savedResults(options)
        let comparisons = comparisonsByCase()
        func bars(_ results: [ReadBenchmark.Result], megabytes: Bool) -> [SVGPlot.Bar] {
            results.map { result in
                let value = megabytes ? result.megabytesPerSecond : result.operationsPerSecond
                let spread = result.spread.map {
                    megabytes
                        ? ($0.megabytesPerSecondMin, $0.megabytesPerSecondMax)
                        : ($0.operationsPerSecondMin, $0.operationsPerSecondMax)
                }
                let before = saved[result.benchCase].map { megabytes ? $0.megabytesPerSecond : $0.operationsPerSecond }
                return SVGPlot.Bar(
                    label: result.benchCase.description,
                    value: value,
                    spread: spread,
                    baseline: before,
                    regression: comparisons[result.benchCase.description].flatMap(Self.regressionNote)
                )
            }
        }
        var section =
            "<section id=\"throughput\"><h2>Throughput</h2><p>The median run of each case; a whisker spans the "
            + "lowest and highest of the runs (<code>--repeat</code>)"
            + (saved.isEmpty ? "" : ", a dark tick marks the baseline")
            + ". A case slower than the baseline is marked ▼ in red.</p>"
        let moving = results.filter { $0.bytes > 0 }
        let still = results.filter { $0.bytes == 0 }
        if !moving.isEmpty {
            section += SVGPlot.BarChart(title: "MB/s", unit: "MB/s", bars: bars(moving, megabytes: true)).svg()
        }
        if !still.isEmpty {
            section +=
                SVGPlot.BarChart(
                    title: "operations/s (no bytes read)",
                    unit: "ops/s",
                    bars: bars(still, megabytes: false)
                )
                .svg()
        }
        return section + "</section>\n"
    }

    private func latencySection(_ options: HTMLOptions) -> String {
        let escape = SVGPlot.escape
        let saved = savedResults(options)
        let comparisons = comparisonsByCase()
        var section =
            "<section id=\"latency\"><h2>Latency distributions</h2><p>As HdrHistogram's plotter draws them: x is "
            + "the percentile on a log scale of 1/(1−p) (0%, 90%, 99%, 99.9%…; the last point of a line is the "
            + "slowest operation), y the latency in µs on a log scale. One line per read method; cold and warm "
            + "side by side"
            + (saved.isEmpty ? "" : "; the baseline dashed, this run solid")
            + ". A line that rises late is a tail: a few slow reads among fast ones.</p>"
        for group in caseGroups() {
            let slower = group.results.filter { comparisons[$0.benchCase.description]?.regressed == true }
            let every = group.results + group.results.compactMap { saved[$0.benchCase] }
            let latencies = every.flatMap { $0.plottedDistribution.map(\.microseconds) }
            let low = Int(floor(log10(max(1e-3, latencies.min() ?? 1))))
            let high = max(low + 1, Int(ceil(log10(max(1e-3, latencies.max() ?? 10)))))
            let widest = every.map { ReadBenchmark.slowestScale(operations: $0.operations) }.max() ?? 100
            let decades = max(2, Int(ceil(log10(widest) - 1e-9)))
            section +=
                "<section class=\"case\" data-case=\"\(escape(group.name))\"><h3>\(escape(group.name))"
                + (slower.isEmpty
                    ? ""
                    : " <span class=\"badge regressed\">slower: "
                        + escape(slower.map(\.benchCase.description).joined(separator: ", ")) + "</span>")
                + "</h3><div class=\"panels\">"
            for cache in group.caches {
                var series: [SVGPlot.Series] = []
                for result in group.results where result.benchCase.cache == cache {
                    let name = result.benchCase.method?.rawValue ?? "namespace"
                    let colour = Self.colours[name] ?? "#333"
                    if let before = saved[result.benchCase] {
                        series.append(
                            SVGPlot.Series(name: name, run: "baseline", points: Self.points(before), colour: colour)
                        )
                    }
                    series.append(
                        SVGPlot.Series(
                            name: name,
                            run: "new",
                            points: Self.points(result),
                            colour: colour,
                            regression: comparisons[result.benchCase.description].flatMap(Self.regressionNote)
                        )
                    )
                }
                let panel = SVGPlot.PercentilePanel(
                    title: cache.map { "\(group.name), \($0.rawValue)" } ?? group.name,
                    caseName: group.name,
                    cache: cache?.rawValue ?? "-",
                    series: series,
                    decades: decades,
                    latencyDecades: (low, high)
                )
                section += panel.svg()
            }
            section += "</div></section>\n"
        }
        return section + "</section>\n"
    }

    /// The results of one pattern and block size (and thread count), with the cache states they ran in.
    struct CaseGroup {
        var name: String
        var results: [ReadBenchmark.Result]
        /// Cold first, so that it sits on the left; `nil` for lookups.
        var caches: [ReadBenchmark.Cache?]
    }

    /// The results grouped by pattern, block size and threads, in the order they ran.
    func caseGroups() -> [CaseGroup] {
        var groups: [CaseGroup] = []
        for result in results {
            let benchCase = result.benchCase
            var words = [
                benchCase.method == nil ? "namespace \(benchCase.pattern.rawValue)" : benchCase.pattern.rawValue
            ]
            if let block = benchCase.block { words.append(ByteFormat.string(Int64(block))) }
            if benchCase.threads > 1 { words.append("\(benchCase.threads) threads") }
            let name = words.joined(separator: " ")
            if let index = groups.firstIndex(where: { $0.name == name }) {
                groups[index].results.append(result)
            } else {
                groups.append(CaseGroup(name: name, results: [result], caches: []))
            }
        }
        for index in groups.indices {
            let present = Set(groups[index].results.map(\.benchCase.cache))
            groups[index].caches = ([.cold, .warm, nil] as [ReadBenchmark.Cache?]).filter { present.contains($0) }
        }
        return groups
    }

    private func savedResults(_ options: HTMLOptions) -> [ReadBenchmark.Case: ReadBenchmark.Result] {
        Dictionary((options.baselineResults ?? []).map { ($0.benchCase, $0) }, uniquingKeysWith: { first, _ in first })
    }

    private func comparisonsByCase() -> [String: ReadBenchmark.Comparison] {
        Dictionary((baseline ?? []).map { ($0.benchCase, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// `▼ −23% ops/s` for a regressed case, else `nil`.
    private static func regressionNote(_ comparison: ReadBenchmark.Comparison) -> String? {
        guard comparison.regressed else { return nil }
        return "▼ " + (comparison.changePercent.map { String(format: "%+.0f%%", $0) } ?? "") + " ops/s"
    }

    /// A result's distribution on the 1/(1 - p) scale; 100% sits where its slowest operation's percentile is.
    private static func points(_ result: ReadBenchmark.Result) -> [(scale: Double, microseconds: Double)] {
        let slowest = ReadBenchmark.slowestScale(operations: result.operations)
        return result.plottedDistribution.map { point in
            (point.percentile >= 100 ? slowest : 1 / (1 - point.percentile / 100), point.microseconds)
        }
    }

    /// A colour per read method, the same in every panel.
    static let colours = [
        "contents": "#1f77b4", "descriptor": "#d95f02", "copy": "#1b9e77", "namespace": "#7570b3",
    ]

    /// The page's style: no external font or sheet; no `<` or `&`, so that the page stays valid XML.
    static let style = """
        body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}
        h1{font-size:22px}h2{font-size:18px;margin-top:28px}h3{font-size:15px;margin:18px 0 6px}
        dl{display:grid;grid-template-columns:max-content auto;gap:2px 14px;font-size:13px}dt{color:#666}dd{margin:0}
        table{border-collapse:collapse;font-size:13px}td,th{border-bottom:1px solid #ddd;padding:2px 10px;text-align:right}
        td:first-child,th:first-child{text-align:left}
        .panels{display:flex;flex-wrap:wrap;gap:12px}
        svg{font-family:system-ui,sans-serif;font-size:11px;background:#fff}
        .grid{stroke:#e4e4e4}.frame{stroke:#999}.tick{fill:#555}.axis-title{fill:#333;font-size:12px}
        .panel-title{font-size:13px;font-weight:600}
        .bars rect{fill:#4e79a7}.whisker line{stroke:#222;stroke-width:1.2}.baseline-mark{stroke:#000;stroke-width:2.5}
        text.regressed{fill:#c00;font-weight:600}tr.regressed td,p.warning{color:#c00;font-weight:600}
        svg.panel.regressed{outline:2px solid #c00}
        span.badge{background:#c00;color:#fff;border-radius:3px;padding:1px 6px;font-size:12px}
        """
}

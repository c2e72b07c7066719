import AssetPackFormat
import Foundation

/// The charts of `ba-sync bench --html`, drawn as SVG text: a percentile plot as HdrHistogram's plotter draws
/// it, and horizontal bars with whiskers. Every text that reaches the markup goes through ``escape(_:)``.
enum SVGPlot {
    /// `text` safe inside an element or a quoted attribute of HTML, SVG and XML.
    static func escape(_ text: String) -> String { MarkupText.escaped(text) }

    /// A coordinate, to a tenth of a pixel.
    static func coordinate(_ value: Double) -> String { String(format: "%.1f", value) }

    /// Three significant digits, no exponent.
    static func figure(_ value: Double) -> String {
        if value >= 100 { return String(format: "%.0f", value) }
        if value >= 10 { return String(format: "%.1f", value) }
        if value >= 1 { return String(format: "%.2f", value) }
        return String(format: "%.3f", value)
    }

    /// The label of a decade of the percentile axis: 0 → 0%, 1 → 90%, 2 → 99%, 3 → 99.9%...
    static func percentileLabel(decade: Int) -> String {
        switch decade {
        case 0: return "0%"
        case 1: return "90%"
        case 2: return "99%"
        default: return "99." + String(repeating: "9", count: decade - 2) + "%"
        }
    }

    /// The label of a decade of microseconds.
    static func microsecondsLabel(decade: Int) -> String {
        decade >= 0 ? String(Int(pow(10, Double(decade)))) : String(format: "%.\(-decade)f", pow(10, Double(decade)))
    }

    /// One line of a percentile plot.
    struct Series {
        /// The legend's name (a read method).
        var name: String
        /// `new`, or `baseline` (drawn dashed).
        var run: String
        /// Each point's place on the 1/(1 - p) scale (1 for 0%, 10 for 90%...) and its latency in µs.
        var points: [(scale: Double, microseconds: Double)]
        var colour: String
        /// Why the legend marks it, e.g. `▼ −23% ops/s`, for a case slower than its baseline.
        var regression: String?
    }

    /// One panel of percentile lines: x is the percentile on a log scale of 1/(1 - p), y the latency in µs on
    /// a log scale.
    struct PercentilePanel {
        var title: String
        /// What the panel's `data-case` and `data-cache` attributes say.
        var caseName: String
        var cache: String
        var series: [Series]
        /// Decades of the x axis: 2 reaches 99%, 3 reaches 99.9%...
        var decades: Int
        /// The y axis from 10^low to 10^high µs.
        var latencyDecades: (low: Int, high: Int)

        static let width = 460.0
        static let height = 300.0
        static let left = 64.0
        static let right = 446.0
        static let top = 34.0
        static let bottom = 250.0

        func x(_ scale: Double) -> Double {
            let fraction = log10(Swift.max(1, scale)) / Double(Swift.max(1, decades))
            return Self.left + fraction * (Self.right - Self.left)
        }

        func y(_ microseconds: Double) -> Double {
            let span = Double(Swift.max(1, latencyDecades.high - latencyDecades.low))
            let fraction = (log10(Swift.max(1e-3, microseconds)) - Double(latencyDecades.low)) / span
            return Self.bottom - fraction * (Self.bottom - Self.top)
        }

        func svg() -> String {
            let regressed = series.contains { $0.regression != nil }
            var svg =
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"panel\(regressed ? " regressed" : "")\" "
                + "data-case=\"\(escape(caseName))\" data-cache=\"\(escape(cache))\" width=\"\(Int(Self.width))\" "
                + "height=\"\(Int(Self.height))\" viewBox=\"0 0 \(Int(Self.width)) \(Int(Self.height))\" role=\"img\">"
            svg += "<title>\(escape(title)): latency by percentile</title>"
            svg += "<text class=\"panel-title\" x=\"\(Int(Self.left))\" y=\"18\">\(escape(title))</text>"
            if regressed {
                svg +=
                    "<text class=\"regressed badge\" x=\"\(Int(Self.right))\" y=\"18\" text-anchor=\"end\">SLOWER</text>"
            }
            svg += axes()
            for line in series {
                let points = line.points.map { "\(coordinate(x($0.scale))),\(coordinate(y($0.microseconds)))" }
                svg +=
                    "<polyline class=\"series \(line.run)\" data-method=\"\(escape(line.name))\" "
                    + "data-run=\"\(line.run)\" fill=\"none\" stroke=\"\(line.colour)\" stroke-width=\"1.8\""
                    + (line.run == "baseline" ? " stroke-dasharray=\"5 4\" stroke-opacity=\"0.75\"" : "")
                    + " points=\"\(points.joined(separator: " "))\"/>"
            }
            svg += legend()
            return svg + "</svg>"
        }

        private func axes() -> String {
            var svg = "<g class=\"axes\">"
            for decade in 0...Swift.max(1, decades) {
                let position = coordinate(x(pow(10, Double(decade))))
                svg +=
                    "<line class=\"grid\" x1=\"\(position)\" y1=\"\(Self.top)\" x2=\"\(position)\" "
                    + "y2=\"\(Self.bottom)\"/>"
                // The last label ends at its line, so that the panel does not cut it off.
                let anchor = decade == Swift.max(1, decades) ? "end" : "middle"
                svg +=
                    "<text class=\"tick\" x=\"\(position)\" y=\"\(Self.bottom + 16)\" text-anchor=\"\(anchor)\">"
                    + "\(percentileLabel(decade: decade))</text>"
            }
            for decade in latencyDecades.low...Swift.max(latencyDecades.low + 1, latencyDecades.high) {
                let position = coordinate(y(pow(10, Double(decade))))
                svg +=
                    "<line class=\"grid\" x1=\"\(Self.left)\" y1=\"\(position)\" x2=\"\(Self.right)\" "
                    + "y2=\"\(position)\"/>"
                svg +=
                    "<text class=\"tick\" x=\"\(Self.left - 6)\" y=\"\(position)\" text-anchor=\"end\" "
                    + "dominant-baseline=\"middle\">\(microsecondsLabel(decade: decade))</text>"
            }
            svg +=
                "<rect class=\"frame\" x=\"\(Self.left)\" y=\"\(Self.top)\" width=\"\(Self.right - Self.left)\" "
                + "height=\"\(Self.bottom - Self.top)\" fill=\"none\"/>"
            svg +=
                "<text class=\"axis-title\" x=\"\(coordinate((Self.left + Self.right) / 2))\" "
                + "y=\"\(Self.bottom + 36)\" text-anchor=\"middle\">percentile (log scale of 1/(1−p))</text>"
            svg +=
                "<text class=\"axis-title\" x=\"14\" y=\"\(coordinate((Self.top + Self.bottom) / 2))\" "
                + "text-anchor=\"middle\" transform=\"rotate(-90 14 \(coordinate((Self.top + Self.bottom) / 2)))\">"
                + "latency µs (log)</text>"
            return svg + "</g>"
        }

        private func legend() -> String {
            var svg = "<g class=\"legend\">"
            var row = 0
            for line in series where line.run == "new" {
                let top = Self.top + 14 + Double(row) * 16
                svg +=
                    "<line x1=\"\(Self.left + 8)\" y1=\"\(top)\" x2=\"\(Self.left + 30)\" y2=\"\(top)\" "
                    + "stroke=\"\(line.colour)\" stroke-width=\"2\"/>"
                let note = line.regression.map { " " + $0 } ?? ""
                svg +=
                    "<text class=\"legend-label\(line.regression == nil ? "" : " regressed")\" "
                    + "x=\"\(Self.left + 34)\" y=\"\(top)\" dominant-baseline=\"middle\">"
                    + "\(escape(line.name + note))</text>"
                row += 1
            }
            if series.contains(where: { $0.run == "baseline" }) {
                let top = Self.top + 14 + Double(row) * 16
                svg +=
                    "<line x1=\"\(Self.left + 8)\" y1=\"\(top)\" x2=\"\(Self.left + 30)\" y2=\"\(top)\" "
                    + "stroke=\"#555\" stroke-width=\"2\" stroke-dasharray=\"5 4\"/>"
                svg +=
                    "<text class=\"legend-label\" x=\"\(Self.left + 34)\" y=\"\(top)\" "
                    + "dominant-baseline=\"middle\">baseline</text>"
            }
            return svg + "</g>"
        }
    }

    /// One bar of a bar chart.
    struct Bar {
        var label: String
        var value: Double
        /// The lowest and highest of the runs (`--repeat`), drawn as a whisker.
        var spread: (low: Double, high: Double)?
        /// The baseline's value, drawn as a tick.
        var baseline: Double?
        /// Why the label is marked, for a case slower than its baseline.
        var regression: String?
    }

    /// Horizontal bars from 0 (linear), a whisker per bar for the spread of its runs.
    struct BarChart {
        var title: String
        var unit: String
        var bars: [Bar]

        static let labelWidth = 290.0
        static let barWidth = 360.0
        static let rowHeight = 22.0

        func svg() -> String {
            let height = 40 + Double(bars.count) * Self.rowHeight + 24
            let width = Self.labelWidth + Self.barWidth + 150
            let largest = bars.map { Swift.max($0.value, $0.spread?.high ?? 0, $0.baseline ?? 0) }.max() ?? 0
            let scale = largest > 0 ? Self.barWidth / largest : 0
            var svg =
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bars\" data-unit=\"\(escape(unit))\" "
                + "width=\"\(Int(width))\" height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" "
                + "role=\"img\"><title>\(escape(title))</title>"
            svg += "<text class=\"panel-title\" x=\"4\" y=\"18\">\(escape(title))</text>"
            for (index, bar) in bars.enumerated() {
                let top = 32 + Double(index) * Self.rowHeight
                let middle = coordinate(top + Self.rowHeight / 2)
                let regressed = bar.regression != nil
                svg += "<g class=\"bar\(regressed ? " regressed" : "")\" data-case=\"\(escape(bar.label))\">"
                svg +=
                    "<text class=\"bar-label\(regressed ? " regressed" : "")\" x=\"\(Self.labelWidth - 8)\" "
                    + "y=\"\(middle)\" text-anchor=\"end\" dominant-baseline=\"middle\">"
                    + "\(escape(bar.label))</text>"
                svg +=
                    "<rect x=\"\(Self.labelWidth)\" y=\"\(coordinate(top + 4))\" "
                    + "width=\"\(coordinate(bar.value * scale))\" height=\"\(Self.rowHeight - 8)\"/>"
                if let spread = bar.spread {
                    let low = coordinate(Self.labelWidth + spread.low * scale)
                    let high = coordinate(Self.labelWidth + spread.high * scale)
                    svg +=
                        "<g class=\"whisker\"><line x1=\"\(low)\" y1=\"\(middle)\" x2=\"\(high)\" y2=\"\(middle)\"/>"
                        + "<line x1=\"\(low)\" y1=\"\(coordinate(top + 6))\" x2=\"\(low)\" "
                        + "y2=\"\(coordinate(top + Self.rowHeight - 6))\"/>"
                        + "<line x1=\"\(high)\" y1=\"\(coordinate(top + 6))\" x2=\"\(high)\" "
                        + "y2=\"\(coordinate(top + Self.rowHeight - 6))\"/></g>"
                }
                if let baseline = bar.baseline {
                    let position = coordinate(Self.labelWidth + baseline * scale)
                    svg +=
                        "<line class=\"baseline-mark\" x1=\"\(position)\" y1=\"\(coordinate(top + 1))\" "
                        + "x2=\"\(position)\" y2=\"\(coordinate(top + Self.rowHeight - 1))\"/>"
                }
                let end = Self.labelWidth + Swift.max(bar.value, bar.spread?.high ?? 0, bar.baseline ?? 0) * scale
                svg +=
                    "<text class=\"bar-value\(regressed ? " regressed" : "")\" x=\"\(coordinate(end + 6))\" "
                    + "y=\"\(middle)\" dominant-baseline=\"middle\">"
                    + "\(escape(figure(bar.value) + (bar.regression.map { " " + $0 } ?? "")))</text></g>"
            }
            svg +=
                "<text class=\"axis-title\" x=\"\(coordinate(Self.labelWidth + Self.barWidth / 2))\" "
                + "y=\"\(coordinate(height - 8))\" text-anchor=\"middle\">\(escape(unit)) (linear, from 0)</text>"
            return svg + "</svg>"
        }
    }
}

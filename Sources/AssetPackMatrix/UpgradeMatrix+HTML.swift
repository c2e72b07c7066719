import AssetPackFormat
import Foundation

extension UpgradeMatrix.Report {
    /// The report as one HTML page to open offline (well-formed XML too, so that a test parses it): a grid of pairs (older release down, newer across, each
    /// cell the bytes downloaded and the time, red when a check failed), then each pair's packs: status
    /// before, updates during, version after, and the problems with the command that replays the pair.
    public var html: String {
        let e = MarkupText.escaped
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"/><title>Upgrade matrix</title>
            <style>
            body { font: 14px system-ui, sans-serif; margin: 2em; color: #222 }
            table { border-collapse: collapse; margin: 1em 0 }
            th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top }
            td.ok { background: #e6f4ea } td.failed { background: #fce8e6 } code { font-size: 12px }
            </style></head><body>
            <h1>Upgrade matrix</h1>
            <p id="summary">\(ByteFormat.count(pairs.count, "pair")) over \(ByteFormat.count(releases.count, "release")), \
            \(failures) failed, \
            \(String(format: "%.1f", seconds)) s in all.</p>
            <table id="grid"><tr><th>from \\ to</th>
            """
        let targets = Array(Set(pairs.map(\.to))).sorted()
        page += targets.map { "<th>release \($0)</th>" }.joined() + "</tr>\n"
        for from in Array(Set(pairs.map(\.from))).sorted() {
            page += "<tr><th>\(from == 0 ? "first install" : "release \(from)")</th>"
            for to in targets {
                guard let pair = pairs.first(where: { $0.from == from && $0.to == to }) else {
                    page += "<td></td>"
                    continue
                }
                let bytes = ByteFormat.string(pair.bytesDownloaded)
                page +=
                    "<td class=\"\(pair.ok ? "ok" : "failed")\" data-pair=\"\(from)-\(to)\">"
                    + "\(pair.ok ? "ok" : "failed"), \(e(bytes)), \(String(format: "%.2f", pair.seconds)) s</td>"
            }
            page += "</tr>\n"
        }
        page +=
            "</table>\n<h2>Releases</h2>\n<table id=\"releases\"><tr><th>release</th><th>from</th><th>packs</th></tr>\n"
        for release in releases {
            let packs = release.packs.sorted { $0.key < $1.key }.map { "\($0.key) v\($0.value)" }.joined(
                separator: ", "
            )
            page +=
                "<tr><td>\(release.number)</td><td><code>\(e(release.source))</code></td><td>\(e(packs))</td></tr>\n"
        }
        page += "</table>\n"
        for pair in pairs { page += section(pair) }
        return page + "</body></html>\n"
    }

    private func section(_ pair: UpgradeMatrix.Pair) -> String {
        let e = MarkupText.escaped
        let title = pair.from == 0 ? "first install at release \(pair.to)" : "release \(pair.from) → \(pair.to)"
        var text = "<h2 id=\"pair-\(pair.from)-\(pair.to)\">\(e(title)): \(pair.ok ? "ok" : "failed")</h2>\n"
        text += "<table><tr><th>pack</th><th>status before</th><th>updates</th><th>after</th></tr>\n"
        let ids = Set(pair.statusBefore.keys).union(pair.updates.keys).union(pair.installed.keys).union(pair.removed)
        for id in ids.sorted() {
            let after = pair.installed[id].map { "v\($0)" } ?? (pair.removed.contains(id) ? "removed" : "not installed")
            text +=
                "<tr><td>\(e(id))</td><td>\(e((pair.statusBefore[id] ?? []).joined(separator: ", ")))</td>"
                + "<td>\(e((pair.updates[id] ?? []).joined(separator: " → ")))</td><td>\(e(after))</td></tr>\n"
        }
        text += "</table>\n"
        if !pair.notes.isEmpty {
            text += "<ul class=\"notes\">" + pair.notes.map { "<li>\(e($0))</li>" }.joined() + "</ul>\n"
        }
        if !pair.problems.isEmpty {
            text += "<ul class=\"problems\">" + pair.problems.map { "<li>\(e($0))</li>" }.joined() + "</ul>\n"
            text += "<p>Replay: <code>\(e(pair.replay))</code></p>\n"
        }
        return text
    }
}

import AssetPackFormat
import AssetPackMatrix
import Foundation

/// What `ba-sync upgrade-matrix` shows: a line per release and per pair as the matrix goes (stderr, or a
/// JSON line per pair with `--json`), then a table of the pairs with each failure's problems and replay.
public enum MatrixOutput {
    /// Shows one step of the matrix.
    public static func show(_ progress: UpgradeMatrix.Progress, json: Bool) {
        switch progress {
        case .release(let release):
            guard !json else { return }
            let packs = release.packs.sorted { $0.key < $1.key }.map { "\($0.key) v\($0.value)" }
            Console.err("release \(release.number): \(packs.joined(separator: ", ")) (\(release.source))")
        case .pair(let from, let to, let index, let count):
            guard !json else { return }
            Console.err("pair \(index) of \(count): \(name(from: from, to: to))…")
        case .played(let pair):
            if json {
                do { try Console.json(PairLine(pair: pair)) } catch { Console.err("error: \(error)") }
            } else if !pair.ok {
                Console.err("  failed: " + pair.problems.joined(separator: "; "))
            }
        case .note(let line):
            if !json { Console.err(line) }
        }
    }

    /// The pairs as a table, then what failed and how to replay it.
    public static func table(_ report: UpgradeMatrix.Report) -> String {
        var rows = [["pair", "result", "downloaded", "seconds", "updated", "removed"]]
        for pair in report.pairs {
            let updated = pair.updates.filter { $0.value.last == "finished" }.keys.sorted()
            rows.append([
                name(from: pair.from, to: pair.to), pair.ok ? "ok" : "FAILED", ByteFormat.string(pair.bytesDownloaded),
                String(format: "%.2f", pair.seconds), updated.isEmpty ? "-" : updated.joined(separator: ","),
                pair.removed.isEmpty ? "-" : pair.removed.joined(separator: ","),
            ])
        }
        var text = Table.render(rows)
        for pair in report.pairs where !pair.ok {
            text += "\n\(name(from: pair.from, to: pair.to)) failed:\n"
            text += pair.problems.map { "  \($0)\n" }.joined()
            text += "  replay: \(pair.replay)\n"
        }
        let notes = Set(report.pairs.flatMap(\.notes)).sorted()
        if !notes.isEmpty { text += "\nnote:\n" + notes.map { "  \($0)\n" }.joined() }
        let summary =
            "\(ByteFormat.count(report.pairs.count, "pair")) over \(ByteFormat.count(report.releases.count, "release")), "
            + "\(report.failures) failed"
        return text + "\n\(summary), \(String(format: "%.1f", report.seconds)) s"
    }

    static func name(from: Int, to: Int) -> String { from == 0 ? "first install → \(to)" : "\(from) → \(to)" }

    /// `{"event": "pair", ...}`: one pair as it ends.
    struct PairLine: Encodable {
        let event = "pair"
        var pair: UpgradeMatrix.Pair

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(event, forKey: .event)
            try pair.encode(to: encoder)  // the same object: JSONEncoder hands back the container above
        }

        enum Key: String, CodingKey { case event }
    }
}

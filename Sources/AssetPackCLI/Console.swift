import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Output of the command-line tools: lines to stdout and stderr, each in one unbuffered write (a script
/// reading a pipe sees each as it happens: the first line of `ba-mock serve` is the URL), JSON lines, and
/// tables. For the final output of a command; output that streams while work runs (request lines,
/// progress) goes through an ``OutputQueue``.
public enum Console {
    /// Writes a line to standard output.
    public static func out(_ line: String) {
        _ = try? FileDescriptor.standardOutput.writeAll(Array((line + "\n").utf8))
    }

    /// Writes a line to standard error.
    public static func err(_ line: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array((line + "\n").utf8))
    }

    /// Whether standard error is a terminal (progress is drawn only there).
    /// (Asked once: a progress callback per packed file asked the kernel each time.)
    public static let stderrIsTerminal: Bool = isatty(STDERR_FILENO) != 0

    /// Writes a value as one line of JSON to standard output (``JSONOutput``: sorted keys, slashes unescaped).
    /// - Throws: `EncodingError` when it cannot be written as JSON (nothing is written then).
    public static func json(_ value: some Encodable) throws {
        out(try JSONOutput.line(value))
    }

    /// An error as one JSON line on stdout (``SyncOutput/Error``), for scripts that read `--json` output only.
    public static func jsonError(_ error: any Error) {
        do {
            try json(SyncOutput.Error(error))
        } catch {
            err("error: the error could not be written as JSON: \(error)")
        }
    }

    /// Rewrites one status line on a terminal's stderr; `nil` clears it.
    public static func statusLine(_ line: String?) {
        _ = try? FileDescriptor.standardError.writeAll(Array(("\r\u{1B}[K" + (line ?? "")).utf8))
    }

    /// Writes rows as a table with fixed-width columns to standard output.
    public static func table(_ rows: [[String]]) {
        let text = Table.render(rows)
        if !text.isEmpty { out(text) }
    }
}

/// Fixed-width columns, two spaces apart; the last column is not padded.
public enum Table {
    /// Renders a header row and rows; widths count characters, so names like `日本語` line up by length.
    public static func render(_ rows: [[String]]) -> String {
        guard let first = rows.first else { return "" }
        let widths = first.indices.map { column in
            rows.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0
        }
        return rows.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}

import AssetPackClient
import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Shows download progress: a redrawn bar per pack on a terminal (bytes, rate, ETA), a few quiet lines when
/// not on a terminal, or JSON lines with `json`. Writes go through queues, so a slow reader of the output
/// never holds up a download.
public final class ConsoleProgress: Sendable {
    private struct Line {
        var started: ContinuousClock.Instant
        var lastDrawn: ContinuousClock.Instant
        var lastPercent: Int
    }

    private let json: Bool
    private let terminal: Bool
    private let lines = Mutex<[String: Line]>([:])
    private let output: OutputQueue

    /// Creates a printer; it writes to standard error, except JSON lines, which go to standard output.
    public init(json: Bool) {
        self.json = json
        self.terminal = isatty(STDERR_FILENO) != 0
        self.output = OutputQueue(json ? .standardOutput : .standardError, what: "progress lines")
    }

    /// Waits until everything shown so far is written (before a command prints its result).
    public func flush() { output.flush() }

    /// Shows one status update.
    public func show(_ update: AssetPackManager.DownloadStatusUpdate) {
        let pack = update.assetPack
        switch update {
        case .began:
            lines.withLock { $0[pack.id] = Line(started: .now, lastDrawn: .now - .seconds(1), lastPercent: -1) }
            emit(
                pack.id,
                event: "began",
                text: "\(pack.id): downloading version \(pack.version), \(ByteFormat.string(pack.downloadSize))"
            )
        case .paused:
            emit(pack.id, event: "paused", text: "\(pack.id): paused, resuming")
        case .downloading(_, let progress):
            draw(pack, progress)
        case .finished:
            if terminal && !json { err("\r\u{1B}[K") }
            emit(pack.id, event: "finished", text: "\(pack.id): installed version \(pack.version)")
        case .failed(_, let error):
            if terminal && !json { err("\r\u{1B}[K") }
            emit(pack.id, event: "failed", text: "\(pack.id): failed: \(error)", extra: ["error": error.description])
        }
    }

    private func draw(_ pack: AssetPack, _ progress: DownloadProgress) {
        let now = ContinuousClock.now
        let percent = progress.total > 0 ? Int(progress.completed * 100 / progress.total) : 100
        let line: Line? = lines.withLock { all in
            guard var line = all[pack.id] else { return nil }
            let due = terminal ? now - line.lastDrawn >= .milliseconds(100) : percent / 25 != line.lastPercent / 25
            guard due || (json && percent != line.lastPercent) else { return nil }
            line.lastDrawn = now
            line.lastPercent = percent
            all[pack.id] = line
            return line
        }
        guard let line else { return }
        let elapsed =
            Double((now - line.started).components.attoseconds) / 1e18 + Double((now - line.started).components.seconds)
        let rate = elapsed > 0 ? Double(progress.completed) / elapsed : 0
        if json {
            emit(
                pack.id,
                event: "progress",
                text: "",
                extra: ["completed": progress.completed, "total": progress.total]
            )
        } else if terminal {
            let width = 24
            let filled = min(width, percent * width / 100)
            let eta = rate > 0 ? Int(Double(progress.total - progress.completed) / rate) : 0
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            err(
                "\r\u{1B}[K\(pack.id) [\(bar)] \(percent)% \(ByteFormat.string(progress.completed))/\(ByteFormat.string(progress.total)) "
                    + "\(ByteFormat.string(Int64(rate)))/s ETA \(eta)s"
            )
        } else if percent < 100 {
            err("\(pack.id): \(percent)% of \(ByteFormat.string(progress.total))\n")
        }
    }

    private func emit(_ id: String, event: String, text: String, extra: [String: Any] = [:]) {
        if json {
            var object: [String: Any] = ["event": event, "pack": id]
            for (key, value) in extra { object[key] = value }
            if let line = Console.jsonLine(object) { output.writeLine(line) }
        } else {
            err(text + "\n")
        }
    }

    private func err(_ text: String) {
        output.write(text)
    }
}

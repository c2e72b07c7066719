import AssetPackClient
import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Shows what a manager does: a redrawn bar per pack on a terminal (bytes, rate, ETA), a few quiet lines when
/// not on a terminal, or JSON lines with `json`; retries say why, resumes say from where, a wait for the lock
/// says for whom. Writes go through queues, so a slow reader of the output never holds up a download.
public final class ConsoleProgress: Sendable {
    private struct Line {
        var started: ContinuousClock.Instant
        var lastDrawn: ContinuousClock.Instant
        var lastPercent: Int
    }

    private let json: Bool
    private let terminal: Bool
    private let appGroup: String
    private let lines = Mutex<[String: Line]>([:])
    private let failed = Mutex<Set<String>>([])
    /// Packs being updated through a delta, and from which version.
    private let deltas = Mutex<[String: DeltaNotice]>([:])
    private let output: OutputQueue

    /// Creates a printer; it writes to standard error, except JSON lines, which go to standard output.
    /// - Parameter appGroup: The app group, named when waiting for its lock.
    public init(json: Bool, appGroup: String) {
        self.json = json
        self.terminal = isatty(STDERR_FILENO) != 0
        self.appGroup = appGroup
        self.output = OutputQueue(json ? .standardOutput : .standardError, what: "progress lines")
    }

    /// Waits until everything shown so far is written (before a command prints its result).
    public func flush() { output.flush() }

    /// The packs whose failure was shown (with its message): a command's summary need not repeat it.
    public var failuresShown: Set<String> { failed.withLock { $0 } }

    /// Says which device conditions the run plays (nothing for a happy device).
    public func show(_ conditions: DeviceConditions) {
        guard !conditions.isDefault else { return }
        if json {
            writeJSON(SyncOutput.Conditions(conditions))
        } else {
            err("device: \(conditions.summary) (simulated)\n")
        }
    }

    /// Shows one event.
    public func show(_ event: AssetPackManager.Event) {
        switch event {
        case .status(let update): show(update)
        case .retrying(let pack, let notice):
            let delay = notice.delay == .zero ? "starting over" : "next in \(seconds(notice.delay)) s"
            emit(
                pack.id,
                event: "retrying",
                text: "\(pack.id): \(notice.reason), attempt \(notice.attempt) of \(notice.of), \(delay)",
                details: ProgressDetails.Retrying(
                    reason: notice.reason,
                    attempt: notice.attempt,
                    of: notice.of,
                    delaySeconds: Double(seconds(notice.delay)) ?? 0
                )
            )
        case .resuming(let pack, let offset):
            let size = deltas.withLock { $0[pack.id] }?.downloadSize ?? pack.downloadSize
            emit(
                pack.id,
                event: "resuming",
                text: "\(pack.id): resuming at byte \(offset) of \(size)",
                details: ProgressDetails.Resuming(from: offset, of: size)
            )
        case .delta(let pack, let notice):
            deltas.withLock { $0[pack.id] = notice }
            let files = notice.fileCount.map { ByteFormat.count($0, "file") + ", " } ?? ""
            emit(
                pack.id,
                event: "delta",
                text:
                    "\(pack.id): delta from v\(notice.fromVersion): \(files)\(ByteFormat.string(notice.downloadSize)) "
                    + "instead of \(ByteFormat.string(notice.fullSize))",
                details: ProgressDetails.Delta(
                    fromVersion: notice.fromVersion,
                    fileCount: notice.fileCount,
                    downloadSize: notice.downloadSize,
                    fullSize: notice.fullSize
                )
            )
        case .deltaFailed(let pack, let reason):
            deltas.withLock { $0[pack.id] = nil }
            lines.withLock { $0[pack.id] = nil }
            if terminal && !json { err("\r\u{1B}[K") }
            emit(
                pack.id,
                event: "deltaFailed",
                text: "\(pack.id): the delta failed (\(reason)); downloading the whole pack",
                details: ProgressDetails.DeltaFailed(reason: reason)
            )
        case .unverifiedFiles(let pack, let carried, let total, let archiveDigestChecked):
            emit(
                pack.id,
                event: "note",
                text:
                    "note: \(pack.id) came as an Apple Archive that carries no SHA-256 (SH2) for \(total - carried) of its "
                    + "\(total) files: "
                    + (archiveDigestChecked
                        ? "they were checked only through the whole archive's digest"
                        : "with no archive digest in the manifest either, their bytes were checked against nothing")
                    + " (`ba-sync status` keeps this in its FILE DIGESTS column)",
                details: ProgressDetails.Note(
                    carried: carried,
                    fileCount: total,
                    archiveDigestChecked: archiveDigestChecked
                )
            )
        case .waitingForLock(let holder):
            let who = holder.map { "ba-sync (pid \($0))" } ?? "another ba-sync"
            let text = "waiting for \(who), which holds \(appGroup)/.ba-sync/lock"
            if json {
                writeJSON(WaitingLine(lock: "\(appGroup)/.ba-sync/lock", holderPID: holder.map(Int.init)))
            } else {
                output.writeLine(text)
            }
        }
    }

    private func show(_ update: AssetPackManager.DownloadStatusUpdate) {
        let pack = update.assetPack
        switch update {
        case .began:
            let fresh = lines.withLock { lines in
                guard lines[pack.id] == nil else { return false }
                lines[pack.id] = Line(started: .now, lastDrawn: .now - .seconds(1), lastPercent: -1)
                return true
            }
            // "began" also follows each pause; on a terminal the retry line has said what happens. A delta's
            // line said what it downloads.
            let delta = deltas.withLock { $0[pack.id] } != nil
            if (fresh && !delta) || json {
                emit(
                    pack.id,
                    event: "began",
                    text: "\(pack.id): downloading version \(pack.version), \(ByteFormat.string(pack.downloadSize))"
                )
            }
        case .paused:
            if json { emit(pack.id, event: "paused", text: "") }
        case .downloading(_, let progress):
            draw(pack, progress)
        case .finished:
            lines.withLock { $0[pack.id] = nil }
            let delta = deltas.withLock { $0.removeValue(forKey: pack.id) }
            if terminal && !json { err("\r\u{1B}[K") }
            emit(
                pack.id,
                event: "finished",
                text: "\(pack.id): installed version \(pack.version)",
                details: ProgressDetails.Finished(deltaFrom: delta?.fromVersion)
            )
        case .failed(_, let error):
            lines.withLock { $0[pack.id] = nil }
            failed.withLock { _ = $0.insert(pack.id) }
            if terminal && !json { err("\r\u{1B}[K") }
            emit(
                pack.id,
                event: "failed",
                text: "\(pack.id): failed: \(error)",
                details: ProgressDetails.Failed(code: error.code.rawValue, message: error.description)
            )
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
        let elapsed = (now - line.started).inSeconds
        let rate = elapsed > 0 ? Double(progress.completed) / elapsed : 0
        if json {
            emit(
                pack.id,
                event: "progress",
                text: "",
                details: ProgressDetails.Progress(completed: progress.completed, total: progress.total)
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

    private func emit(
        _ id: String,
        event: String,
        text: String,
        details: some Encodable & Sendable = ProgressDetails.None()
    ) {
        if json {
            writeJSON(ProgressLine(event: event, pack: id, details: details))
        } else {
            if terminal && lines.withLock({ $0[id] != nil }) { err("\r\u{1B}[K") }
            err(text + "\n")
        }
    }

    /// A line of JSON; one that cannot be written says so on stderr (the values here are strings and whole
    /// numbers, so it should never happen), never an empty line.
    private func writeJSON(_ line: some Encodable) {
        do {
            output.writeLine(try JSONOutput.line(line))
        } catch {
            err("error: a progress line could not be written as JSON: \(error)\n")
        }
    }

    private func err(_ text: String) {
        output.write(text)
    }

    private func seconds(_ duration: Duration) -> String {
        String(format: "%.1f", duration.inSeconds)
    }
}

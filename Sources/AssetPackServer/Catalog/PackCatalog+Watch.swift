import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// What a command checks before serving, its first load, and the watch that rebuilds what changes.
extension PackCatalog {
    /// The manifests' problems and warnings, without building anything: what a command checks before it
    /// starts serving (and then builds with ``refresh()``, publishing each pack as it is built).
    /// - Returns: The warnings to show the user, and the IDs of the packs the folder holds.
    /// - Throws: ``AssetPackServerError`` with code `.invalidAssetFolder` listing every problem, or when the
    ///   folder cannot be read.
    public func check() async throws -> (warnings: [String], packIDs: Set<String>) {
        let folder = self.folder
        let scan = try await BlockingIO.longJob { try folder.scan() }
        guard scan.problems.isEmpty else {
            throw AssetPackServerError(
                code: .invalidAssetFolder,
                message: "\(folder.root) has \(scan.problems.count) invalid manifest(s); fix them and run again:",
                problems: scan.problems
            )
        }
        let ids = Set(scan.sources.map(\.manifest.assetPackID))
        if let twice = archives.first(where: { ids.contains($0.id) }) {
            throw AssetPackServerError(
                code: .invalidAssetFolder,
                message:
                    "\(twice.archive) is pack \(twice.id), which a manifest of \(folder.root) also builds. Fix: serve one "
                    + "of them"
            )
        }
        // What was built before is published at once; the packs with no archive yet are announced as being
        // built (503 with Retry-After, not 404), and the manifest waits for them.
        let (packsFolder, state) = (self.packsFolder, self.state)
        let unbuilt = try await BlockingIO.shortCall { () -> Set<String> in
            let archives = state.archives(in: packsFolder).names
            return Set(
                scan.sources.filter { source in
                    guard let record = state.packs[source.manifest.assetPackID], !record.removed else { return true }
                    return !archives.contains(record.archive)
                }.map(\.manifest.assetPackID)
            )
        }
        building = unbuilt
        incomplete = !unbuilt.isEmpty
        checkedScan = scan
        publish()
        return (scan.warnings, ids.union(archives.map(\.id)))
    }

    /// The first refresh of a command: builds every pack, and fails when any manifest is invalid, so that
    /// nothing is published from a half-valid folder.
    /// - Returns: The warnings to show the user.
    /// - Throws: ``AssetPackServerError`` with code `.invalidAssetFolder` listing every problem, or what
    ///   ``refresh()`` throws.
    public func load() async throws -> [String] {
        let report = try await refresh()
        guard report.problems.isEmpty else {
            throw AssetPackServerError(
                code: .invalidAssetFolder,
                message: "\(folder.root) has \(report.problems.count) invalid manifest(s); fix them and run again:",
                problems: report.problems
            )
        }
        return report.warnings
    }

    /// Refreshes every `interval` until the task is cancelled, handing each report that changed something
    /// (or found a problem) to `onReport`.
    /// - Parameter settle: How long the folder must have been quiet before a change is built (see
    ///   ``refresh(settle:)``); zero builds at the next tick.
    public func watch(
        every interval: Duration,
        settle: Duration = .zero,
        onReport: @escaping @Sendable (CatalogReport) -> Void
    ) async {
        var lastProblems: [String] = []
        let folder = self.folder
        var initial = lastWarnings
        if initial == nil { initial = try? await BlockingIO.longJob { try folder.scan().warnings } }
        var shownWarnings = Set(initial ?? [])
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            do {
                var report = try await refresh(settle: settle > .zero ? settle : nil)
                if report.settling { continue }
                let problems = report.problems.map(\.message)
                report.problems = report.problems.filter { !lastProblems.contains($0.message) }  // said once
                report.warnings = report.warnings.filter { !shownWarnings.contains($0) }  // each is said once
                shownWarnings.formUnion(report.warnings)
                if !report.changes.isEmpty || !report.removed.isEmpty || !report.problems.isEmpty
                    || !report.warnings.isEmpty || !report.fixed.isEmpty
                {
                    onReport(report)
                }
                lastProblems = problems
            } catch {
                log("ba-mock: cannot refresh \(folder.root): \(error)")
            }
        }
    }

    /// Whether a change time (nanoseconds since 1970) is less than `interval` before `now`, and not in the
    /// future.
    static func isRecent(_ change: Int64, within interval: Duration, now: Int64) -> Bool {
        let (seconds, attoseconds) = interval.components
        let span = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return change > now - span && change <= now + 1_000_000_000
    }

    /// The wall clock in nanoseconds since 1970, as file change times are kept.
    static func wallClock() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }

    /// Sets the clock the settle time is measured on (tests: a change a given time ago, whatever the machine's
    /// pace).
    func useClock(_ clock: @escaping @Sendable () -> Int64) { self.clock = clock }
}

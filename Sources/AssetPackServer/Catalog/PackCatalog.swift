import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// What one refresh of the catalog changed.
public struct CatalogReport: Sendable {
    /// A pack whose published version moved.
    public struct Change: Sendable, Hashable {
        /// The pack's ID.
        public var id: String
        /// The version before, or `nil` for a new pack.
        public var from: Int?
        /// The version now.
        public var to: Int
    }

    /// Packs built or rebuilt with new content.
    public var changes: [Change] = []
    /// Packs whose manifest was removed: no longer published (clients see them as obsolete).
    public var removed: [String] = []
    /// Manifests (or builds) that failed; their packs keep the last good version.
    public var problems: [AssetPackFormatError] = []
    /// Warnings from the manifests.
    public var warnings: [String] = []
    /// Manifest files that had an error at the refresh before and have none now.
    public var fixed: [String] = []
    /// Whether the refresh built nothing because the folder changed less than the settle time ago (a save
    /// may be under way); the next one builds once it has been quiet.
    public var settling = false
}

/// The packs built from an asset folder: builds them (reusing unchanged archives), numbers their versions,
/// keeps the state file, and publishes an immutable ``CatalogSnapshot`` that request handlers read without
/// waiting.
public actor PackCatalog {
    /// The asset folder.
    public nonisolated let folder: AssetFolder
    let options: PackBuildOptions
    let pinnedVersions: [String: Int]
    let archivesKept: Int
    /// The deltas to each published version, and the indexes of the versions they start from.
    let deltaStore: DeltaStore
    /// Pack archives served as they are (`serve A.aar`), beside the folder's packs.
    let archives: [ServedPack]
    let log: @Sendable (String) -> Void
    var state: MockState
    /// Archives no longer published, per pack, oldest first.
    var superseded: [String: [FilePath]] = [:]
    nonisolated let current = Mutex(CatalogSnapshot(packs: []))
    /// Versions set through the control endpoint, over `pinnedVersions`.
    var runtimeVersions: [String: Int] = [:]
    /// Packs marked obsolete through the control endpoint: not published until unmarked.
    var hidden: Set<String> = []
    var previous: [String: ServedPack] = [:]
    /// The refresh under way, if any.
    var refreshing: Task<CatalogReport, any Error>?
    /// Whether the first refresh ran (it sweeps archives left by an earlier run).
    var started = false
    /// The scan ``check()`` made before the server listened, taken by the first refresh instead of scanning
    /// the folder a second time (at 10 000 packs each scan took tens of seconds before a restart said its URL).
    var checkedScan: AssetFolder.Scan?
    /// Whether opening dropped deltas beyond the depth from the state (saved by the first refresh).
    var trimmed = false
    /// Packs a refresh is about to build that have no published version yet (asked for, they get 503).
    var building: Set<String> = []
    /// Set by ``check()`` when packs are left to build, until the next refresh ends: the manifest waits.
    var incomplete = false
    /// The warnings of the last scan, which a watch starts from (said once) without scanning again.
    var lastWarnings: [String]?
    /// What the settle time is measured on: the wall clock (file change times are wall-clock times).
    var clock: @Sendable () -> Int64 = PackCatalog.wallClock
    /// When the snapshot was last published and the state last saved during a refresh: a refresh of
    /// thousands of packs publishes and persists what it built as it goes, at most twice a second.
    var lastPublished: ContinuousClock.Instant?
    var lastSaved: ContinuousClock.Instant?
    /// The errors of the last refresh: broken manifests and failed builds, each with its file, key and pack
    /// (published in the snapshot, so that `/manifest` and `/_mock/packs` show them).
    var problems: [ManifestProblem] = []

    /// The packs published right now.
    public nonisolated var snapshot: CatalogSnapshot { current.withLock { $0 } }

    /// Opens the catalog of a folder; nothing is built until ``refresh()``.
    /// - Parameters:
    ///   - folder: The asset folder.
    ///   - options: How packs are compressed.
    ///   - pinnedVersions: Versions to publish regardless of content, by pack ID (`--pack-version`).
    ///   - archivesKept: How many archives of each pack stay on disk, the published one included (a download
    ///     under way keeps reading its file even once it is deleted: older archives are kept for a look only).
    ///   - deltaDepth: How many earlier versions of a pack get a delta archive to the published one (0: none).
    ///   - archives: Pack archives to serve as they are, beside the folder's (see ``ServedPack/archive(at:version:)``).
    ///   - log: Receives a line for each build.
    /// - Throws: ``AssetPackServerError`` with code `.state` when the state file cannot be read.
    public init(
        folder: AssetFolder,
        options: PackBuildOptions = PackBuildOptions(),
        pinnedVersions: [String: Int] = [:],
        archivesKept: Int = 2,
        deltaDepth: Int = 3,
        archives: [ServedPack] = [],
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        self.folder = folder
        self.archives = archives
        self.options = options
        self.pinnedVersions = pinnedVersions
        self.archivesKept = max(1, archivesKept)
        self.deltaStore = DeltaStore(stateFolder: folder.stateFolder, depth: max(0, deltaDepth), options: options)
        self.log = log
        try Self.checkStateFolder(of: folder)
        var state = try MockState.load(from: folder.stateFolder.appending("state.json"))
        for id in state.packs.keys where deltaStore.trim(&state.packs[id]!) { trimmed = true }
        self.state = state
    }

    var packsFolder: FilePath { folder.stateFolder.appending("packs") }

    /// Refuses a state folder (or one of its folders) that is a symlink or not a folder: ba-mock writes there,
    /// and deletes what it finds there that no record names, so a `.ba-mock` linked to a folder elsewhere had
    /// it write and delete outside the asset folder.
    /// - Throws: ``AssetPackServerError`` with code `.state`.
    static func checkStateFolder(of folder: AssetFolder) throws {
        guard folder.separateState == nil else { return }  // a folder of the caller's own, made for one check
        guard let root = try? FileDescriptor.openFolder(folder.root) else { return }  // the scan says why
        defer { try? root.close() }
        let state = PackPath.stateFolderName
        for relative in [state, state + "/packs", state + "/indexes", state + "/deltas"] {
            guard let kind = root.entryKind(relative), kind != .folder else { continue }
            let path = folder.root.appending(relative)
            throw AssetPackServerError(
                code: .state,
                message:
                    "\(path) is \(kind == .symlink ? "a symlink" : "not a folder"); ba-mock keeps its state only in a "
                    + "folder of its own, where it writes and deletes. Fix: remove \(path) (ba-mock makes it again "
                    + "and rebuilds the packs)"
            )
        }
    }

    /// Scans the folder, builds what changed, and publishes the result.
    ///
    /// A pack whose manifest is invalid or whose build fails keeps its last good version; a pack whose
    /// manifest file is gone is no longer published.
    /// - Returns: What changed.
    /// - Throws: ``AssetPackServerError`` when the folder itself cannot be read or the state not saved.
    /// - Parameter settle: When given, nothing is built while anything the packs are made of changed less
    ///   than this long ago (the report says `settling`): a save under way, or the first of two edits close
    ///   together, is not published. A change time in the future (a clock that jumped) does not hold it back.
    /// - Parameter reusingCheck: Take the scan ``check()`` made instead of scanning again, once (`serve`'s
    ///   first build, which follows the check by moments: a change in between is seen at the next refresh).
    @discardableResult
    public func refresh(settle: Duration? = nil, reusingCheck: Bool = false) async throws -> CatalogReport {
        // One refresh at a time (the watcher's and a caller's would build the same pack into one file).
        while let running = refreshing { _ = try? await running.value }
        if !reusingCheck { checkedScan = nil }
        let task = Task { try await self.scanAndBuild(settle: settle) }
        refreshing = task
        // Cancelled (a server shutting down), the build stops after the pack under way, keeping what it built.
        let result = await withTaskCancellationHandler {
            await task.result
        } onCancel: {
            task.cancel()
        }
        refreshing = nil
        if incomplete {  // a refresh that ended early (the folder unreadable) still ends the manifest's wait
            (building, incomplete) = ([], false)
            publish()
        }
        return try result.get()
    }

    func scanAndBuild(settle: Duration?) async throws -> CatalogReport {
        let (scan, fingerprints, archives) = try await scanFolder()
        if let settle, Self.isRecent(scan.lastChange, within: settle, now: clock()) {
            return CatalogReport(settling: true)
        }
        lastWarnings = scan.warnings
        var report = CatalogReport(problems: scan.problems, warnings: scan.warnings)
        var problems = scan.manifestProblems.filter { $0.severity == .error }
        var changed = trimmed  // a smaller --delta-depth than the state's: saved once, and swept
        trimmed = false
        var present = Set<String>()
        var toBuild: [(source: PackSource, fingerprint: String)] = []
        for (source, fingerprint) in zip(scan.sources, fingerprints) {
            let id = source.manifest.assetPackID
            present.insert(id)
            let previous = state.packs[id]
            if let previous, previous.fingerprint == fingerprint, !previous.removed, archives.contains(previous.archive)
            {
                continue
            }
            toBuild.append((source, fingerprint))
        }
        let published = Set(current.withLock { $0.packs.map(\.id) })
        building = Set(toBuild.map(\.source.manifest.assetPackID)).subtracting(published)
        if !building.isEmpty { publish() }
        if try await buildAll(toBuild, report: &report, problems: &problems) { changed = true }
        let broken = Set(problems.map(\.file))
        report.fixed = Set(self.problems.map(\.file)).subtracting(broken).filter(scan.manifestFiles.contains).sorted()
        self.problems = problems
        building = []
        incomplete = false
        (lastPublished, lastSaved) = (nil, nil)
        if unpublishGone(scan, present: present, report: &report) { changed = true }
        if changed {
            let (state, file) = (self.state, folder.stateFolder.appending("state.json"))
            try await BlockingIO.shortCall { try state.save(to: file) }
        }
        publish()
        await removeExpiredArchives()
        return report
    }

    /// Scans the folder and fingerprints its packs (a long job, off the actor: a scan stats every file of the
    /// folder, 100 000 of them for some, and the fingerprints hash what it found); at start-up, also removes
    /// what an earlier run left in `packs/`.
    /// - Returns: The scan, each source's fingerprint, and the names in `packs/`.
    private func scanFolder() async throws -> (AssetFolder.Scan, [String], Set<String>) {
        let (folder, packsFolder, options, checked) = (self.folder, self.packsFolder, self.options, checkedScan)
        let state = self.state
        checkedScan = nil
        let (scan, fingerprints, (archives, changed)) = try await BlockingIO.longJob {
            let scan = try checked ?? folder.scan()
            let fingerprints = scan.sources.map { $0.fingerprint(options: options) }
            try Self.createFolder(packsFolder)
            return (scan, fingerprints, state.archives(in: packsFolder))
        }
        for (id, path) in changed {
            log(
                "note: \(path) changed since it was built (an exported pack is a hard link to it: edited in "
                    + "place?); building \(id) again"
            )
        }
        if !started {
            // At start-up: anything in packs/ that no record names is left from an earlier run, a killed build
            // (`<id>.building`, `.<name>.tmp-…`) included.
            started = true
            let referenced = Set(state.packs.values.filter { !$0.removed }.map(\.archive))
            let leftovers = archives.filter { !referenced.contains($0) }.map { packsFolder.appending($0) }
            if !leftovers.isEmpty {
                _ = try? await BlockingIO.longJob { for path in leftovers { _ = unlink(path.string) } }
            }
        }
        return (scan, fingerprints, archives)
    }

    /// Builds `toBuild` in order, each published as soon as it is built; a pack that fails adds its problem,
    /// and a cancellation stops the pack under way and keeps what was built before.
    /// - Returns: Whether the state changed.
    private func buildAll(
        _ toBuild: [(source: PackSource, fingerprint: String)],
        report: inout CatalogReport,
        problems: inout [ManifestProblem]
    ) async throws -> Bool {
        var changed = false
        let clock = ContinuousClock()
        var lastProgress = clock.now
        for (number, (source, fingerprint)) in toBuild.enumerated() {
            if Task.isCancelled { break }
            let id = source.manifest.assetPackID
            let previous = state.packs[id]
            defer {
                building.remove(id)
                if toBuild.count > 1, clock.now - lastProgress >= .seconds(1) {
                    lastProgress = clock.now
                    log("built \(number + 1) of \(toBuild.count) packs; each is served as soon as it is built")
                }
            }
            do {
                let record = try await build(source, fingerprint: fingerprint, previous: previous)
                if let previous, previous.archive != record.archive {
                    superseded[id, default: []].append(packsFolder.appending(previous.archive))
                }
                if let previous, previous.sha256 != record.sha256, let pin = pin(of: id) {
                    report.warnings.append(
                        "\(id) changed, but it is published as version \(pin) whatever its content (--pack-version or "
                            + "PUT /_mock/packs/\(id)/version): clients that have version \(pin) will not update. Fix: "
                            + "publish a higher version, or unpin it (DELETE /_mock/packs/\(id)/version)"
                    )
                }
                state.packs[id] = record
                building.remove(id)
                changed = true
                let fromVersion = previous.flatMap { $0.removed ? nil : self.published($0, id: id) }
                if fromVersion != self.published(record, id: id) || previous?.removed == true {
                    report.changes.append(.init(id: id, from: fromVersion, to: self.published(record, id: id)))
                }
                if number + 1 < toBuild.count { try await publishAndSaveIfDue(clock) }
            } catch is CancellationError {
                break  // the pack under way stopped within a buffer; what was built before is saved below
            } catch let error as AssetPackFormatError {
                report.problems.append(error)
                var problem = ManifestProblem(error, file: source.manifestFile, key: "(build)")
                problem.pack = id
                problems.append(problem)
            }
        }
        return changed
    }

    /// Unpublishes each pack whose manifest is gone or now names another pack; one whose manifest is still
    /// there but no longer valid keeps its last good version published while it is being fixed.
    /// - Returns: Whether the state changed.
    private func unpublishGone(_ scan: AssetFolder.Scan, present: Set<String>, report: inout CatalogReport) -> Bool {
        var changed = false
        // Manifests are compared by file name (they sit at the folder's top level): the state file recorded
        // the path as the folder was spelled then, which need not be how it is spelled now.
        let validNames = Set(scan.sources.map { Self.manifestName($0.manifestFile) })
        let presentNames = Set(scan.manifestFiles.map(Self.manifestName))
        for (id, record) in state.packs where !record.removed && !present.contains(id) {
            let name = Self.manifestName(record.manifestFile)
            if presentNames.contains(name) && !validNames.contains(name) { continue }
            state.packs[id]?.removed = true
            superseded[id, default: []].append(packsFolder.appending(record.archive))
            report.removed.append(id)
            changed = true
        }
        return changed
    }

    /// During a refresh: publishes what is built so far, and saves the state (so that a restart does not
    /// build it again), at most twice a second each, the first time at once.
    func publishAndSaveIfDue(_ clock: ContinuousClock) async throws {
        let now = clock.now
        if lastPublished.map({ now - $0 >= .milliseconds(500) }) ?? true {
            lastPublished = now
            publish()
        }
        if lastSaved.map({ now - $0 >= .milliseconds(500) }) ?? true {
            lastSaved = now
            let (state, file) = (self.state, folder.stateFolder.appending("state.json"))
            try await BlockingIO.shortCall { try state.save(to: file) }
        }
    }
}

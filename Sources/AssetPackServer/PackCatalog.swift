import AssetPackFormat
import Foundation
import NIOPosix
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
}

/// The packs built from an asset folder: builds them (reusing unchanged archives), numbers their versions,
/// keeps the state file, and publishes an immutable ``CatalogSnapshot`` that request handlers read without
/// waiting.
public actor PackCatalog {
    /// The asset folder.
    public nonisolated let folder: AssetFolder
    private let options: PackBuildOptions
    private let pinnedVersions: [String: Int]
    private let retention: Duration
    private let log: @Sendable (String) -> Void
    private var state: MockState
    private var superseded: [(archive: FilePath, since: ContinuousClock.Instant)] = []
    private nonisolated let current = Mutex(CatalogSnapshot(packs: []))
    /// Versions set through the control endpoint, over `pinnedVersions`.
    private var runtimeVersions: [String: Int] = [:]
    /// Packs marked obsolete through the control endpoint: not published until unmarked.
    private var hidden: Set<String> = []
    private var previous: [String: ServedPack] = [:]

    /// The packs published right now.
    public nonisolated var snapshot: CatalogSnapshot { current.withLock { $0 } }

    /// Opens the catalog of a folder; nothing is built until ``refresh()``.
    /// - Parameters:
    ///   - folder: The asset folder.
    ///   - options: How packs are compressed.
    ///   - pinnedVersions: Versions to publish regardless of content, by pack ID (`--pack-version`).
    ///   - retention: How long a superseded archive stays on disk for downloads already under way.
    ///   - log: Receives a line for each build.
    /// - Throws: ``AssetPackServerError`` with code `.state` when the state file cannot be read.
    public init(
        folder: AssetFolder,
        options: PackBuildOptions = PackBuildOptions(),
        pinnedVersions: [String: Int] = [:],
        retention: Duration = .seconds(600),
        log: @escaping @Sendable (String) -> Void = { _ in }
    ) throws {
        self.folder = folder
        self.options = options
        self.pinnedVersions = pinnedVersions
        self.retention = retention
        self.log = log
        self.state = try MockState.load(from: folder.stateFolder.appending("state.json"))
    }

    private var packsFolder: FilePath { folder.stateFolder.appending("packs") }

    /// Scans the folder, builds what changed, and publishes the result.
    ///
    /// A pack whose manifest is invalid or whose build fails keeps its last good version; a pack whose
    /// manifest file is gone is no longer published.
    /// - Returns: What changed.
    /// - Throws: ``AssetPackServerError`` when the folder itself cannot be read or the state not saved.
    @discardableResult
    public func refresh() async throws -> CatalogReport {
        let folder = self.folder
        let scan = try await NIOThreadPool.singleton.runIfActive { try folder.scan() }
        var report = CatalogReport(problems: scan.problems, warnings: scan.warnings)
        try createStateFolders()
        var changed = false
        var present = Set<String>()
        for source in scan.sources {
            let id = source.manifest.assetPackID
            present.insert(id)
            let fingerprint = source.fingerprint(options: options)
            let previous = state.packs[id]
            if let previous, previous.fingerprint == fingerprint, !previous.removed,
                FileManager.default.fileExists(atPath: packsFolder.appending(previous.archive).string)
            {
                continue
            }
            do {
                let record = try await build(source, fingerprint: fingerprint, previous: previous)
                if let previous, previous.archive != record.archive {
                    superseded.append((packsFolder.appending(previous.archive), .now))
                }
                state.packs[id] = record
                changed = true
                let fromVersion = previous.flatMap { $0.removed ? nil : published($0, id: id) }
                if fromVersion != published(record, id: id) || previous?.removed == true {
                    report.changes.append(.init(id: id, from: fromVersion, to: published(record, id: id)))
                }
            } catch let error as AssetPackFormatError {
                report.problems.append(error)
            }
        }
        let validFiles = Set(scan.sources.map(\.manifestFile))
        for (id, record) in state.packs where !record.removed && !present.contains(id) {
            // A manifest that is still there but no longer valid keeps its last good version published while
            // it is being fixed; one that is gone, or now names another pack, unpublishes the pack.
            let stillThere = FileManager.default.fileExists(atPath: record.manifestFile)
            if stillThere && !validFiles.contains(record.manifestFile) { continue }
            state.packs[id]?.removed = true
            superseded.append((packsFolder.appending(record.archive), .now))
            report.removed.append(id)
            changed = true
        }
        if changed { try state.save(to: folder.stateFolder.appending("state.json")) }
        publish()
        removeExpiredArchives()
        return report
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
    public func watch(every interval: Duration, onReport: @escaping @Sendable (CatalogReport) -> Void) async {
        var lastProblems: [String] = []
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
            do {
                let report = try await refresh()
                let problems = report.problems.map(\.message)
                if !report.changes.isEmpty || !report.removed.isEmpty || problems != lastProblems {
                    onReport(report)
                }
                lastProblems = problems
            } catch {
                log("ba-mock: cannot refresh \(folder.root): \(error)")
            }
        }
    }

    private func published(_ record: MockState.Record, id: String) -> Int {
        runtimeVersions[id] ?? pinnedVersions[id] ?? record.version
    }

    /// Publishes pack `id` at `version` from now on, whatever its content (the control endpoint's
    /// counterpart of `--pack-version`), so update flows can be scripted without touching files.
    /// - Throws: ``AssetPackServerError`` with code `.packNotFound` for an unknown pack.
    public func setVersion(_ version: Int, forPackWithID id: String) throws {
        guard state.packs[id] != nil else { throw unknownPack(id) }
        runtimeVersions[id] = version
        publish()
    }

    /// Marks a pack obsolete (no longer published) or publishes it again.
    /// - Throws: ``AssetPackServerError`` with code `.packNotFound` for an unknown pack.
    public func setObsolete(_ obsolete: Bool, packWithID id: String) throws {
        guard state.packs[id] != nil else { throw unknownPack(id) }
        if obsolete { hidden.insert(id) } else { hidden.remove(id) }
        publish()
    }

    private func unknownPack(_ id: String) -> AssetPackServerError {
        AssetPackServerError(
            code: .packNotFound,
            message: "no pack \"\(AssetPackID.printable(id))\" in \(folder.root). Fix: GET /manifest lists the packs"
        )
    }

    private func build(
        _ source: PackSource,
        fingerprint: String,
        previous: MockState.Record?
    ) async throws -> MockState.Record {
        let id = source.manifest.assetPackID
        let options = self.options
        let packsFolder = self.packsFolder
        let building = packsFolder.appending("\(id).building")
        log("building \(id): \(source.files.count) files, \(ByteFormat.string(source.installSize))")
        let built = try await NIOThreadPool.singleton.runIfActive {
            try PackBuilder.build(source, to: building, options: options)
        }
        let name = "\(id)-\(built.sha256.prefix(16)).pack"
        if rename(building.string, packsFolder.appending(name).string) != 0 {
            throw AssetPackFormatError(
                code: .io,
                message: "cannot move the built pack into \(packsFolder)",
                cause: Errno(rawValue: errno)
            )
        }
        let sameContent = previous?.sha256 == built.sha256
        return MockState.Record(
            version: previous.map { sameContent ? $0.version : $0.version + 1 } ?? 1,
            sha256: built.sha256,
            fingerprint: fingerprint,
            archive: name,
            builtAt: sameContent ? (previous?.builtAt ?? Self.now()) : Self.now(),
            downloadSize: built.downloadSize,
            installSize: built.installSize,
            fileCount: built.fileCount,
            compression: built.compression,
            downloadPolicy: source.manifest.downloadPolicy,
            manifestFile: source.manifestFile,
            removed: false
        )
    }

    private static func now() -> Date {
        Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    }

    private func publish() {
        let packs = state.packs.filter { !$0.value.removed && !hidden.contains($0.key) }.map { id, record in
            ServedPack(
                id: id,
                version: published(record, id: id),
                downloadPolicy: record.downloadPolicy,
                archive: packsFolder.appending(record.archive),
                sha256: record.sha256,
                downloadSize: record.downloadSize,
                installSize: record.installSize,
                fileCount: record.fileCount,
                compression: record.compression,
                lastModified: record.builtAt
            )
        }.sorted { $0.id < $1.id }
        let before = current.withLock { $0 }
        for pack in packs {
            if let old = before.pack(withID: pack.id), old.version != pack.version || old.sha256 != pack.sha256 {
                previous[pack.id] = old
            }
        }
        let snapshot = CatalogSnapshot(packs: packs, previous: previous)
        current.withLock { $0 = snapshot }
    }

    private func createStateFolders() throws {
        do {
            try FileManager.default.createDirectory(atPath: packsFolder.string, withIntermediateDirectories: true)
        } catch {
            throw AssetPackServerError(
                code: .state,
                message: "cannot create \(packsFolder). Fix: make the asset folder writable",
                cause: error
            )
        }
        if superseded.isEmpty, state.packs.isEmpty == false {
            // At start-up: anything in packs/ that no record names is left from an earlier run.
            let referenced = Set(state.packs.values.filter { !$0.removed }.map(\.archive))
            for name in (try? FileManager.default.contentsOfDirectory(atPath: packsFolder.string)) ?? []
            where !referenced.contains(name) {
                superseded.append((packsFolder.appending(name), .now - retention))
            }
        }
    }

    /// Deletes superseded archives once no download that began before the swap can still need them.
    private func removeExpiredArchives() {
        let live = Set(current.withLock { $0.packs.map(\.archive) })
        let now = ContinuousClock.now
        superseded.removeAll { item in
            if live.contains(item.archive) { return true }
            guard now - item.since >= retention else { return false }
            _ = unlink(item.archive.string)
            return true
        }
    }
}

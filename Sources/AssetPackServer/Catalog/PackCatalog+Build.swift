import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Building one pack version (and its deltas), publishing the snapshot, and deleting what no longer is.
extension PackCatalog {
    static func manifestName(_ path: String) -> PathKey {
        PathKey(FilePath(path).lastComponent?.string ?? path)
    }

    func published(_ record: MockState.Record, id: String) -> Int {
        pin(of: id) ?? record.version
    }

    /// The version pack `id` is pinned at, from the control endpoint or `--pack-version`.
    func pin(of id: String) -> Int? {
        runtimeVersions[id] ?? pinnedVersions[id]
    }

    /// Builds `source` with its index and, with deltas (`chunked`), the chunks of its large files, cut as they
    /// are packed: the list a later delta compares against.
    private static func buildPack(
        _ source: PackSource,
        to output: FilePath,
        options: PackBuildOptions,
        chunked: Bool
    ) throws -> (BuiltPack, PackIndex, PackChunks?) {
        guard chunked else {
            let (built, index) = try PackBuilder.buildIndexed(source, to: output, options: options)
            return (built, index, nil)
        }
        let (built, index, chunks) = try PackBuilder.buildChunked(source, to: output, options: options)
        return (built, index, chunks)
    }

    func build(
        _ source: PackSource,
        fingerprint: String,
        previous: MockState.Record?
    ) async throws -> MockState.Record {
        let id = source.manifest.assetPackID
        let options = self.options
        let packsFolder = self.packsFolder
        let building = packsFolder.appending("\(id).building")
        log("building \(id): \(ByteFormat.count(source.files.count, "file")), \(ByteFormat.string(source.installSize))")
        let chunked = deltaStore.depth > 0
        let (built, index, chunks, name, modified) = try await BlockingIO.longJob {
            let (built, index, chunks) = try Self.buildPack(source, to: building, options: options, chunked: chunked)
            let name = "\(id)-\(built.sha256.prefix(16)).\(built.format == .aar ? "aar" : "pack")"
            if rename(building.string, packsFolder.appending(name).string) != 0 {
                throw AssetPackFormatError(
                    code: .io,
                    message: "cannot move the built pack into \(packsFolder)",
                    cause: Errno(rawValue: errno)
                )
            }
            let modified = FileDescriptor.regularFileStamp(at: packsFolder.appending(name))?.modified
            return (built, index, chunks, name, modified)
        }
        let sameContent = previous?.sha256 == built.sha256
        let record = MockState.Record(
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
            removed: false,
            platforms: source.manifest.platforms,
            language: source.manifest.language,
            userInfo: source.manifest.userInfo,
            archiveModified: modified
        )
        let (deltaStore, log) = (self.deltaStore, self.log)
        let previousVersion = previous.map { published($0, id: id) }
        return try await BlockingIO.longJob { [record] in  // delta builds read the whole new archive
            var record = record
            try deltaStore.saveIndex(index, sha256: built.sha256, chunks: chunks)
            try deltaStore.update(
                &record,
                previous: previous,
                previousVersion: previousVersion,
                full: packsFolder.appending(name),
                index: index,
                log: log
            )
            return record
        }
    }

    static func now() -> Date {
        Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
    }

    func publish() {
        let built = state.packs.filter { !$0.value.removed && !hidden.contains($0.key) }.map { id, record in
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
                lastModified: record.builtAt,
                platforms: record.platforms,
                language: record.language,
                userInfo: record.userInfo,
                deltas: (record.deltas ?? []).map { delta in
                    ServedPack.Delta(
                        fromVersion: delta.fromVersion,
                        fromSHA256: delta.fromSHA256,
                        archive: deltaStore.deltasFolder.appending(delta.archive),
                        sha256: delta.sha256,
                        downloadSize: delta.downloadSize,
                        fileCount: delta.fileCount
                    )
                },
                format: record.archive.hasSuffix(".aar") ? .aar : .tar  // as build(_:) names them
            )
        }
        let asTheyAre = archives.filter { !hidden.contains($0.id) }.map { archive in
            var pack = archive
            pack.version = pin(of: archive.id) ?? archive.version
            return pack
        }
        let packs = (built + asTheyAre).sorted { $0.id < $1.id }
        let before = current.withLock { $0 }
        for pack in packs {
            if let old = before.pack(withID: pack.id), old.version != pack.version || old.sha256 != pack.sha256 {
                previous[pack.id] = old
            }
        }
        var snapshot = CatalogSnapshot(packs: packs, previous: previous)
        snapshot.problems = problems
        snapshot.building = building
        snapshot.incomplete = incomplete && !building.isEmpty
        current.withLock { $0 = snapshot }
    }

    static func createFolder(_ folder: FilePath) throws {
        do {
            try FileManager.default.createDirectory(atPath: folder.string, withIntermediateDirectories: true)
        } catch {
            throw AssetPackServerError(
                code: .state,
                message: "cannot create \(folder). Fix: make the asset folder writable",
                cause: error
            )
        }
    }

    /// Deletes superseded archives beyond the newest ones each pack keeps (a long job: unlinking a GiB archive
    /// takes a while). A download under way reads a file it opened, deleted or not.
    func removeExpiredArchives() async {
        let live = Set(current.withLock { $0.packs.map(\.archive) })
        var expired: [FilePath] = []
        for (id, archives) in superseded {
            let old = archives.filter { !live.contains($0) }
            let keep = max(0, archivesKept - 1)  // the published one counts
            expired.append(contentsOf: old.dropLast(keep))
            superseded[id] = Array(old.suffix(keep))
        }
        let (paths, records, deltaStore) = (expired, state.packs, self.deltaStore)
        _ = try? await BlockingIO.longJob {
            for path in paths { _ = unlink(path.string) }
            deltaStore.sweep(records)
        }
    }
}

import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// The delta archives of each pack's published version and the indexes of the earlier versions they start
/// from, kept in the asset folder's state: `.ba-mock/indexes/<id>-<digest16>.json` (one per version built)
/// and `.ba-mock/deltas/<id>-<digest16>-from-<base digest16>.delta`. Every call blocks (run it on
/// ``BlockingIO``).
struct DeltaStore: Sendable {
    /// The asset folder's state folder (`.ba-mock`).
    let stateFolder: FilePath
    /// How many earlier versions get a delta to the published one (0: none).
    let depth: Int
    /// The compression of the packs (a delta uses its pack's, see ``deltaOptions``).
    let options: PackBuildOptions

    /// How a delta is written: a pax tar (``PackDelta`` writes no other), with a tar pack's compression; an Apple
    /// Archive pack's deltas with zstd at its default level, as LZFSE has no tar filter (they went uncompressed:
    /// a one-line edit of the sample's Levels took 4 096 bytes, 563 with zstd).
    var deltaOptions: PackBuildOptions {
        options.format == .aar ? PackBuildOptions(format: .tar, compression: .zstd) : options
    }

    var indexesFolder: FilePath { stateFolder.appending("indexes") }
    var deltasFolder: FilePath { stateFolder.appending("deltas") }

    private func indexFile(_ id: String, _ sha256: String) -> FilePath {
        indexesFolder.appending("\(id)-\(sha256.prefix(16)).json")
    }

    private func chunksFile(_ id: String, _ sha256: String) -> FilePath {
        indexesFolder.appending("\(id)-\(sha256.prefix(16)).chunks")
    }

    /// Keeps the index of a version just built, and the chunks of its large files (cut while it was built),
    /// for deltas from and to it later. A version built before keeps the list it has, unless that list is
    /// of the older kind (SHA-256 digests), which this one replaces.
    func saveIndex(_ index: PackIndex, sha256: String, chunks: PackChunks?) throws {
        try PackCatalog.createFolder(indexesFolder)
        try index.write(to: indexFile(index.assetPackID, sha256))
        let file = chunksFile(index.assetPackID, sha256)
        guard depth > 0, let chunks, !chunks.files.isEmpty, !PackChunks.isCurrentList(at: file) else { return }
        try chunks.write(to: file)
    }

    /// The chunk lists of a version, or `nil` when none is kept (deltas from it send changed files whole).
    private func loadChunks(_ id: String, _ sha256: String) -> PackChunks? {
        try? PackChunks.load(from: chunksFile(id, sha256))
    }

    /// Sets the bases and deltas of `record`, just built over `previous` (published then as
    /// `previousVersion`): the previous version and the bases it had, newest first, up to the depth; one
    /// delta from each base whose index is kept. A base that cannot give a delta is skipped (its clients
    /// download the whole pack).
    /// - Parameters:
    ///   - full: The new version's archive.
    ///   - index: Its index.
    ///   - log: Receives a line per delta built, or skipped and why.
    func update(
        _ record: inout MockState.Record,
        previous: MockState.Record?,
        previousVersion: Int?,
        full: FilePath,
        index: PackIndex,
        log: (String) -> Void
    ) throws {
        let id = index.assetPackID
        guard depth > 0, let previous, let previousVersion else {
            record.bases = nil
            record.deltas = nil
            return
        }
        if previous.sha256 == record.sha256 {  // the same archive again: its deltas stand
            record.bases = previous.bases
            record.deltas = previous.deltas
            return
        }
        var bases = [MockState.Base(version: previousVersion, sha256: previous.sha256)]
        for base in previous.bases ?? [] where !bases.contains(where: { $0.sha256 == base.sha256 }) {
            bases.append(base)
        }
        bases = Array(bases.filter { $0.sha256 != record.sha256 }.prefix(depth))
        try PackCatalog.createFolder(deltasFolder)
        var deltas: [MockState.Delta] = []
        for base in bases {
            guard let baseIndex = try? PackIndex.load(from: indexFile(id, base.sha256)) else {
                log("no delta of \(id) from version \(base.version): its index is not kept")
                continue
            }
            let plan = PackDelta.plan(from: baseIndex, to: index)
            let smaller = "no delta of \(id) from version \(base.version): it would be no smaller than the pack"
            let chunks = loadChunks(id, record.sha256).flatMap { target in
                loadChunks(id, base.sha256).map { (target, $0) }
            }
            // Every file changed and none shares a chunk with the base: not worth compressing it all again.
            guard !plan.kept.isEmpty || chunks.map({ !$0.0.files.isEmpty && !$0.1.files.isEmpty }) == true else {
                log(smaller)
                continue
            }
            let name = "\(id)-\(record.sha256.prefix(16))-from-\(base.sha256.prefix(16)).delta"
            let built: BuiltPack
            do {
                built = try PackDelta.build(
                    full: full,
                    target: index,
                    base: baseIndex,
                    chunks: chunks,
                    binding: PackDelta.Binding(assetPackID: id, fromSHA256: base.sha256, toSHA256: record.sha256),
                    to: deltasFolder.appending(name),
                    options: deltaOptions
                )
            } catch {  // the new version is published all the same; its clients download the whole pack
                log("no delta of \(id) from version \(base.version): \(error)")
                continue
            }
            guard built.downloadSize < record.downloadSize else {  // the pack is as good
                _ = unlink(deltasFolder.appending(name).string)
                log(smaller)
                continue
            }
            log(
                "delta of \(id) from version \(base.version): \(ByteFormat.count(plan.carried.count, "file")), "
                    + "\(ByteFormat.string(built.downloadSize)) instead of \(ByteFormat.string(record.downloadSize))"
            )
            deltas.append(
                MockState.Delta(
                    fromVersion: base.version,
                    fromSHA256: base.sha256,
                    archive: name,
                    sha256: built.sha256,
                    downloadSize: built.downloadSize,
                    fileCount: plan.carried.count
                )
            )
        }
        record.bases = bases
        record.deltas = deltas
    }

    /// Drops the bases and deltas of `record` beyond the depth (a restart with a smaller `--delta-depth`).
    /// - Returns: Whether anything was dropped.
    func trim(_ record: inout MockState.Record) -> Bool {
        let bases = Array((record.bases ?? []).prefix(depth))
        let deltas = (record.deltas ?? []).filter { delta in bases.contains { $0.sha256 == delta.fromSHA256 } }
        guard bases.count != (record.bases ?? []).count || deltas.count != (record.deltas ?? []).count else {
            return false
        }
        record.bases = bases.isEmpty ? nil : bases
        record.deltas = deltas.isEmpty ? nil : deltas
        return true
    }

    /// Deletes the indexes and deltas that no record refers to any more (a download under way keeps reading
    /// the file it opened).
    /// - Parameter records: Every pack's record, by ID.
    func sweep(_ records: [String: MockState.Record]) {
        var indexes = Set<String>()
        var deltas = Set<String>()
        for (id, record) in records {
            for sha in [record.sha256] + (record.bases ?? []).map(\.sha256) {
                indexes.insert(indexFile(id, sha).lastComponent?.string ?? "")
                indexes.insert(chunksFile(id, sha).lastComponent?.string ?? "")
            }
            for delta in record.deltas ?? [] { deltas.insert(delta.archive) }
        }
        for (folder, kept) in [(deltasFolder, deltas), (indexesFolder, indexes)] {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.string)) ?? []
            where !kept.contains(name) {
                _ = unlink(folder.appending(name).string)
            }
        }
    }
}

import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// What an install records of a file once it was verified, to trust it later without reading it: where it
/// is (device, inode) and what would change if anything wrote to it (size, modification and change times in
/// nanoseconds; the change time moves with any write, chmod, link or `utimensat`, and cannot be set back).
struct FileStat: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: UInt64
    var modified: UInt64
    var changed: UInt64

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = UInt64(info.st_size)
        modified = UInt64(info.st_mtim.tv_sec) &* 1_000_000_000 &+ UInt64(info.st_mtim.tv_nsec)
        changed = UInt64(info.st_ctim.tv_sec) &* 1_000_000_000 &+ UInt64(info.st_ctim.tv_nsec)
    }

    init(words: ArraySlice<UInt64>) {
        let at = words.startIndex
        (device, inode, size, modified, changed) = (
            words[at], words[at + 1], words[at + 2], words[at + 3], words[at + 4]
        )
    }

    var words: [UInt64] { [device, inode, size, modified, changed] }
}

/// A base file a delta may link without hashing: its row in the base's index and its recorded `stat`.
struct TrustedFile: Sendable {
    var size: Int64
    var sha256: String
    var stat: FileStat
}

extension PackInstaller {
    /// What a delta from `base` needs of the installed version: the binding it must carry, the base's index
    /// and folders (for recipes), and the files whose recorded `stat` lets them be trusted unread.
    static func deltaBase(_ delta: AssetPack.Delta, _ base: InstalledPack, _ pack: AssetPack, store: AppGroupStore)
        throws -> (DeltaBase, [PathKey: TrustedFile])
    {
        let index: PackIndex
        do {
            index = try store.loadIndex(of: base)
        } catch {
            var failure = AssetPackClientError(
                code: .corruptPack,
                message: "the installed index of pack \(pack.id), which a delta starts from, cannot be read",
                assetPackID: pack.id,
                cause: error
            )
            failure.shortReason = "installed index unreadable"
            throw failure
        }
        let folder = base.directory
        let deltaBase = PackDelta.Base(index: index) { path in
            try store.openFolder(folder + (path.isEmpty ? "" : "/" + path), creating: false)
        }
        let binding = PackDelta.Binding(assetPackID: pack.id, fromSHA256: delta.fromSHA256, toSHA256: pack.sha256 ?? "")
        var trusted: [PathKey: TrustedFile] = [:]
        if let stats = loadStats(of: base, files: index.files.count, store: store) {
            for (file, stat) in zip(index.files, stats) {
                trusted[PathKey(file.path)] = TrustedFile(size: file.size, sha256: file.sha256, stat: stat)
            }
        }
        return ((binding, deltaBase), trusted)
    }

    /// Records the `stat` of every file of a version just moved into place (the folder `name` of
    /// `packFolder`), in its index's order (rows read from `indexFile` one at a time), as
    /// ``AppGroupStore/statsName(of:)``: 40 bytes a file. A file that cannot be looked at leaves no record
    /// (later deltas hash).
    static func recordStats(
        indexFile: FilePath,
        in packFolder: FileDescriptor,
        _ name: String,
        id: String,
        store: AppGroupStore
    ) throws {
        let version = try packFolder.openFolder(name, creating: false)
        defer { try? version.close() }
        var words: [UInt64] = []
        try PackIndex.forEachRow(inFile: indexFile) { path, _ in
            var info = stat()
            guard fstatat(version.rawValue, path, &info, AT_SYMLINK_NOFOLLOW) == 0 else { throw Errno(rawValue: errno) }
            words += FileStat(info).words
        }
        let bytes = words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } }
        let folder = try store.openFolder(".ba-sync/stats/\(id)", creating: true)  // never through a link
        defer { try? folder.close() }
        try AtomicFile.write(
            bytes,
            in: folder,
            named: name,
            shownAs: store.controlFolder.appending("stats/\(id)/\(name)")
        )
    }

    /// The stats recorded for a version of `files` files, or `nil` when there are none of that count: read
    /// relative to folders opened without following links, a link, a FIFO or a file of another size in its
    /// place refused unread.
    static func loadStats(of version: InstalledPack, files: Int, store: AppGroupStore) -> [FileStat]? {
        let (folder, name) = AppGroupStore.statsName(of: version)
        guard let records = try? store.openFolder(folder, creating: false) else { return nil }
        defer { try? records.close() }
        guard
            case .bytes(let bytes) = try? FileDescriptor.readSmallRegularFile(
                FilePath(name),
                in: records,
                followingSymlink: false,
                maximumSize: 40 * files
            ),
            bytes.count == 40 * files
        else { return nil }
        let words: [UInt64] = stride(from: 0, to: bytes.count, by: 8).map { at in
            (0..<8).reduce(UInt64(0)) { word, byte in word | UInt64(bytes[at + byte]) << (8 * byte) }
        }
        return stride(from: 0, to: words.count, by: 5).map { FileStat(words: words[$0..<$0 + 5]) }
    }

    /// Links a base file into the staging folder without reading it, when its `stat` is still the one
    /// recorded at its own verified install: the same inode, size and modification and change times (git's
    /// index and rsync's quick check, plus the change time, which a write or `utimensat` moves and nothing
    /// sets back). The link itself moves the change time, so the link is checked by inode, size and
    /// modification time afterwards. `false` when the file cannot be trusted (it is then hashed).
    static func linkTrusted(_ name: String, from source: FileDescriptor, into target: FileDescriptor, _ known: FileStat)
        throws -> Bool
    {
        var before = stat()
        guard fstatat(source.rawValue, name, &before, AT_SYMLINK_NOFOLLOW) == 0, before.st_mode & S_IFMT == S_IFREG,
            FileStat(before) == known
        else { return false }
        guard linkat(source.rawValue, name, target.rawValue, name, 0) == 0 else { return false }
        var after = stat()
        guard fstatat(target.rawValue, name, &after, AT_SYMLINK_NOFOLLOW) == 0 else { return false }
        let linked = FileStat(after)
        if linked.device == known.device, linked.inode == known.inode, linked.size == known.size,
            linked.modified == known.modified
        {
            return true
        }
        _ = unlinkat(target.rawValue, name, 0)  // replaced between the two looks: hashed instead
        return false
    }

    /// Gives the staging folder the files a delta did not carry, from the installed base folder, and hashes
    /// each: a base file that is missing or differs from the new index (tampered, or not the version the
    /// delta starts from) fails the delta. Hard links, not copies: the bytes are not written again (nor
    /// synced), and the base folder is removed once the new version is committed, so no two installed
    /// versions ever share a file; a file is hashed unless its `stat` is the one recorded at its own verified
    /// install (see ``linkTrusted(_:from:into:_:)``). Where links cannot be made
    /// the files are copied. Every folder on both sides is opened relative to the one above it, never
    /// through a symlink (a folder of the installed pack replaced by a link to elsewhere fails the delta), and
    /// each link is made between folder descriptors. Two threads hash, as the machine has two cores to spare.
    static func copyUnchanged(
        _ files: [PackIndex.File],
        from base: InstalledPack,
        into staging: FilePath,
        _ pack: AssetPack,
        store: AppGroupStore,
        trusting trusted: [PathKey: TrustedFile] = [:]
    ) throws {
        // The files of one folder together, so that each folder is opened once on each side.
        var positions: [PathKey: Int] = [:]
        var grouped: [(folder: String, files: [PackIndex.File])] = []
        for file in files {
            let folder = PackPath.split(file.path).folder
            if let at = positions[PathKey(folder)] {
                grouped[at].files.append(file)
            } else {
                positions[PathKey(folder)] = grouped.count
                grouped.append((folder, [file]))
            }
        }
        let groups = grouped
        let stagingName = staging.lastComponent?.string ?? ""
        let next = Mutex(0)
        let failure = Mutex<(any Error)?>(nil)
        DispatchQueue.concurrentPerform(iterations: min(2, groups.count)) { _ in
            while failure.withLock({ $0 == nil }) {
                let taken = next.withLock { value in
                    defer { value += 1 }
                    return value
                }
                guard taken < groups.count else { return }
                do {
                    let (folder, files) = groups[taken]
                    let source: FileDescriptor
                    do {
                        source = try store.openFolder(
                            base.directory + (folder.isEmpty ? "" : "/" + folder),
                            creating: false
                        )
                    } catch {
                        // Gone, or a link where the installed folder was: reported as its first file.
                        throw unusable(files.first, pack, error)
                    }
                    defer { try? source.close() }
                    let target = try store.openFolder(
                        ".ba-sync/staging/\(stagingName)" + (folder.isEmpty ? "" : "/" + folder),
                        creating: true
                    )
                    defer { try? target.close() }
                    for file in files {
                        try reuse(file, from: source, into: target, base: base, pack, store: store, trusted: trusted)
                    }
                } catch {
                    failure.withLock { $0 = $0 ?? error }
                }
            }
        }
        if let failure = failure.withLock({ $0 }) { throw failure }
    }

    /// A base file the delta keeps that cannot be had: missing, unreadable, or reached through a link.
    private static func unusable(_ file: PackIndex.File?, _ pack: AssetPack, _ error: any Error) -> any Error {
        if AssetPackClientError.isDiskFull(error) { return error }
        let path = file?.path ?? "?"
        let gone = AssetPackClientError.isNotFound(error)
        var failure = AssetPackClientError(
            code: .corruptPack,
            message:
                "the installed \(path) of pack \(pack.id), which the delta keeps, "
                + (gone ? "is missing" : "cannot be read"),
            assetPackID: pack.id,
            cause: error
        )
        failure.shortReason = "installed \(path) \(gone ? "missing" : "unreadable")"
        return failure
    }

    /// Links (or copies) one unchanged file from a folder of the base into the same folder of the staging
    /// folder, and checks it.
    private static func reuse(
        _ file: PackIndex.File,
        from source: FileDescriptor,
        into target: FileDescriptor,
        base: InstalledPack,
        _ pack: AssetPack,
        store: AppGroupStore,
        trusted: [PathKey: TrustedFile]
    ) throws {
        let name = PackPath.split(file.path).name
        if let known = trusted[PathKey(file.path)], known.size == file.size, known.sha256 == file.sha256,
            try linkTrusted(name, from: source, into: target, known.stat)
        {
            return
        }
        let reused: (size: Int64, sha256: String)
        do {
            reused = try FileDigest.link(
                name,
                in: source,
                to: target,
                name,
                shownAs: store.root.appending(base.directory).appending(file.path)
            )
        } catch {
            throw unusable(file, pack, error)
        }
        guard reused.size == file.size, reused.sha256 == file.sha256 else {
            var failure = AssetPackClientError(
                code: .corruptPack,
                message:
                    "the installed \(file.path) of pack \(pack.id) differs from what the delta expects (changed "
                    + "since it was installed?)",
                assetPackID: pack.id
            )
            failure.shortReason = "installed \(file.path) differs from its index"
            throw failure
        }
    }
}

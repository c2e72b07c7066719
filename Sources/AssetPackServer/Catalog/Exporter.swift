import AssetPackFormat
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Writes the packs of a catalog as a static tree: `manifest`, `assets/<id>` and `deltas/<id>/<base>`, which nginx, an object
/// store or a CDN can serve so that a client sees what `ba-mock serve` would give it.
public enum Exporter {
    /// What an export wrote.
    public struct Result: Sendable {
        /// The manifest written.
        public var manifest: DownloadManifest
        /// The `manifest` file.
        public var manifestFile: FilePath
        /// The manifests of one platform each (`manifest-iOS.json`), by platform.
        public var platformManifests: [String: FilePath] = [:]
        /// Files an earlier export recorded that were left in place, and why (a symlink on the way to one, a
        /// recorded path that leaves the folder).
        public var warnings: [String] = []
    }

    /// What an export wrote, kept in `OUT/.ba-mock-export.json`, so that a later export removes only files it
    /// wrote itself.
    private struct Record: Codable, Sendable {
        /// Paths relative to the output folder.
        var files: [String]
    }

    private static let recordName = ".ba-mock-export.json"

    /// Exports the published packs of `snapshot` into `folder`.
    ///
    /// Each file is written under a temporary name and renamed into place. Pack files that an earlier
    /// export wrote (it keeps a record in `.ba-mock-export.json`) and that are no longer published are
    /// removed; anything else in the folder is left alone, whatever its name. Below `folder` nothing is reached
    /// through a symlink: every folder on the way is opened relative to the one before it, never following one
    /// (a symlink planted in the output folder could lead anywhere).
    /// - Parameters:
    ///   - snapshot: The packs to export.
    ///   - folder: The output folder (created if needed).
    ///   - baseURL: Written before `assets/<id>` in pack URLs; `nil` writes relative URLs, which a client
    ///     resolves against the manifest's own URL.
    ///   - platforms: Platforms (as ``DownloadManifest/platform(named:)`` spells them) to write a manifest of
    ///     their own for, `manifest-<platform>.json` beside `manifest`, holding only the packs for that platform
    ///     (as `ba-package download-manifest create --ios` makes one per platform).
    ///   - linking: Put each pack archive as a hard link to the archive built in `.ba-mock` where the file
    ///     system allows (its bytes are written once, not twice; ba-mock never writes into an archive it
    ///     built, and builds again one that changed, see ``MockState/Record/isAsBuilt(_:)``), else as a copy.
    /// - Returns: The manifest written, and the recorded files left in place.
    /// - Throws: ``AssetPackFormatError`` with code `.io`, `.unsafePath` (a symlink where export writes) or
    ///   `.invalidState` (a damaged record, or one that is not a regular file).
    public static func export(
        _ snapshot: CatalogSnapshot,
        to folder: FilePath,
        baseURL: String?,
        platforms: [String] = [],
        linking: Bool = true
    ) throws -> Result {
        try AtomicFile.makeFolder(folder, option: "--out")
        // The folder itself is the user's choice, through a symlink or not; what is below it is not.
        let out: FileDescriptor
        do {
            out = try FileDescriptor.openFolder(folder)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot open \(folder): \(error)", cause: error)
        }
        return try out.closeAfter {
            try export(snapshot, into: out, shownAs: folder, baseURL: baseURL, platforms: platforms, linking: linking)
        }
    }

    private static func export(
        _ snapshot: CatalogSnapshot,
        into out: FileDescriptor,
        shownAs folder: FilePath,
        baseURL: String?,
        platforms: [String],
        linking: Bool
    ) throws -> Result {
        let record = StateFile<Record>(folder.appending(recordName))
        let before = Set(try record.load(in: out)?.files ?? [])
        var written: [String] = []
        let files = snapshot.packs.flatMap { pack in
            [(pack.archive, "assets/\(pack.id)", linking)] + pack.deltas.map { ($0.archive, pack.deltaPath($0), false) }
        }
        for (source, path, link) in files {
            let (folders, name) = split(path)
            try withFolder(folders, in: out, shownAs: folder, creating: true) { parent in
                let shownAs = folder.appending(path)
                if link, try AtomicFile.link(source, in: parent, named: name, shownAs: shownAs) { return }
                try copy(source, into: parent, named: name, shownAs: shownAs)
            }
            written.append(path)
        }
        let manifest = snapshot.manifest(baseURL: baseURL ?? "")
        let manifestFile = folder.appending("manifest")
        var platformManifests: [String: FilePath] = [:]
        // The platforms' first, so that a client reading `manifest` never sees it ahead of them.
        for platform in Set(platforms).sorted() {
            let name = "manifest-\(platform).json"
            try write(manifest.only(platform: platform), in: out, named: name, shownAs: folder.appending(name))
            platformManifests[platform] = folder.appending(name)
            written.append(name)
        }
        try write(manifest, in: out, named: "manifest", shownAs: manifestFile)
        written.append("manifest")
        try record.save(Record(files: written.sorted()), in: out)
        var warnings: [String] = []
        for stale in before.subtracting(written).sorted() {
            if let warning = remove(stale, in: out, shownAs: folder) { warnings.append(warning) }
        }
        return Result(
            manifest: manifest,
            manifestFile: manifestFile,
            platformManifests: platformManifests,
            warnings: warnings
        )
    }

    /// Writes a manifest as the file `name` of `out`, atomically.
    private static func write(
        _ manifest: DownloadManifest,
        in out: FileDescriptor,
        named name: String,
        shownAs path: FilePath
    ) throws {
        let bytes: Data
        do {
            bytes = try manifest.encoded()
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot encode the manifest: \(error)")
        }
        try AtomicFile.write(bytes, in: out, named: name, shownAs: path)
    }

    /// Removes a file an earlier export recorded, reached as export writes: never through a symlink, never
    /// outside the folder, never a folder.
    /// - Returns: A warning when the file was left in place for any reason but being gone already.
    private static func remove(_ stale: String, in out: FileDescriptor, shownAs folder: FilePath) -> String? {
        // The record is a file anyone who can write the folder can edit: its paths are checked as pack entry
        // paths are (relative, normalized, no `..`).
        guard PackPath.normalize(stale) == stale else {
            return "left \"\(stale)\" alone: \(folder.appending(recordName)) lists it, but it is not a path inside "
                + "\(folder)"
        }
        let (folders, name) = split(stale)
        do {
            return try withFolder(folders, in: out, shownAs: folder, creating: false) { parent in
                guard unlinkat(parent.rawValue, name, 0) != 0 else { return nil }
                let failure = Errno(rawValue: errno)
                guard failure != .noSuchFileOrDirectory else { return nil }
                return "could not remove \(folder.appending(stale)), which an earlier export wrote: \(failure)"
            }
        } catch let error as AssetPackFormatError where error.code == .notFound {
            return nil
        } catch let error as AssetPackFormatError {
            return "left \(folder.appending(stale)) alone: \(error.message)"
        } catch {
            return "left \(folder.appending(stale)) alone: \(error)"
        }
    }

    /// `deltas/Levels/3584aeb430e24fa9` → (["deltas", "Levels"], "3584aeb430e24fa9"), split at `/` bytes.
    private static func split(_ relative: String) -> (folders: [String], name: String) {
        var components = Substring(relative).utf8.split(separator: UInt8(ascii: "/")).map { String(Substring($0)) }
        let name = components.popLast() ?? ""
        return (components, name)
    }

    /// Runs `body` with the folder at `folders` below `out`, opened with ``FileDescriptor/openFolder(_:creating:)``
    /// (a component at a time, `O_DIRECTORY | O_NOFOLLOW`, made first when `creating`): a symlink anywhere on the
    /// way is refused, never followed.
    /// - Throws: What `body` throws, or ``AssetPackFormatError`` with code `.unsafePath` for a symlink on the
    ///   way, `.notFound` when a folder is missing (and not `creating`), or `.io`.
    private static func withFolder<T>(
        _ folders: [String],
        in out: FileDescriptor,
        shownAs folder: FilePath,
        creating: Bool,
        _ body: (FileDescriptor) throws -> T
    ) throws -> T {
        let parent: FileDescriptor
        do {
            parent = try out.openFolder(folders.joined(separator: "/"), creating: creating)
        } catch {
            throw folderError(error, folders, in: out, shownAs: folder)
        }
        return try parent.closeAfter { try body(parent) }
    }

    /// The error for folders that could not be opened, naming the first one on the way that is a symlink or not
    /// a folder (the `Errno`, ELOOP or ENOTDIR, would only confuse then). The names are looked up again for the
    /// message only.
    private static func folderError(
        _ errno: Errno,
        _ folders: [String],
        in out: FileDescriptor,
        shownAs folder: FilePath
    )
        -> AssetPackFormatError
    {
        var path = folder
        for index in folders.indices {
            path.append(folders[index])
            guard let kind = out.entryKind(folders[...index].joined(separator: "/")) else { break }
            if kind == .symlink {
                return AssetPackFormatError(
                    code: .unsafePath,
                    message:
                        "\(path) is a symlink: export never writes or removes anything through one, as it could lead "
                        + "out of the output folder. Fix: remove \(path), or export into another folder"
                )
            }
            if kind != .folder {
                return AssetPackFormatError(
                    code: .io,
                    message: "\(path) is not a folder. Fix: remove it, or export into another folder"
                )
            }
        }
        if errno == .noSuchFileOrDirectory {
            return AssetPackFormatError(code: .notFound, message: "\(path) does not exist", cause: errno)
        }
        return AssetPackFormatError(code: .io, message: "cannot open \(path): \(errno)", cause: errno)
    }

    private static func copy(
        _ source: FilePath,
        into folder: FileDescriptor,
        named name: String,
        shownAs destination: FilePath
    ) throws {
        let input: FileDescriptor
        do {
            input = try FileDescriptor.open(source, .readOnly, options: [.noFollow, .closeOnExec])
        } catch let errno as Errno {
            throw AssetPackFormatError(code: .io, message: "cannot open \(source): \(errno)", cause: errno)
        }
        try input.closeAfter {
            try AtomicFile.write(in: folder, named: name, shownAs: destination) { output in
                do {
                    // In the kernel where it can (a pack's bytes need no trip through this process), else by
                    // reading and writing.
                    if try !input.copyRestInKernel(to: output) {
                        _ = try input.forEachChunk { _ = try output.writeAll($0) }
                    }
                } catch let errno as Errno {
                    throw AssetPackFormatError(code: .io, message: "cannot copy \(source) to \(destination): \(errno)")
                }
            }
        }
    }
}

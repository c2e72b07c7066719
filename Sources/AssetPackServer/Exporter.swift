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
    }

    /// What an export wrote, kept in `OUT/.ba-mock-export.json`, so that a later export removes only files it
    /// wrote itself.
    private struct Record: Codable, Sendable {
        /// Paths relative to the output folder.
        var files: [String]
    }

    /// Exports the published packs of `snapshot` into `folder`.
    ///
    /// Each file is written under a temporary name and renamed into place. Pack files that an earlier
    /// export wrote (it keeps a record in `.ba-mock-export.json`) and that are no longer published are
    /// removed; anything else in the folder is left alone, whatever its name.
    /// - Parameters:
    ///   - snapshot: The packs to export.
    ///   - folder: The output folder (created if needed).
    ///   - baseURL: Written before `assets/<id>` in pack URLs; `nil` writes relative URLs, which a client
    ///     resolves against the manifest's own URL.
    /// - Returns: The manifest written.
    /// - Throws: ``AssetPackFormatError`` with code `.io` or `.invalidState` (a damaged record).
    public static func export(_ snapshot: CatalogSnapshot, to folder: FilePath, baseURL: String?) throws -> Result {
        let assets = folder.appending("assets")
        do {
            try FileManager.default.createDirectory(atPath: assets.string, withIntermediateDirectories: true)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot create \(assets): \(error)")
        }
        let record = StateFile<Record>(folder.appending(".ba-mock-export.json"))
        let before = Set(try record.load()?.files ?? [])
        var written: [String] = []
        for pack in snapshot.packs {
            try copy(pack.archive, to: assets.appending(pack.id))
            written.append("assets/\(pack.id)")
            for delta in pack.deltas {
                let path = pack.deltaPath(delta)
                let target = folder.appending(path)
                do {
                    try FileManager.default.createDirectory(
                        atPath: target.removingLastComponent().string,
                        withIntermediateDirectories: true
                    )
                } catch {
                    throw AssetPackFormatError(
                        code: .io,
                        message: "cannot create \(target.removingLastComponent()): \(error)"
                    )
                }
                try copy(delta.archive, to: target)
                written.append(path)
            }
        }
        let manifest = snapshot.manifest(baseURL: baseURL ?? "")
        let manifestFile = folder.appending("manifest")
        let bytes: Data
        do {
            bytes = try manifest.encoded()
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot encode the manifest: \(error)")
        }
        try AtomicFile.write(bytes, to: manifestFile)
        written.append("manifest")
        try record.save(Record(files: written.sorted()))
        for stale in before.subtracting(written) where PackPath.normalize(stale) == stale {
            _ = unlink(folder.appending(stale).string)  // a file, never a folder: only what was written here
        }
        return Result(manifest: manifest, manifestFile: manifestFile)
    }

    private static func copy(_ source: FilePath, to destination: FilePath) throws {
        let input: FileDescriptor
        do {
            input = try FileDescriptor.open(source, .readOnly)
        } catch let errno as Errno {
            throw AssetPackFormatError(code: .io, message: "cannot open \(source): \(errno)", cause: errno)
        }
        try input.closeAfter {
            try AtomicFile.write(to: destination) { output in
                do {
                    try input.forEachChunk { _ = try output.writeAll($0) }
                } catch let errno as Errno {
                    throw AssetPackFormatError(code: .io, message: "cannot copy \(source) to \(destination): \(errno)")
                }
            }
        }
    }
}

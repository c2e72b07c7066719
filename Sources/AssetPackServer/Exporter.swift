import AssetPackFormat
import Foundation
import SystemPackage

/// Writes the packs of a catalog as a static tree: `manifest` and `assets/<id>`, which nginx, an object
/// store or a CDN can serve so that a client sees what `ba-mock serve` would give it.
public enum Exporter {
    /// What an export wrote.
    public struct Result: Sendable {
        /// The manifest written.
        public var manifest: DownloadManifest
        /// The `manifest` file.
        public var manifestFile: FilePath
    }

    /// Exports the published packs of `snapshot` into `folder`.
    ///
    /// Each file is written under a temporary name and renamed into place; pack files from an earlier
    /// export that are no longer published are removed, anything else in the folder is left alone.
    /// - Parameters:
    ///   - snapshot: The packs to export.
    ///   - folder: The output folder (created if needed).
    ///   - baseURL: Written before `assets/<id>` in pack URLs; `nil` writes relative URLs, which a client
    ///     resolves against the manifest's own URL.
    /// - Returns: The manifest written.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func export(_ snapshot: CatalogSnapshot, to folder: FilePath, baseURL: String?) throws -> Result {
        let assets = folder.appending("assets")
        do {
            try FileManager.default.createDirectory(atPath: assets.string, withIntermediateDirectories: true)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot create \(assets): \(error)")
        }
        for pack in snapshot.packs {
            try copy(pack.archive, to: assets.appending(pack.id))
        }
        let published = Set(snapshot.packs.map(\.id))
        for name in (try? FileManager.default.contentsOfDirectory(atPath: assets.string)) ?? []
        where !published.contains(name) && AssetPackID.problem(with: name) == nil {
            try? FileManager.default.removeItem(atPath: assets.appending(name).string)
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

import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

extension UpgradeMatrix {
    /// A release ready to serve: the folder served at `/r<n>/`, and what it publishes.
    struct Published: Sendable {
        var folder: FilePath
        var release: Release
    }

    /// Makes each release servable, in order: an export folder as it is; an asset folder copied over one
    /// working folder and exported, so that its packs' versions follow the releases before it.
    /// - Parameters:
    ///   - platform: The platform played: a release lists only the packs it sees.
    ///   - work: A folder of the matrix's own (`build/` and `releases/<n>/` are written in it).
    /// - Throws: ``UpgradeMatrixError`` for an input that is neither; what the export throws.
    static func publish(
        _ inputs: [FilePath],
        options: PackBuildOptions,
        platform: String?,
        in work: FilePath,
        progress: @escaping @Sendable (Progress) -> Void
    ) async throws -> [Published] {
        let build = work.appending("build")
        var published: [Published] = []
        for (offset, input) in inputs.enumerated() {
            let number = offset + 1
            let kind = try await BlockingIO.shortCall { try Self.kind(of: input) }
            var folder: FilePath
            var name = "manifest"
            switch kind {
            case .export:
                folder = input
            case .manifest:
                // Served from its own folder, so that relative pack URLs find what lies beside it.
                folder = input.removingLastComponent()
                name = input.lastComponent?.string ?? name
            case .assets:
                try await BlockingIO.longJob { try Self.replaceContent(of: build, with: input) }
                folder = work.appending("releases/\(number)")
                var export = Exporter.Options(folder: build, out: folder)
                export.packOptions = options
                do {
                    _ = try await Exporter.export(export) { progress(.note("release \(number): \($0)")) }
                } catch {
                    // The build folder is the matrix's own: the user knows the release by what was given.
                    let text = "\(error)".replacingOccurrences(of: build.string, with: input.string)
                    throw UpgradeMatrixError("release \(number) (\(input)) cannot be built: \(text)", isUsage: false)
                }
            }
            let file = folder.appending(name)
            let manifest: DownloadManifest
            do {
                manifest = try await BlockingIO.shortCall {
                    try DownloadManifest.decode(
                        try Data(contentsOf: URL(fileURLWithPath: file.string)),
                        source: file.string
                    )
                }
            } catch {
                throw UpgradeMatrixError(
                    "release \(number) (\(input)) is not a download manifest: \(error). Fix: give an asset folder, a "
                        + "folder `ba-mock export` wrote, or the manifest file it holds"
                )
            }
            let visible = manifest.assetPacks.filter { entry in platform.map { entry.isFor(platform: $0) } ?? true }
            var release = Release(
                number: number,
                source: input.string,
                packs: Dictionary(visible.map { ($0.id, $0.version) }) { first, _ in first }
            )
            release.manifestName = name
            release.digests = Dictionary(visible.compactMap { entry in entry.sha256.map { (entry.id, $0) } }) { a, _ in
                a
            }
            progress(.release(release))
            published.append(Published(folder: folder, release: release))
        }
        return published
    }

    enum Kind { case assets, export, manifest }

    /// Whether `input` is a download manifest (a file), an export (a folder holding a `manifest` file) or an
    /// asset folder.
    static func kind(of input: FilePath) throws -> Kind {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: input.string, isDirectory: &isFolder) else {
            throw UpgradeMatrixError(
                "\(input) does not exist. Fix: give each release as an asset folder, a folder `ba-mock export` "
                    + "wrote, or a download manifest"
            )
        }
        if !isFolder.boolValue {
            // A FIFO or a device where a manifest should be would block the read for good.
            let type = try? FileManager.default.attributesOfItem(atPath: input.string)[.type] as? FileAttributeType
            guard type == .typeRegular else {
                throw UpgradeMatrixError("\(input) is not a regular file. Fix: give a download manifest, or a folder")
            }
            return .manifest
        }
        let manifest = input.appending("manifest").string
        if FileManager.default.fileExists(atPath: manifest, isDirectory: &isFolder), !isFolder.boolValue {
            return .export
        }
        return .assets
    }

    /// Makes `build` hold what `source` holds, keeping only `build/.ba-mock` (the versions built so far); the
    /// source's own `.ba-mock` is not copied.
    static func replaceContent(of build: FilePath, with source: FilePath) throws {
        let files = FileManager.default
        try files.createDirectory(atPath: build.string, withIntermediateDirectories: true)
        for name in try files.contentsOfDirectory(atPath: build.string) where name != ".ba-mock" {
            try files.removeItem(atPath: build.appending(name).string)
        }
        for name in try files.contentsOfDirectory(atPath: source.string) where name != ".ba-mock" {
            try files.copyItem(atPath: source.appending(name).string, toPath: build.appending(name).string)
        }
    }
}

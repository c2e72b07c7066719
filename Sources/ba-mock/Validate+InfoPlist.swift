import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

/// `validate --info-plist`: the app's Background Assets keys, alone and against the packs.
struct InfoPlistOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "An app's Info.plist (XML or binary): checks its Background Assets keys (Apple-hosted or self-hosted), then the packs a first install downloads against its limits (BAEssentialMaxInstallSize, BAMaxInstallSize, the allowances and the domain allow list of BAInitialDownloadRestrictions). The packs are built from FOLDER as `export` builds them (the same --format, --compression and --delta-depth give the same sizes and manifest; built in a temporary folder from a copy of FOLDER/.ba-mock, so the folder is left as it was), unless --download-manifest is given.",
            valueName: "file"
        )
    )
    var infoPlist: FilePath?

    @Option(
        help: ArgumentHelp(
            "With --info-plist: check this published download manifest (e.g. OUT/manifest of `export`) instead of building FOLDER's packs; its relative URLs resolve against BAManifestURL.",
            valueName: "file"
        )
    )
    var downloadManifest: FilePath?

    @OptionGroup var build: BuildOptions
    @OptionGroup var deltas: DeltaOptions

    func validate() throws {
        if downloadManifest != nil, infoPlist == nil {
            throw ValidationError("--download-manifest is checked against an app's limits: give --info-plist too")
        }
    }

    /// The problems of the Info.plist, alone and against the packs of the first folder of `targets` (or of
    /// --download-manifest); none without --info-plist.
    /// - Parameter targets: What `validate` was given: folders and manifest files.
    func problems(in targets: [FilePath]) async throws -> [ManifestProblem] {
        guard let infoPlist else { return [] }
        let check = try await BlockingIO.shortCall { try AppInfoPlist.read(file: infoPlist) }
        guard let plist = check.plist else { return check.problems }
        let file = infoPlist.string
        let problems = check.problems + plist.problems(file: file)
        guard !plist.isAppleHosted else { return problems }
        let manifest: DownloadManifest
        let size: Int64
        if let downloadManifest {
            (manifest, size) = try await BlockingIO.shortCall { try DownloadManifest.read(file: downloadManifest) }
        } else {
            let folder = targets.first { path in
                var isFolder: ObjCBool = false
                return FileManager.default.fileExists(atPath: path.string, isDirectory: &isFolder) && isFolder.boolValue
            }
            guard let folder else { return problems }
            do {
                let (options, depth) = (build.packOptions, deltas.deltaDepth)
                // A check changes nothing of what it checks: the packs are built beside a copy of the state.
                let aside = try await BlockingIO.longJob { try AssetFolder(root: folder).withStateAside() }
                do {
                    let catalog = try await BlockingIO.shortCall {  // reads the state file
                        try PackCatalog(folder: aside, options: options, deltaDepth: depth)
                    }
                    _ = try await catalog.load()  // its warnings are the manifests' own, listed already
                    manifest = catalog.snapshot.manifest(baseURL: "")
                    size = Int64(try manifest.encoded().count)
                    try await BlockingIO.longJob { aside.removeStateAside() }
                } catch {
                    try await BlockingIO.longJob { aside.removeStateAside() }
                    throw error
                }
            } catch {
                // Invalid manifests are listed above already; another failure (a pack that does not build) is said.
                let invalid = (error as? AssetPackServerError)?.code == .invalidAssetFolder
                return problems + [
                    ManifestProblem(
                        file: folder.string,
                        key: "(packs)",
                        severity: .error,
                        message: "could not be built, so the Info.plist's limits were not checked"
                            + (invalid ? " (its manifests have the errors above)" : ": \(error)"),
                        fix: invalid ? "fix them, or pass --download-manifest" : "pass --download-manifest"
                    )
                ]
            }
        }
        return problems + plist.problems(against: manifest, manifestSize: size, file: file)
    }
}

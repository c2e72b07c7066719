import AssetPackFormat
import Foundation
import SystemPackage

/// `ba-mock validate` as a library call: every problem of asset folders and packaging manifests in one run,
/// and, given an app's Info.plist, its Background Assets keys alone and against the packs a first install
/// downloads. Nothing is built except for those limits, and then beside a copy of the folder's state.
public enum FolderValidation {
    /// What a validation found and what it looked at.
    public struct Report: Sendable, Equatable {
        /// Every problem, errors and warnings, in the order found.
        public var problems: [ManifestProblem]
        /// The manifests, packs and files looked at (valid ones counted), so a CI log shows the gate saw them.
        public var manifests: Int
        public var packs: Int
        public var files: Int

        /// Whether no problem is an error (warnings do not fail the gate).
        public var ok: Bool { !problems.contains { $0.severity == .error } }

        public init(problems: [ManifestProblem], manifests: Int = 0, packs: Int = 0, files: Int = 0) {
            (self.problems, self.manifests, self.packs, self.files) = (problems, manifests, packs, files)
        }
    }

    /// The Info.plist to hold the packs to, and where their sizes come from.
    public struct InfoPlistCheck: Sendable {
        public var file: FilePath
        /// A published download manifest to check instead of building the first folder's packs.
        public var downloadManifest: FilePath?
        /// How the packs are built when they are (as `export` builds them).
        public var options: PackBuildOptions
        public var deltaDepth: Int

        public init(file: FilePath, downloadManifest: FilePath?, options: PackBuildOptions, deltaDepth: Int) {
            (self.file, self.downloadManifest, self.options, self.deltaDepth) = (
                file, downloadManifest, options, deltaDepth
            )
        }
    }

    /// Checks each target: a folder as `serve` and `export` read it, a manifest file with its selector paths
    /// relative to `root`; then the Info.plist when given.
    public static func run(_ targets: [FilePath], root: FilePath, infoPlist: InfoPlistCheck?) async throws -> Report {
        var report = Report(problems: [])
        var manifests: [ManifestSet.Member] = []
        for target in targets {
            guard isFolder(target) else {
                manifests.append(.init(file: target, root: root))
                continue
            }
            let folder = AssetFolder(root: target)
            do {
                let scan = try await BlockingIO.shortCall { try folder.scan() }
                report.problems += scan.manifestProblems
                report.count(manifests: scan.manifestFiles.count, scan.sources)
            } catch let error as AssetPackServerError where error.code == .noAssetFolder {
                // Said as a problem of the folder, so that --json still prints one document.
                var (message, fix) = ManifestProblem.split(error.message)
                if message.hasPrefix(target.string + " ") { message.removeFirst(target.string.count + 1) }
                report.problems.append(
                    ManifestProblem(file: target.string, key: "(folder)", severity: .error, message: message, fix: fix)
                )
            }
        }
        if !manifests.isEmpty {
            let members = manifests
            let result = try await BlockingIO.shortCall { ManifestSet.check(members) }
            report.problems += result.problems
            report.count(manifests: members.count, result.sources)
        }
        if let infoPlist {
            report.problems += try await problems(of: infoPlist, folder: targets.first(where: isFolder))
        }
        return report
    }

    /// The problems of the Info.plist, alone and against the packs of `folder` (or of its download manifest).
    static func problems(of check: InfoPlistCheck, folder: FilePath?) async throws -> [ManifestProblem] {
        let infoPlist = check.file
        let read = try await BlockingIO.shortCall { try AppInfoPlist.read(file: infoPlist) }
        guard let plist = read.plist else { return read.problems }
        let file = infoPlist.string
        let problems = read.problems + plist.problems(file: file)
        guard !plist.isAppleHosted else { return problems }
        let manifest: DownloadManifest
        let size: Int64
        if let downloadManifest = check.downloadManifest {
            (manifest, size) = try await BlockingIO.shortCall { try DownloadManifest.read(file: downloadManifest) }
        } else {
            guard let folder else { return problems }
            do {
                (manifest, size) = try await publishedManifest(of: folder, check.options, check.deltaDepth)
            } catch {
                // Invalid manifests are listed already; another failure (a pack that does not build) is said.
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

    /// The download manifest `folder`'s packs would be published with, and its size; built beside a copy of
    /// the folder's state, so a check changes nothing of what it checks.
    static func publishedManifest(of folder: FilePath, _ options: PackBuildOptions, _ depth: Int) async throws -> (
        DownloadManifest, Int64
    ) {
        let aside = try await BlockingIO.longJob { try AssetFolder(root: folder).withStateAside() }
        do {
            let catalog = try await BlockingIO.shortCall {  // reads the state file
                try PackCatalog(folder: aside, options: options, deltaDepth: depth)
            }
            _ = try await catalog.load()  // its warnings are the manifests' own, listed already
            let manifest = catalog.snapshot.manifest(baseURL: "")
            let size = Int64(try manifest.encoded().count)
            try await BlockingIO.longJob { aside.removeStateAside() }
            return (manifest, size)
        } catch {
            try await BlockingIO.longJob { aside.removeStateAside() }
            throw error
        }
    }

    /// Whether `path` is a folder (following a link, as the tool's argument is).
    static func isFolder(_ path: FilePath) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path.string, isDirectory: &isFolder) && isFolder.boolValue
    }
}

extension FolderValidation.Report {
    /// Counts `manifests` and the packs and files of `sources`.
    mutating func count(manifests: Int, _ sources: [PackSource]) {
        self.manifests += manifests
        packs += sources.count
        files += sources.reduce(0) { $0 + $1.files.count }
    }
}

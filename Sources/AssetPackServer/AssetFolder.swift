import AssetPackFormat
import Foundation
import SystemPackage

/// An asset folder: packaging manifests (`*.json`) at its top level, content below it, selector paths
/// relative to it, as Apple resolves them against the folder `ba-package` runs in.
public struct AssetFolder: Sendable {
    /// The result of reading every manifest of the folder.
    public struct Scan: Sendable {
        /// The packs whose manifests are valid, sorted by ID.
        public var sources: [PackSource]
        /// Invalid manifests, one error each (a duplicate ID names both files).
        public var problems: [AssetPackFormatError]
        /// Warnings: manifest warnings plus paths that two packs share.
        public var warnings: [String]
        /// Every manifest file found, valid or not.
        public var manifestFiles: Set<String> = []
    }

    /// The folder.
    public var root: FilePath

    /// Creates a handle on a folder (nothing is read yet).
    public init(root: FilePath) {
        self.root = root
    }

    /// Where `ba-mock` keeps its state: built packs, versions, TLS files.
    public var stateFolder: FilePath { root.appending(PackPath.stateFolderName) }

    /// Reads and resolves every manifest.
    /// - Returns: Valid packs and the problems of the others; one bad manifest does not hide the rest.
    /// - Throws: ``AssetPackServerError`` with code `.noAssetFolder` when the folder is missing or holds
    ///   no `*.json` file.
    public func scan() throws -> Scan {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.string, isDirectory: &isFolder), isFolder.boolValue else {
            throw AssetPackServerError(
                code: .noAssetFolder,
                message:
                    "no asset folder at \(root). Fix: pass the folder that holds your packaging manifests "
                    + "(`ba-mock serve PATH`), or run from the repository root to serve the sample ./Assets"
            )
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root.string)) ?? []
        let manifests = names.filter { $0.hasSuffix(".json") && !$0.hasPrefix(".") }.sorted()
        guard !manifests.isEmpty else {
            throw AssetPackServerError(
                code: .noAssetFolder,
                message:
                    "\(root) holds no packaging manifests (*.json at its top level). Fix: create one with "
                    + "`ba-mock template > \(root.appending("MyPack.json"))` and edit it"
            )
        }
        var sources: [PackSource] = []
        var problems: [AssetPackFormatError] = []
        var warnings: [String] = []
        var owners: [String: String] = [:]
        for name in manifests {
            let file = root.appending(name)
            do {
                let parsed = try PackagingManifest.load(from: file)
                let id = parsed.manifest.assetPackID
                if let other = owners[id] {
                    problems.append(
                        AssetPackFormatError(
                            code: .duplicatePackID,
                            message:
                                "\(file): assetPackID: \"\(id)\" is also the ID in \(other). Fix: give every pack "
                                + "its own ID"
                        )
                    )
                    continue
                }
                owners[id] = file.string
                sources.append(try PackSource.resolve(parsed, root: root))
            } catch let error as AssetPackFormatError {
                problems.append(error)
            }
        }
        sources.sort { $0.manifest.assetPackID < $1.manifest.assetPackID }
        for source in sources { warnings.append(contentsOf: source.warnings) }
        warnings.append(contentsOf: Self.collisions(sources))
        return Scan(
            sources: sources,
            problems: problems,
            warnings: warnings,
            manifestFiles: Set(manifests.map { root.appending($0).string })
        )
    }

    /// Warnings for paths that more than one pack holds: they collide in the merged namespace.
    static func collisions(_ sources: [PackSource]) -> [String] {
        var packsByPath: [String: [String]] = [:]
        for source in sources {
            for file in source.files { packsByPath[file.path, default: []].append(source.manifest.assetPackID) }
        }
        return packsByPath.filter { $0.value.count > 1 }.keys.sorted().map { path in
            let packs = packsByPath[path, default: []].joined(separator: ", ")
            return "\(path) is in packs \(packs): it collides in the merged namespace on the device, where one "
                + "pack's copy hides the other's. Keep each path in one pack"
        }
    }
}

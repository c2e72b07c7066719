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
        /// Every problem of every manifest, errors and warnings, with file, key and fix (for `validate`).
        public var manifestProblems: [ManifestProblem] = []
    }

    /// The folder.
    public var root: FilePath

    /// Whether a folder without manifests is fine (the private folder of `serve A.aar`, which serves archives
    /// only).
    public var mayBeEmpty = false

    /// Creates a handle on a folder (nothing is read yet).
    public init(root: FilePath, mayBeEmpty: Bool = false) {
        self.root = root
        self.mayBeEmpty = mayBeEmpty
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
        guard !manifests.isEmpty || mayBeEmpty else {
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
        var manifestProblems: [ManifestProblem] = []
        var owners: [String: String] = [:]
        for name in manifests {
            let file = root.appending(name)
            do {
                let checked = try PackagingManifest.check(file: file)
                manifestProblems += checked.problems
                guard let parsed = checked.parsed else {
                    problems.append(try Self.firstError(checked))
                    continue
                }
                let id = parsed.manifest.assetPackID
                if let other = owners[id] {
                    let duplicate = ManifestProblem(
                        file: file.string,
                        key: "assetPackID",
                        severity: .error,
                        message: "\"\(id)\" is also the ID in \(other)",
                        fix: "give every pack its own ID"
                    )
                    manifestProblems.append(duplicate)
                    problems.append(AssetPackFormatError(code: .duplicatePackID, message: duplicate.description))
                    continue
                }
                owners[id] = file.string
                // A server serves nothing from outside its folder: a source root must be inside it.
                let source = try PackSource.resolve(parsed, root: root, boundary: root)
                manifestProblems += source.warnings.dropFirst(parsed.problems.count).map {
                    ManifestProblem(file: file.string, key: "fileSelectors", severity: .warning, message: $0, fix: nil)
                }
                sources.append(source)
            } catch let error as AssetPackFormatError {
                problems.append(error)
                manifestProblems.append(
                    ManifestProblem(
                        file: file.string,
                        key: "fileSelectors",
                        severity: .error,
                        message: error.message,
                        fix: nil
                    )
                )
            }
        }
        sources.sort { $0.manifest.assetPackID < $1.manifest.assetPackID }
        for source in sources { warnings.append(contentsOf: source.warnings) }
        let collisions = Self.collisions(sources)
        warnings.append(contentsOf: collisions.map { "\($0). \(Self.collisionFix)" })
        manifestProblems += collisions.map {
            ManifestProblem(file: root.string, key: "(folder)", severity: .warning, message: $0, fix: Self.collisionFix)
        }
        return Scan(
            sources: sources,
            problems: problems,
            warnings: warnings,
            manifestFiles: Set(manifests.map { root.appending($0).string }),
            manifestProblems: manifestProblems
        )
    }

    /// The first error of a manifest, as the error `load` throws.
    private static func firstError(_ checked: ManifestCheck) throws -> AssetPackFormatError {
        do {
            _ = try PackagingManifest.throwingFirst(checked)
            return AssetPackFormatError(code: .invalidManifest, message: "invalid")
        } catch let error as AssetPackFormatError {
            return error
        }
    }

    static let collisionFix = "Keep each path in one pack (or in localized packs of different languages)"

    /// Warnings for paths that more than one pack of one language holds: they collide in the merged
    /// namespace. Localized packs of different languages never meet on a device, and a localized pack
    /// overrides an unlocalized one by design: neither collides.
    static func collisions(_ sources: [PackSource]) -> [String] {
        // Keyed by String on purpose: two spellings of one name collide on Apple's file systems too. A pack
        // holding both spellings is its own warning (PackSource), not a collision between packs.
        var packsByPath: [String: [(id: String, language: String?)]] = [:]
        for source in sources {
            let id = source.manifest.assetPackID
            let language = source.manifest.language.flatMap { try? LanguageTag(parsing: $0).maximized.description }
            for file in source.files where packsByPath[file.path]?.last?.id != id {
                packsByPath[file.path, default: []].append((id, language))
            }
        }
        return packsByPath.keys.sorted().compactMap { path in
            let holders = packsByPath[path, default: []]
            let byLanguage = Dictionary(grouping: holders, by: \.language).values
            guard let clash = byLanguage.filter({ $0.count > 1 }).max(by: { $0.count < $1.count }) else { return nil }
            let packs = clash.map(\.id).joined(separator: ", ")
            return "\(path) is in packs \(packs): it collides in the merged namespace on the device, where one "
                + "pack's copy hides the other's"
        }
    }
}

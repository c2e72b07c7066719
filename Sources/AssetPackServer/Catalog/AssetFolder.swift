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
        /// When anything the packs are made of last changed (nanoseconds since 1970): a manifest, a selected
        /// file, a folder holding one (a file added, removed or renamed there), or the folder itself.
        public var lastChange: Int64 = 0
    }

    /// The folder.
    public var root: FilePath

    /// Whether a folder without manifests is fine (the private folder of `serve A.aar`, which serves archives
    /// only).
    public var mayBeEmpty = false

    /// A state folder outside the asset folder (a check's temporary copy), or `nil` for `root/.ba-mock`.
    public private(set) var separateState: FilePath?

    /// Creates a handle on a folder (nothing is read yet).
    /// - Parameters:
    ///   - root: The asset folder.
    ///   - mayBeEmpty: Whether a folder without manifests is fine.
    ///   - stateFolder: Where built packs and versions go instead of `root/.ba-mock` (`nil`: there).
    public init(root: FilePath, mayBeEmpty: Bool = false, stateFolder: FilePath? = nil) {
        self.root = root
        self.mayBeEmpty = mayBeEmpty
        self.separateState = stateFolder
    }

    /// Where `ba-mock` keeps its state: built packs, versions, TLS files.
    public var stateFolder: FilePath { separateState ?? root.appending(PackPath.stateFolderName) }

    /// Reads and resolves every manifest.
    /// - Returns: Valid packs and the problems of the others; one bad manifest does not hide the rest.
    /// - Throws: ``AssetPackServerError`` with code `.noAssetFolder` when the folder is missing or holds
    ///   no `*.json` file.
    public func scan() throws -> Scan {
        BlockingIO.checkOffPool("AssetFolder.scan")
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
            let lookalikes = Self.lookalikes(names)
            throw AssetPackServerError(
                code: .noAssetFolder,
                message:
                    "\(root) holds no packaging manifests (*.json at its top level)"
                    + (lookalikes.isEmpty
                        ? "" : "; \(lookalikes.joined(separator: ", ")) not read: only *.json files are")
                    + ". Fix: create one with `ba-mock template > \(root.appending("MyPack.json"))` and edit it"
                    + (lookalikes.isEmpty ? "" : ", or rename those to *.json (// and /* */ comments are allowed)")
            )
        }
        let checked = ManifestSet.check(manifests.map { .init(file: root.appending($0), root: root, boundary: root) })
        // Files that look like manifests but are not read as one: said, not skipped without a word.
        let lookalikes = Self.lookalikes(names).map { name in
            ManifestProblem.warning(
                root.appending(name).string,
                "(file)",
                "is not read: only files named *.json at the folder's top level are packaging manifests",
                fix:
                    "rename it to \(name[..<(name.lastIndex(of: ".") ?? name.endIndex)]).json if it is one (// and /* */ "
                    + "comments are allowed in .json)"
            )
        }
        // Times more than a second ahead of the clock are left out: they would hold every build back, or hide
        // the real last change behind them.
        let limit = Int64(Date().timeIntervalSince1970 * 1e9) + 1_000_000_000
        var folders: Set<String> = [root.string]
        var lastChange: Int64 = 0
        for source in checked.sources {
            for file in source.files {
                lastChange = max(lastChange, file.lastChange(notAfter: limit))
                folders.insert(file.sourceFolder)
            }
        }
        for path in folders.union(manifests.map { root.appending($0).string }) {
            lastChange = max(lastChange, PackFile.lastChange(at: path, notAfter: limit) ?? 0)
        }
        return Scan(
            sources: checked.sources,
            problems: checked.errors,
            warnings: checked.sources.flatMap(\.warnings)
                + checked.collisions.map { "\($0.message). \(ManifestSet.collisionFix)" }
                + lookalikes.map(\.description),
            manifestFiles: Set(manifests.map { root.appending($0).string }),
            manifestProblems: checked.problems + lookalikes,
            lastChange: lastChange
        )
    }

    /// Names that look like manifests but are not read as one (`*.jsonc`, `*.json5`, `*.JSON`), sorted.
    static func lookalikes(_ names: [String]) -> [String] {
        names.filter { name in
            guard !name.hasPrefix("."), !name.hasSuffix(".json"), let dot = name.lastIndex(of: ".") else {
                return false
            }
            return ["json", "jsonc", "json5"].contains(name[name.index(after: dot)...].lowercased())
        }.sorted()
    }
}

import Foundation
import SystemPackage

/// Packaging manifests checked together, as one asset folder or one `validate` run: each manifest's keys, the
/// files each one selects, and what the packs do to each other (one ID twice, one path in two packs). Every
/// problem of every manifest is found in one pass: a wrong key does not hide a missing file, and an invalid
/// manifest still takes part in the checks across packs as far as its valid keys allow.
public enum ManifestSet {
    /// A manifest file and where its selector paths start.
    public struct Member: Sendable {
        /// The manifest file.
        public var file: FilePath
        /// The folder selector paths are relative to when the manifest names no `sourceRoot`.
        public var root: FilePath
        /// A folder the source root must stay inside (a server's asset folder), or `nil`.
        public var boundary: FilePath?

        /// Creates a member.
        public init(file: FilePath, root: FilePath, boundary: FilePath? = nil) {
            self.file = file
            self.root = root
            self.boundary = boundary
        }
    }

    /// What checking the manifests found.
    public struct Result: Sendable {
        /// The packs that can be built, sorted by ID.
        public var sources: [PackSource] = []
        /// One error per manifest that cannot be built (its first problem, and how many more), for callers that
        /// stop at one.
        public var errors: [AssetPackFormatError] = []
        /// Every problem, errors and warnings, with file, key, message and fix.
        public var problems: [ManifestProblem] = []
        /// The problems across packs (paths two packs share), also in `problems`.
        public var collisions: [ManifestProblem] = []
    }

    /// The key of problems across packs.
    public static let acrossPacksKey = "(packs)"

    /// What to do about a path two packs share.
    public static let collisionFix = "Keep each path in one pack (or in localized packs of different languages)"

    /// Checks manifests, each against its files, then across packs.
    ///
    /// A manifest named twice (the same file by two paths) is checked once. An ID that two manifests declare
    /// builds neither: which file was meant is not for a tool to guess (the one whose name sorts first won
    /// before, and a copy of a manifest saved beside it replaced the pack a server published).
    /// - Parameter members: The manifests, in the order they are listed.
    public static func check(_ members: [Member]) -> Result {
        var result = Result()
        var seen: Set<String> = []
        var checks: [(member: Member, check: ManifestCheck)] = []
        for member in members {
            let file = member.file.string
            if let real = try? SourceTree.realPath(member.file, orThrow: "manifest"), !seen.insert(real).inserted {
                continue
            }
            do {
                checks.append((member, try PackagingManifest.check(file: member.file)))
            } catch let error as AssetPackFormatError where error.code == .notFound {
                result.errors.append(error)
                result.problems.append(
                    .error(
                        file,
                        "(file)",
                        "does not exist",
                        fix: "check the path: give an asset folder, or a packaging manifest (`ba-mock template > "
                            + "NAME.json` writes one)"
                    )
                )
            } catch let error as AssetPackFormatError {
                result.errors.append(error)
                result.problems.append(PackSource.problem(error, file: file, key: "(file)"))
            } catch {
                continue  // check(file:) throws AssetPackFormatError only
            }
        }
        var owners: [String: [String]] = [:]
        for (member, checked) in checks {
            if let id = checked.assetPackID { owners[id, default: []].append(member.file.string) }
        }
        var selections: [PackSource] = []
        for (member, checked) in checks {
            let file = member.file.string
            let pack = checked.assetPackID
            result.problems += checked.problems.map { $0.about(pack) }
            var buildable = checked.parsed != nil
            if let id = pack, let files = owners[id], files.count > 1 {
                var duplicate = ManifestProblem.error(
                    file,
                    "assetPackID",
                    "\"\(id)\" is also the ID in \(files.filter { $0 != file }.joined(separator: ", ")): neither "
                        + "is built (a server keeps the last good version published)",
                    fix: "give every pack its own ID",
                    code: .duplicatePackID
                )
                duplicate.pack = id
                result.problems.append(duplicate)
                if buildable { result.errors.append(duplicate.asError) }
                buildable = false
            }
            if checked.parsed == nil, let first = firstError(checked) { result.errors.append(first) }
            guard let selection = checked.selection else { continue }
            let resolved = PackSource.check(
                selection,
                root: member.root,
                boundary: member.boundary,
                selectorIndices: checked.selectorIndices
            )
            result.problems += resolved.problems.map { $0.about(pack) }
            if buildable, checked.parsed != nil, let first = resolved.errors.first {
                var error = first
                if resolved.errors.count > 1 {
                    error.message +=
                        " (and \(resolved.errors.count - 1) more: `ba-mock validate` of the same folder lists every problem)"
                }
                result.errors.append(error)
            }
            if buildable, let source = resolved.source { result.sources.append(source) }
            // Every selection meets the others, a manifest with an error or a duplicate ID included: one wrong
            // key must not hide that two packs hold one path.
            if let selected = resolved.selected, pack != nil { selections.append(selected) }
        }
        result.sources.sort { $0.manifest.assetPackID < $1.manifest.assetPackID }
        result.collisions = collisions(selections)
        result.problems += result.collisions
        return result
    }

    /// The first error of a manifest, as the error `load` throws for it.
    private static func firstError(_ checked: ManifestCheck) -> AssetPackFormatError? {
        do {
            _ = try PackagingManifest.throwingFirst(checked)
            return nil
        } catch let error as AssetPackFormatError {
            return error
        } catch {
            return nil
        }
    }

    /// Warnings for paths that more than one pack of one language holds: they collide in the merged
    /// namespace. Each is said on the manifest of the first pack (by ID) that holds the path. Localized packs
    /// of different languages never meet on a device, and a localized pack overrides an unlocalized one by
    /// design: neither collides.
    public static func collisions(_ sources: [PackSource]) -> [ManifestProblem] {
        // Keyed by String on purpose: two spellings of one name collide on Apple's file systems too. A pack
        // holding both spellings is its own warning (PackSource), not a collision between packs.
        let sorted = sources.sorted { $0.manifest.assetPackID < $1.manifest.assetPackID }
        var packsByPath: [String: [(id: String, file: String, language: String?)]] = [:]
        for source in sorted {
            let id = source.manifest.assetPackID
            let language = source.manifest.language.flatMap { try? LanguageTag(parsing: $0).maximized.description }
            for file in source.files where packsByPath[file.path]?.last?.id != id {
                packsByPath[file.path, default: []].append((id, source.manifestFile, language))
            }
        }
        return packsByPath.keys.sorted().compactMap { path in
            let holders = packsByPath[path, default: []]
            let byLanguage = Dictionary(grouping: holders, by: \.language).values
            guard let clash = byLanguage.filter({ $0.count > 1 }).max(by: { $0.count < $1.count }) else { return nil }
            let packs = clash.map(\.id).joined(separator: ", ")
            return .warning(
                clash[0].file,
                acrossPacksKey,
                "\(path) is in packs \(packs): it collides in the merged namespace on the device, where one pack's "
                    + "copy hides the other's",
                fix: collisionFix
            )
        }
    }
}

import Crypto
import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Checking a selection: every selector's problem, and the names Apple's file systems refuse, in one pass.
extension PackSource {
    /// Resolves a manifest's selectors as ``resolve(_:root:boundary:)`` does, and finds every problem of the
    /// selection in one pass: each selector's, and the names Apple's file systems refuse.
    /// - Returns: The pack's files when nothing is an error, and every problem, errors and warnings.
    /// - Parameter selectorIndices: Where each selector stands in the manifest file, when some were left out
    ///   (``ManifestCheck/selectorIndices``), for the keys of messages.
    public static func check(
        _ parsed: ParsedManifest,
        root: FilePath,
        boundary: FilePath? = nil,
        selectorIndices: [Int]? = nil
    ) -> SourceCheck {
        do {
            return try checkSelection(parsed, root: root, boundary: boundary, selectorIndices: selectorIndices)
        } catch let error as AssetPackFormatError {
            return SourceCheck(
                source: nil,
                errors: [error],
                problems: [problem(error, file: parsed.file, key: "sourceRoot")]
            )
        } catch {
            let wrapped = AssetPackFormatError(code: .io, message: "\(parsed.file): \(error)")
            return SourceCheck(
                source: nil,
                errors: [wrapped],
                problems: [problem(wrapped, file: parsed.file, key: "sourceRoot")]
            )
        }
    }

    /// An error as a problem: its own when it is one, else the message under `key`.
    static func problem(_ error: AssetPackFormatError, file: String, key: String) -> ManifestProblem {
        ManifestProblem(error, file: file, key: key)
    }

    /// Checks the selection in three steps: the source root, each selector, then what they chose together.
    private static func checkSelection(
        _ parsed: ParsedManifest,
        root: FilePath,
        boundary: FilePath?,
        selectorIndices: [Int]?
    ) throws
        -> SourceCheck
    {
        let tree = try sourceTree(of: parsed, root: root, boundary: boundary)
        var selection = Selection(file: parsed.file, tree: tree)
        for (position, selector) in parsed.manifest.fileSelectors.enumerated() {
            let index = selectorIndices.map { $0[position] } ?? position
            let key = "fileSelectors[\(index)].\(selector.key)"
            do {
                try selection.add(selector, key: key)
            } catch let error as AssetPackFormatError {
                selection.errors.append(error)
            }
        }
        let files = selection.settle(for: parsed.manifest)
        let (errors, warnings) = (selection.errors, selection.warnings)
        let chosen = PackSource(
            manifest: parsed.manifest,
            manifestFile: parsed.file,
            files: files,
            problems: parsed.problems + warnings
        )
        var check =
            errors.isEmpty
            ? SourceCheck(source: chosen, errors: [], problems: warnings)
            : SourceCheck(failing: errors, warnings: warnings, file: parsed.file)
        check.selected = chosen
        return check
    }

    /// The tree selectors read: the manifest's `sourceRoot` (relative to its own folder) or `root`, which
    /// must exist and, when `boundary` is given, be inside it.
    private static func sourceTree(of parsed: ParsedManifest, root: FilePath, boundary: FilePath?) throws
        -> SourceTree
    {
        let (file, manifest) = (parsed.file, parsed.manifest)
        let base: FilePath
        if let sourceRoot = manifest.sourceRoot {
            let folder = FilePath(file).removingLastComponent()
            base = (folder.isEmpty ? FilePath(".") : folder).appending(sourceRoot)
        } else {
            base = root
        }
        let tree: SourceTree
        do {
            tree = try SourceTree(root: base, assetFolder: boundary ?? root)
        } catch let error as AssetPackFormatError where manifest.sourceRoot != nil && error.code == .notFound {
            var missing = AssetPackFormatError.manifest(
                file,
                key: "sourceRoot",
                "\"\(manifest.sourceRoot ?? "")\" (\(base)) does not exist",
                fix: "give a folder relative to the manifest's own folder",
                code: .notFound
            )
            missing.cause = error
            throw missing
        }
        if let boundary {
            let outer = try SourceTree.realPath(boundary, orThrow: "asset folder")
            guard tree.rootReal.hasBytePrefix(outer + "/") || tree.rootReal.utf8.elementsEqual(outer.utf8) else {
                throw AssetPackFormatError.manifest(
                    file,
                    key: "sourceRoot",
                    "\"\(manifest.sourceRoot ?? "")\" is \(tree.rootReal), outside the asset folder \(outer); ba-mock "
                        + "serves nothing from outside the folder it was given",
                    fix: "keep the source inside it, or build this pack with `ba-mock package`",
                    code: .unsafePath
                )
            }
        }
        return tree
    }

    /// What the selectors choose, one at a time, with the problems each finds; settled at the end.
    private struct Selection {
        let file: String
        let tree: SourceTree
        var collector: Collector
        var warnings: [ManifestProblem] = []
        var errors: [AssetPackFormatError] = []
        var exclusions: [Glob] = []
        /// Every file of the tree, walked once for the first pattern.
        var everything: [SourceTree.Found]?

        init(file: String, tree: SourceTree) {
            self.file = file
            self.tree = tree
            self.collector = Collector(file: file)
        }

        /// Adds what one selector chooses (an exclusion is kept for the end).
        /// - Throws: `AssetPackFormatError` for the selector's own problem.
        mutating func add(_ selector: FileSelector, key: String) throws {
            switch selector {
            case .file(let path):
                let item = try regularFile(path, key: key, ifFolder: "use {\"directory\": \"\(path)\"}")
                collector.add(item.relative, from: item, key: key)
            case .directory(let path):
                try addFolder(path, to: nil, key: key, kind: selector.key)
            case .directoryMapping(let source, let destination):
                try addFolder(source, to: PackPath.normalize(destination), key: key, kind: selector.key)
            case .fileMapping(let source, let destination):
                let item = try regularFile(source, key: key, ifFolder: "use directorySource and directoryDestination")
                collector.add(PackPath.normalize(destination) ?? destination, from: item, key: key)
            case .filePattern(let glob):
                try addMatches(of: glob, key: key)
            case .fileExclusion(let glob):
                exclusions.append(glob)
            }
        }

        /// The regular file a selector names; a folder there is an error with `fix`.
        private func regularFile(_ path: String, key: String, ifFolder fix: String) throws -> SourceTree.Found {
            let relative = PackPath.normalize(path) ?? path
            let found = try tree.resolve(relative, file: file, key: key)
            guard case .regular(let stat) = found.kind else {
                throw AssetPackFormatError.manifest(file, key: key, "\"\(path)\" is a folder", fix: fix)
            }
            return .init(relative: relative, real: found.real, stat: stat)
        }

        /// Every file below a folder, placed below `destination` (or where it is).
        private mutating func addFolder(_ path: String, to destination: String?, key: String, kind: String) throws {
            let relative = PackPath.normalize(path) ?? path
            let found = try tree.resolve(relative, file: file, key: key)
            guard case .directory = found.kind else {
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "\"\(path)\" is a file",
                    fix: kind == "directory" ? "use {\"file\": \"\(path)\"}" : "use fileSource and fileDestination"
                )
            }
            var walk = SourceTree.Walk()
            try tree.walk(found.real, relative: relative, file: file, key: key, into: &walk)
            if walk.files.isEmpty {
                warnings.append(
                    .warning(file, key, "\"\(path)\" holds no files", fix: "put files in it, or remove the selector")
                )
            }
            warnings.append(contentsOf: walk.warnings)
            errors.append(contentsOf: walk.errors)
            collector.reserve(walk.files.count)
            for item in walk.files {
                let inside = String(Substring(item.relative.utf8.dropFirst(relative.utf8.count + 1)))
                collector.add(destination.map { $0 + "/" + inside } ?? item.relative, from: item, key: key)
            }
        }

        /// Every file of the tree whose path matches `glob`.
        private mutating func addMatches(of glob: Glob, key: String) throws {
            if everything == nil {
                var walk = SourceTree.Walk()
                try tree.walk(tree.rootReal, relative: "", file: file, key: key, into: &walk)
                everything = walk.files
                errors.append(contentsOf: walk.errors)
            }
            let matching = (everything ?? []).filter { glob.matches($0.relative) }
            if matching.isEmpty {
                warnings.append(
                    .warning(
                        file,
                        key,
                        "\"\(glob)\" matches no file",
                        fix: "check the pattern against the files' paths (case matters; ** crosses folders)"
                    )
                )
            }
            for item in matching { collector.add(item.relative, from: item, key: key) }
        }

        /// What the selectors chose, together: one file per path, the exclusions applied wherever they stand,
        /// something chosen, no path both a file and a folder, and names Apple's file systems take. What the
        /// valid selectors chose is checked too, so that one run finds those problems as well.
        mutating func settle(for manifest: PackagingManifest) -> [PackFile] {
            var chosen: [Collector.Choice]
            do {
                chosen = try collector.settle()
            } catch {
                errors.append(error)
                chosen = []
            }
            let selected = chosen.count
            // Exclusions apply to a file's path in the source root, or in the pack.
            if !exclusions.isEmpty {
                chosen.removeAll { choice in
                    exclusions.contains { $0.matches(choice.found.relative) || $0.matches(choice.path) }
                }
            }
            if chosen.isEmpty && errors.isEmpty {
                errors.append(
                    .manifest(
                        file,
                        key: "fileSelectors",
                        selected == 0 ? "select no files" : "select no files once the exclusions are applied",
                        fix: "point the selectors at files or folders that hold files"
                    )
                )
            }
            checkPatternsLeaveTheManifestsOut(chosen)
            checkFoldersAreNotFiles(chosen)
            let named = chosen.map { ($0.path, collector.keys[$0.selector]) }
            for problem in PackSource.nameProblems(named, of: manifest, file: file) {
                if problem.severity == .error { errors.append(problem.asError) } else { warnings.append(problem) }
            }
            return chosen.map { PackFile(path: $0.path, found: $0.found) }
        }

        /// As `{"directory": "."}` is refused (it would pack the manifests: `PackPath.checkSelector`), so is a
        /// pattern that still reaches a manifest once the exclusions are applied.
        private mutating func checkPatternsLeaveTheManifestsOut(_ chosen: [Collector.Choice]) {
            let manifestReal = try? SourceTree.realPath(FilePath(file), orThrow: "manifest")
            let reached = chosen.filter {
                collector.keys[$0.selector].hasSuffix(".filePattern")
                    && tree.isManifest($0.found, manifestReal: manifestReal)
            }
            let byKey = Dictionary(grouping: reached) { collector.keys[$0.selector] }
            for key in byKey.keys.sorted() {
                let names = (byKey[key] ?? []).map(\.found.relative)
                errors.append(
                    .manifest(
                        file,
                        key: key,
                        "matches the packaging manifest\(names.count == 1 ? "" : "s") "
                            + names.prefix(3).joined(separator: ", ")
                            + (names.count > 3 ? " and \(names.count - 3) more" : "")
                            + ", which would pack the manifests too (as {\"directory\": \".\"} would; ba-package "
                            + "fails the same way)",
                        fix: "narrow the pattern to content folders (e.g. \"Levels/**\"), add {\"fileExclusion\": "
                            + "\"*.json\"}, or give the pack a sourceRoot",
                        code: .unsafePath
                    )
                )
            }
        }

        /// A path cannot be a file and a folder at once: no file system could install such a pack.
        private mutating func checkFoldersAreNotFiles(_ chosen: [Collector.Choice]) {
            for choice in chosen {
                var folder = Substring(choice.path).utf8
                while let slash = folder.lastIndex(of: UInt8(ascii: "/")) {
                    folder = folder[..<slash]
                    let prefix = String(Substring(folder))
                    guard let clash = Collector.find(prefix, in: chosen) else { continue }
                    errors.append(
                        .manifest(
                            file,
                            key: collector.keys[clash.selector],
                            "places \(clash.found.relative) at \"\(prefix)\", a path that is also a folder of the pack "
                                + "(it holds \"\(choice.path)\"); no file system can install both",
                            fix: "give the file another destination, or exclude one of them"
                        )
                    )
                }
            }
        }
    }

    /// The files the selectors chose, in the order they chose them, settled once at the end: sorted by
    /// their path in the pack, one per path, and two different files at one path an error. (A dictionary
    /// kept as they came took 75 MB while it grew, at 100 000 files.)
    private struct Collector {
        struct Choice {
            var path: String
            var found: SourceTree.Found
            var selector: Int  // into `keys`
            var order: Int
        }

        let file: String
        private var choices: [Choice] = []
        private(set) var keys: [String] = []

        init(file: String) { self.file = file }

        /// Makes room for `count` more choices at once (growing by doubling held both copies at the peak).
        mutating func reserve(_ count: Int) { choices.reserveCapacity(choices.count + count) }

        mutating func add(_ path: String, from found: SourceTree.Found, key: String) {
            if keys.last != key { keys.append(key) }
            choices.append(Choice(path: path, found: found, selector: keys.count - 1, order: choices.count))
        }

        /// The choices by path in byte order; a file chosen twice at one path counts once (the later choice).
        /// - Throws: `.invalidManifest` for two different files at one path.
        mutating func settle() throws(AssetPackFormatError) -> [Choice] {
            var sorted = choices
            choices = []
            sorted.sort { left, right in
                if left.path.bytesEqual(right.path) { return left.order < right.order }
                return PathKey(left.path) < PathKey(right.path)
            }
            var kept = 0  // settled in place: sorted[..<kept]
            for index in sorted.indices {
                let choice = sorted[index]
                if kept > 0, sorted[kept - 1].path.bytesEqual(choice.path) {
                    let earlier = sorted[kept - 1]
                    guard earlier.found.real == choice.found.real else {
                        throw AssetPackFormatError.manifest(
                            file,
                            key: keys[choice.selector],
                            "places \(choice.found.relative) at \"\(choice.path)\", where \(keys[earlier.selector]) "
                                + "already placed \(earlier.found.relative)",
                            fix: "give one of them another destination, or exclude one"
                        )
                    }
                    sorted[kept - 1] = choice
                } else {
                    sorted[kept] = choice
                    kept += 1
                }
            }
            sorted.removeLast(sorted.count - kept)
            return sorted
        }

        /// The choice at exactly `path` in choices sorted by path (a binary search).
        static func find(_ path: String, in sorted: [Choice]) -> Choice? {
            let key = PathKey(path)
            var low = 0
            var high = sorted.count
            while low < high {
                let middle = (low + high) / 2
                if PathKey(sorted[middle].path) < key { low = middle + 1 } else { high = middle }
            }
            return low < sorted.count && PathKey(sorted[low].path) == key ? sorted[low] : nil
        }
    }
}

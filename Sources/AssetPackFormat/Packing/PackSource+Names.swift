import Foundation

/// The names a pack may hold on Apple's file systems, which are not Linux's: checked when a selection is
/// resolved, so that `validate` says it and a pack that cannot install on a device is not built.
extension PackSource {
    /// The longest name of one path component APFS holds, in UTF-8 bytes.
    public static let maximumNameBytes = 255
    /// `PATH_MAX` on macOS and iOS: a path of this many bytes or more cannot be opened.
    public static let pathMax = 1024
    /// What comes in front of a pack's paths on a device: the app group container
    /// (`/private/var/mobile/Containers/Shared/AppGroup/<UUID>/`, 84 bytes) and the folders Background Assets
    /// keeps packs in (not documented), taken as 200 bytes: a longer path is warned about.
    public static let devicePrefixAllowance = 200

    /// The problems of a pack's paths, each with the selector that placed it:
    /// - a component over 255 bytes, or a path of 1024 bytes or more: errors (no Apple file system holds it);
    /// - a path within 200 bytes of 1024: a warning (the device's own folders come in front of it);
    /// - two paths that differ only in case: an error when the pack is for macOS, whose APFS volumes are
    ///   case-insensitive by default (one file would overwrite the other), else a warning (iOS, tvOS and
    ///   visionOS volumes are case-sensitive, but the pack cannot be unpacked on a Mac's default volume);
    /// - two paths that differ only in Unicode normalization: a warning (APFS treats them as one name).
    /// - Parameters:
    ///   - paths: The pack's paths, sorted, each with the key of the selector that chose it.
    ///   - manifest: The pack's manifest (its platforms decide the case rule's severity).
    ///   - file: The manifest file, for messages.
    static func nameProblems(
        _ paths: [(path: String, key: String)],
        of manifest: PackagingManifest,
        file: String
    ) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        for (path, selectorKey) in paths {
            let key = destinationKey(selectorKey)
            let bytes = path.utf8.count
            // No component can be longer than the whole path: most paths are not split at all.
            if bytes > maximumNameBytes,
                let long = path.split(separator: "/").first(where: { $0.utf8.count > maximumNameBytes })
            {
                problems.append(
                    .error(
                        file,
                        key,
                        "places a file at \"\(PackPath.shortened(path))\", whose name \"\(PackPath.shortened(String(long)))\" "
                            + "is \(long.utf8.count) bytes; APFS holds names of at most \(maximumNameBytes) bytes",
                        fix: "shorten that name to \(maximumNameBytes) bytes or fewer"
                    )
                )
            } else if bytes >= pathMax {
                problems.append(
                    .error(
                        file,
                        key,
                        "places a file at a path of \(bytes) bytes (\"\(PackPath.shortened(path))\"); macOS and iOS open "
                            + "no path of \(pathMax) bytes or more (PATH_MAX), and the device puts its own folders "
                            + "in front",
                        fix:
                            "shorten the folders or names to keep the path under \(pathMax - devicePrefixAllowance) bytes"
                    )
                )
            } else if bytes > pathMax - devicePrefixAllowance {
                problems.append(
                    .warning(
                        file,
                        key,
                        "places a file at a path of \(bytes) bytes (\"\(PackPath.shortened(path))\"); with the app "
                            + "group container's folders in front (84 bytes and more on a device) it comes close to "
                            + "PATH_MAX (\(pathMax))",
                        fix:
                            "shorten the folders or names to keep the path under \(pathMax - devicePrefixAllowance) bytes"
                    )
                )
            }
        }
        problems += caseTwins(paths, of: manifest, file: file)
        problems += normalizationTwins(paths, file: file)
        return problems
    }

    /// For a mapping selector, the key of the destination (it decides the names), else the selector's key.
    private static func destinationKey(_ key: String) -> String {
        if key.hasSuffix(".fileSource") { return key.dropLast("fileSource".count) + "fileDestination" }
        if key.hasSuffix(".directorySource") { return key.dropLast("directorySource".count) + "directoryDestination" }
        return key
    }

    /// Paths that differ only in case (`Readme.txt` and `README.txt`). Found by sorting hashes of the
    /// lower-cased paths rather than a dictionary of every path (16 bytes a file at 100 000 files, not 15 MB).
    private static func caseTwins(
        _ paths: [(path: String, key: String)],
        of manifest: PackagingManifest,
        file: String
    ) -> [ManifestProblem] {
        var hashes = paths.indices.map { (hash: paths[$0].path.lowercased().hashValue, index: $0) }
        hashes.sort { $0.hash < $1.hash || ($0.hash == $1.hash && $0.index < $1.index) }
        var problems: [ManifestProblem] = []
        var reported: Set<Int> = []
        var start = 0
        while start < hashes.count {
            var end = start + 1
            while end < hashes.count && hashes[end].hash == hashes[start].hash { end += 1 }
            if end - start > 1 {
                let group = hashes[start..<end].map(\.index)
                for (offset, first) in group.enumerated() where !reported.contains(first) {
                    let lowered = paths[first].path.lowercased()
                    // Canonically equal spellings are normalization twins (String equality), said below.
                    let twins = group[(offset + 1)...].filter {
                        paths[$0].path.lowercased() == lowered && paths[$0].path != paths[first].path
                    }
                    guard !twins.isEmpty else { continue }
                    reported.formUnion(twins)
                    let names = ([first] + twins).map { "\"\(paths[$0].path)\"" }.joined(separator: " and ")
                    let macOS = manifest.platforms.contains("macOS")
                    let message =
                        "places \(names), which differ only in case: "
                        + (macOS
                            ? "on a Mac (APFS is case-insensitive by default) one overwrites the other"
                            : "one name on a Mac's default (case-insensitive) volume, though iOS, tvOS and "
                                + "visionOS keep them apart")
                    let fix = "rename one of them"
                    problems.append(
                        macOS
                            ? .error(file, destinationKey(paths[first].key), message, fix: fix)
                            : .warning(file, destinationKey(paths[first].key), message, fix: fix)
                    )
                }
            }
            start = end
        }
        return problems
    }

    /// Names that differ only in Unicode normalization (`é` as U+00E9 and as `e` + U+0301): Linux keeps them
    /// apart, Apple's file systems treat them as one name, so one hides the other there.
    static func normalizationTwins(_ paths: [(path: String, key: String)], file: String) -> [ManifestProblem] {
        var byCharacters: [String: [(path: String, key: String)]] = [:]  // String keys merge equivalent paths
        // Only names with a byte beyond ASCII have another spelling (a dictionary of every path of 100 000
        // would be 15 MB for nothing).
        for entry in paths where entry.path.utf8.contains(where: { $0 >= 0x80 }) {
            byCharacters[entry.path, default: []].append(entry)
        }
        return byCharacters.values.filter { $0.count > 1 }.map { twins in
            let shown = twins.map { "\"\($0.path)\" (\(utf8Hex($0.path)))" }.joined(separator: " and ")
            return ManifestProblem.warning(
                file,
                destinationKey(twins[0].key),
                "\(shown) differ only in Unicode normalization: on Apple file systems they are one name and one "
                    + "file hides the other",
                fix: "keep one spelling (NFC, as macOS writes new names)"
            )
        }.sorted { $0.message < $1.message }
    }

    private static func utf8Hex(_ text: String) -> String {
        text.utf8.map { String($0, radix: 16, uppercase: true) }.joined(separator: " ")
    }
}

import Foundation
import SystemPackage

/// How a packaging manifest's `fileSelectors` are read and checked, each selector apart.
extension PackagingManifest {
    /// The selectors that are valid, each with where it stands in the list, and a problem for each wrong one;
    /// `nil` when the list itself is missing or wrong.
    static func parseSelectors(
        _ value: JSONValue?,
        file: String,
        problems: inout [ManifestProblem]
    ) -> [(index: Int, selector: FileSelector)]? {
        do {
            return try parseSelectors(value, file: file, each: &problems)
        } catch let problem as ManifestProblem {
            problems.append(problem)
        } catch {
            problems.append(.error(file, "fileSelectors", "\(error)", fix: nil))
        }
        return nil
    }

    private static func parseSelectors(
        _ value: JSONValue?,
        file: String,
        each problems: inout [ManifestProblem]
    ) throws -> [(index: Int, selector: FileSelector)] {
        let fix =
            "list what goes in the pack, e.g. \"fileSelectors\": [{\"file\": \"Videos/Intro.m4v\"}, "
            + "{\"directory\": \"Levels\"}]"
        guard let value else {
            throw ManifestProblem.error(file, "fileSelectors", "is missing", fix: fix)
        }
        guard case .array(let items) = value, !items.isEmpty else {
            throw ManifestProblem.error(file, "fileSelectors", Self.notANonEmptyArray(value), fix: fix)
        }
        let shapes =
            "{\"file\": PATH}, {\"directory\": PATH}, {\"filePattern\": GLOB}, {\"fileExclusion\": GLOB}, "
            + "{\"fileSource\": PATH, \"fileDestination\": PATH} or {\"directorySource\": PATH, "
            + "\"directoryDestination\": PATH}"
        var selectors: [(index: Int, selector: FileSelector)] = []
        for (index, item) in items.enumerated() {
            do {
                selectors.append(
                    (index, try parseSelector(item, key: "fileSelectors[\(index)]", file: file, shapes: shapes))
                )
            } catch let problem as ManifestProblem {
                problems.append(problem)
            }
        }
        return selectors
    }

    private static func parseSelector(_ item: JSONValue, key: String, file: String, shapes: String) throws
        -> FileSelector
    {
        guard case .object(let object) = item else {
            throw ManifestProblem.error(
                file,
                key,
                "is \(item.typeName), not an object",
                fix: "write one of \(shapes)"
            )
        }
        func path(_ name: String, what: String) throws -> String {
            try selectorPath(name, what: what, in: object, key: key, file: file)
        }
        func glob(_ name: String) throws -> Glob {
            try selectorGlob(name, in: object, key: key, file: file)
        }
        let keys = Set(object.keys)
        let selector: FileSelector
        switch keys {
        case ["file"]: selector = .file(try path("file", what: "a file's path relative to the source root"))
        case ["directory"]:
            selector = .directory(try path("directory", what: "a folder's path relative to the source root"))
        case ["filePattern"]: selector = .filePattern(try glob("filePattern"))
        case ["fileExclusion"]: selector = .fileExclusion(try glob("fileExclusion"))
        case ["fileSource", "fileDestination"]:
            selector = .fileMapping(
                source: try path("fileSource", what: "the file's path relative to the source root"),
                destination: try path("fileDestination", what: "the path the file has in the pack")
            )
        case ["directorySource", "directoryDestination"]:
            selector = .directoryMapping(
                source: try path("directorySource", what: "the folder's path relative to the source root"),
                destination: try path("directoryDestination", what: "the folder its contents go to in the pack")
            )
        default:
            throw unknownSelectorProblem(keys, key: key, file: file, shapes: shapes)
        }
        return selector
    }

    /// The path under `name` of a selector's object, checked as a selector path; `what` says what to give.
    private static func selectorPath(
        _ name: String,
        what: String,
        in object: [String: JSONValue],
        key: String,
        file: String
    ) throws -> String {
        guard case .string(let path) = object[name] ?? .null, !path.isEmpty else {
            throw ManifestProblem.error(
                file,
                "\(key).\(name)",
                "must be a non-empty string",
                fix: "give \(what)"
            )
        }
        try PackPath.checkSelector(path, file: file, key: "\(key).\(name)")
        return path
    }

    /// The glob pattern under `name` of a selector's object, parsed.
    private static func selectorGlob(
        _ name: String,
        in object: [String: JSONValue],
        key: String,
        file: String
    ) throws -> Glob {
        guard case .string(let pattern) = object[name] ?? .null else {
            throw ManifestProblem.error(
                file,
                "\(key).\(name)",
                "must be a string",
                fix: "write e.g. \"Levels/**/*.json\""
            )
        }
        do {
            return try Glob(pattern)
        } catch {
            throw ManifestProblem.error(
                file,
                "\(key).\(name)",
                "the pattern \"\(pattern)\" \(error)",
                fix: "write a pattern relative to the source root, e.g. \"Levels/**/*.json\" (* ? [a-z] **)",
                code: .unsafePath
            )
        }
    }

    /// The problem of a selector whose keys are no selector's: a lonely half of a pair, or unknown keys.
    private static func unknownSelectorProblem(
        _ keys: Set<String>,
        key: String,
        file: String,
        shapes: String
    ) -> ManifestProblem {
        let given = keys.sorted().joined(separator: ", ")
        let lonely: [String: String] = [
            "fileSource": "fileDestination", "fileDestination": "fileSource",
            "directorySource": "directoryDestination", "directoryDestination": "directorySource",
        ]
        if keys.count == 1, let only = keys.first, let partner = lonely[only] {
            return ManifestProblem.error(
                file,
                "\(key).\(only)",
                "needs \"\(partner)\" beside it",
                fix: "write both, e.g. {\"\(only)\": ..., \"\(partner)\": ...}"
            )
        }
        let unknown = keys.filter {
            !["file", "directory", "filePattern", "fileExclusion"].contains($0) && lonely[$0] == nil
        }
        let selectorKeys = [
            "directory", "directoryDestination", "directorySource", "file", "fileDestination", "fileExclusion",
            "filePattern", "fileSource",
        ]
        let suggestion = unknown.sorted().first.flatMap { nearMiss($0, in: selectorKeys) }
        return ManifestProblem.error(
            file,
            keys.count == 1 ? "\(key).\(given)" : key,
            keys.isEmpty ? "is empty" : "has \(given), which is not a selector",
            fix: suggestion.map { "did you mean \"\($0)\"?" } ?? "write one of \(shapes)"
        )
    }
}

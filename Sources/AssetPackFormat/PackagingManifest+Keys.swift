import Foundation
import SystemPackage

/// How each key of a packaging manifest is read and checked.
extension PackagingManifest {
    /// An optional value that was checked: present or not, it is valid.
    struct Checked<T> {
        var value: T?
    }

    static func parseSourceRoot(_ value: JSONValue?, file: String) throws -> Checked<String> {
        guard let value else { return Checked(value: nil) }
        let fix = "give a folder relative to the manifest's own folder, e.g. \"../Art\" or \"Content\""
        guard case .string(let path) = value, !path.isEmpty else {
            throw ManifestProblem.error(file, "sourceRoot", "must be a non-empty string", fix: fix)
        }
        if path.utf8.first == UInt8(ascii: "/") {
            throw ManifestProblem.error(file, "sourceRoot", "\"\(path)\" is absolute", fix: fix, code: .unsafePath)
        }
        if path.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F || $0 == UInt8(ascii: "\\") }) {
            throw ManifestProblem.error(
                file,
                "sourceRoot",
                "contains a control character or a backslash",
                fix: fix,
                code: .unsafePath
            )
        }
        return Checked(value: path)
    }

    static func parseLanguage(_ value: JSONValue?, file: String) throws -> Checked<String> {
        guard let value else { return Checked(value: nil) }
        guard case .string(let tag) = value else {
            throw ManifestProblem.error(
                file,
                "language",
                "is \(value.typeName), not a string",
                fix: "write e.g. \"fr\""
            )
        }
        do {
            return Checked(value: try LanguageTag(parsing: tag).description)
        } catch {
            throw ManifestProblem.error(
                file,
                "language",
                "\"\(tag)\" \(error)",
                fix:
                    "write a BCP-47 tag of a language, then optionally a script and a region, e.g. \"fr\", "
                    + "\"pt-BR\" or \"zh-Hant-TW\" (Background Assets supports only those three parts)"
            )
        }
    }

    static func parseUserInfo(_ value: JSONValue?, file: String) throws -> Checked<JSONValue> {
        guard let value else { return Checked(value: nil) }
        guard case .object = value else {
            throw ManifestProblem.error(
                file,
                "userInfo",
                "is \(value.typeName), not an object",
                fix: "write an object, e.g. \"userInfo\": {\"minimumAppVersion\": \"2.1\"}"
            )
        }
        return Checked(value: value)
    }

    /// Where and what the syntax error is, as "line 3, column 5: Invalid value".
    static func syntaxProblem(in text: [UInt8]) -> String {
        let detail: String
        do {
            _ = try JSONSerialization.jsonObject(with: Data(text), options: [.fragmentsAllowed])
            return "unexpected structure"
        } catch {
            detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        }
        // Foundation says "... around character N." (a byte offset); turn it into a line and column.
        guard let range = detail.range(of: "around character "),
            let offset = Int(detail[range.upperBound...].prefix { $0.isNumber })
        else { return detail.trimmingCharacters(in: CharacterSet(charactersIn: ".")) }
        let before = text.prefix(min(offset, text.count))
        let line = before.filter { $0 == UInt8(ascii: "\n") }.count + 1
        let column = before.count - (before.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0) + 1
        let what = detail[..<range.lowerBound].trimmingCharacters(in: .whitespaces)
        return "line \(line), column \(column): \(what)"
    }

    static func parseID(_ value: JSONValue?, file: String, warnings: inout [ManifestProblem]) throws -> String {
        guard let value else {
            throw ManifestProblem.error(
                file,
                key: "assetPackID",
                "is missing",
                fix: "add \"assetPackID\": \"YourPackName\" (letters, digits and hyphens)"
            )
        }
        guard case .string(let id) = value else {
            throw ManifestProblem.error(
                file,
                key: "assetPackID",
                "is \(value.typeName), not a string",
                fix: "write the ID in quotes, e.g. \"Tutorial\""
            )
        }
        if let problem = AssetPackID.problem(with: id) {
            throw ManifestProblem.error(
                file,
                key: "assetPackID",
                "\"\(AssetPackID.printable(id))\" \(problem)",
                fix: "use letters, digits and hyphens only, e.g. \"Level-Pack-1\""
            )
        }
        if id.contains("_") || id.contains(".") {
            warnings.append(
                .warning(
                    file,
                    "assetPackID",
                    "\"\(id)\" contains '_' or '.', which App Store Connect rejects on upload (ba-package and this "
                        + "mock accept it)",
                    fix: "use hyphens instead to upload this pack to Apple"
                )
            )
        }
        return id
    }

    static func parsePolicy(_ value: JSONValue?, file: String) throws -> DownloadPolicy {
        let fix =
            "write exactly one of {\"essential\": {\"installationEventTypes\": [\"firstInstallation\"]}}, "
            + "{\"prefetch\": {...}} or {\"onDemand\": {}}"
        guard let value else {
            throw ManifestProblem.error(file, key: "downloadPolicy", "is missing", fix: fix)
        }
        guard case .object(let object) = value else {
            throw ManifestProblem.error(
                file,
                key: "downloadPolicy",
                "is \(value.typeName), not an object",
                fix: fix
            )
        }
        guard object.count == 1, let (key, body) = object.first else {
            let keys = object.keys.sorted().joined(separator: ", ")
            throw ManifestProblem.error(
                file,
                key: "downloadPolicy",
                object.isEmpty ? "has no policy" : "has \(object.count) policies (\(keys)); a pack has exactly one",
                fix: fix
            )
        }
        switch key {
        case "onDemand":
            guard case .object(let inner) = body, inner.isEmpty else {
                throw ManifestProblem.error(
                    file,
                    key: "downloadPolicy.onDemand",
                    "must be an empty object",
                    fix: "write \"onDemand\": {}"
                )
            }
            return .onDemand
        case "essential", "prefetch":
            let path = "downloadPolicy.\(key).installationEventTypes"
            let eventsFix =
                "write \"\(key)\": {\"installationEventTypes\": [\"firstInstallation\"]} "
                + "(or [\"firstInstallation\", \"subsequentUpdate\"])"
            guard case .object(let inner) = body else {
                throw ManifestProblem.error(
                    file,
                    key: "downloadPolicy.\(key)",
                    "is \(body.typeName), not an object",
                    fix: eventsFix
                )
            }
            guard let events = inner["installationEventTypes"] else {
                throw ManifestProblem.error(file, key: path, "is missing", fix: eventsFix)
            }
            guard case .array(let items) = events, !items.isEmpty else {
                throw ManifestProblem.error(
                    file,
                    key: path,
                    "must be a non-empty array",
                    fix: eventsFix
                )
            }
            var types: [InstallationEventType] = []
            for item in items {
                guard case .string(let name) = item, let type = InstallationEventType(rawValue: name) else {
                    throw ManifestProblem.error(
                        file,
                        key: path,
                        "has \(Self.show(item)), which is not an installation event type",
                        fix: "use \"firstInstallation\" and/or \"subsequentUpdate\""
                    )
                }
                if !types.contains(type) { types.append(type) }
            }
            return key == "essential"
                ? .essential(installationEventTypes: types) : .prefetch(installationEventTypes: types)
        default:
            throw ManifestProblem.error(
                file,
                key: "downloadPolicy.\(key)",
                "is not a download policy",
                fix: fix
            )
        }
    }

    static func parseSelectors(_ value: JSONValue?, file: String) throws -> [FileSelector] {
        let fix =
            "list what goes in the pack, e.g. \"fileSelectors\": [{\"file\": \"Videos/Intro.m4v\"}, "
            + "{\"directory\": \"Levels\"}]"
        guard let value else {
            throw ManifestProblem.error(file, "fileSelectors", "is missing", fix: fix)
        }
        guard case .array(let items) = value, !items.isEmpty else {
            throw ManifestProblem.error(file, "fileSelectors", "must be a non-empty array", fix: fix)
        }
        let shapes =
            "{\"file\": PATH}, {\"directory\": PATH}, {\"filePattern\": GLOB}, {\"fileExclusion\": GLOB}, "
            + "{\"fileSource\": PATH, \"fileDestination\": PATH} or {\"directorySource\": PATH, "
            + "\"directoryDestination\": PATH}"
        var selectors: [FileSelector] = []
        for (index, item) in items.enumerated() {
            let key = "fileSelectors[\(index)]"
            guard case .object(let object) = item else {
                throw ManifestProblem.error(
                    file,
                    key,
                    "is \(item.typeName), not an object",
                    fix: "write one of \(shapes)"
                )
            }
            func path(_ name: String, what: String) throws -> String {
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
            func glob(_ name: String) throws -> Glob {
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
                let given = keys.sorted().joined(separator: ", ")
                let lonely: [String: String] = [
                    "fileSource": "fileDestination", "fileDestination": "fileSource",
                    "directorySource": "directoryDestination", "directoryDestination": "directorySource",
                ]
                if keys.count == 1, let only = keys.first, let partner = lonely[only] {
                    throw ManifestProblem.error(
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
                throw ManifestProblem.error(
                    file,
                    keys.count == 1 ? "\(key).\(given)" : key,
                    keys.isEmpty ? "is empty" : "has \(given), which is not a selector",
                    fix: suggestion.map { "did you mean \"\($0)\"?" } ?? "write one of \(shapes)"
                )
            }
            selectors.append(selector)
        }
        return selectors
    }

    static func parsePlatforms(_ value: JSONValue?, file: String) throws -> [String] {
        let fix = "write e.g. \"platforms\": [\"iOS\", \"macOS\"] (known: \(knownPlatforms.joined(separator: ", ")))"
        guard let value else {
            throw ManifestProblem.error(file, key: "platforms", "is missing", fix: fix)
        }
        guard case .array(let items) = value, !items.isEmpty else {
            throw ManifestProblem.error(file, key: "platforms", "must be a non-empty array", fix: fix)
        }
        var platforms: [String] = []
        for item in items {
            guard case .string(let name) = item else {
                throw ManifestProblem.error(file, key: "platforms", "has \(show(item))", fix: fix)
            }
            if name == "iPadOS" {
                throw ManifestProblem.error(
                    file,
                    key: "platforms",
                    "lists \"iPadOS\", which ba-package rejects",
                    fix: "list \"iOS\"; it covers iPadOS"
                )
            }
            guard knownPlatforms.contains(name) else {
                throw ManifestProblem.error(
                    file,
                    key: "platforms",
                    "lists \"\(name)\", which is not a platform ba-package knows",
                    fix: fix
                )
            }
            if !platforms.contains(name) { platforms.append(name) }
        }
        return platforms
    }

    static func show(_ value: JSONValue) -> String {
        if case .string(let text) = value { return "\"\(text)\"" }
        return value.typeName
    }
}

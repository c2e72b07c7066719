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

    /// The download policy, or `nil` with every problem it has: unknown keys nested inside it are problems too
    /// (a misspelt key would be dropped and the pack built with another policy than meant).
    static func parsePolicy(_ value: JSONValue?, file: String, problems: inout [ManifestProblem]) -> DownloadPolicy? {
        guard let (key, inner) = policyBody(value, file: file, problems: &problems) else { return nil }
        let (wrong, misspelt) = checkPolicyKeys(inner, policy: key, file: file, problems: &problems)
        if key == "onDemand" { return wrong ? nil : .onDemand }
        let types = parseEventTypes(inner, policy: key, misspelt: misspelt, file: file, problems: &problems)
        guard let types, !wrong else { return nil }
        return key == "essential"
            ? .essential(installationEventTypes: types) : .prefetch(installationEventTypes: types)
    }

    /// The policy's name and its object, or `nil` with a problem when there is not exactly one known policy.
    private static func policyBody(
        _ value: JSONValue?,
        file: String,
        problems: inout [ManifestProblem]
    ) -> (key: String, inner: [String: JSONValue])? {
        let policies = ["essential", "onDemand", "prefetch"]
        let fix =
            "write exactly one of {\"essential\": {\"installationEventTypes\": [\"firstInstallation\"]}}, "
            + "{\"prefetch\": {...}} or {\"onDemand\": {}}"
        guard let value else {
            problems.append(.error(file, key: "downloadPolicy", "is missing", fix: fix))
            return nil
        }
        guard case .object(let object) = value else {
            problems.append(.error(file, key: "downloadPolicy", "is \(value.typeName), not an object", fix: fix))
            return nil
        }
        guard object.count == 1, let (key, body) = object.first else {
            let keys = object.keys.sorted().joined(separator: ", ")
            problems.append(
                .error(
                    file,
                    key: "downloadPolicy",
                    object.isEmpty ? "has no policy" : "has \(object.count) policies (\(keys)); a pack has exactly one",
                    fix: fix
                )
            )
            return nil
        }
        guard policies.contains(key) else {
            problems.append(
                .error(
                    file,
                    key: "downloadPolicy.\(key)",
                    "is not a download policy",
                    fix: nearMiss(key, in: policies).map { "did you mean \"\($0)\"?" } ?? fix
                )
            )
            return nil
        }
        let inner: [String: JSONValue]
        switch body {
        case .object(let object): inner = object
        default:
            problems.append(
                .error(
                    file,
                    key: "downloadPolicy.\(key)",
                    "is \(body.typeName), not an object",
                    fix: key == "onDemand"
                        ? "write \"onDemand\": {}"
                        : "write \"\(key)\": {\"installationEventTypes\": [\"firstInstallation\"]}"
                )
            )
            return nil
        }
        return (key: key, inner: inner)
    }

    /// Whether the policy's object has an unknown key, each one a problem, and whether one is a near miss.
    private static func checkPolicyKeys(
        _ inner: [String: JSONValue],
        policy key: String,
        file: String,
        problems: inout [ManifestProblem]
    ) -> (wrong: Bool, misspelt: Bool) {
        let known = key == "onDemand" ? [] : ["installationEventTypes"]
        var wrong = false
        var misspelt = false
        for name in inner.keys.sorted() where !known.contains(name) {
            let near = nearMiss(name, in: known)
            misspelt = misspelt || near != nil
            problems.append(
                .error(
                    file,
                    key: "downloadPolicy.\(key).\(name)",
                    key == "onDemand"
                        ? "is not a key of the onDemand policy, which has none"
                        : "is not a key of the \(key) policy; a key that is ignored gives another policy than meant",
                    fix: near.map { "did you mean \"\($0)\"?" }
                        ?? (key == "onDemand" ? "write \"onDemand\": {}" : "remove it (keys: installationEventTypes)")
                )
            )
            wrong = true
        }
        return (wrong: wrong, misspelt: misspelt)
    }

    /// The policy's installation event types, each once, or `nil` with a problem for each wrong one.
    private static func parseEventTypes(
        _ inner: [String: JSONValue],
        policy key: String,
        misspelt: Bool,
        file: String,
        problems: inout [ManifestProblem]
    ) -> [InstallationEventType]? {
        var wrong = false
        let path = "downloadPolicy.\(key).installationEventTypes"
        let eventsFix =
            "write \"\(key)\": {\"installationEventTypes\": [\"firstInstallation\"]} "
            + "(or [\"firstInstallation\", \"subsequentUpdate\"])"
        guard let events = inner["installationEventTypes"] else {
            // A misspelling of it is already said, with the fix; "is missing" would say it twice.
            if !misspelt { problems.append(.error(file, key: path, "is missing", fix: eventsFix)) }
            return nil
        }
        guard case .array(let items) = events, !items.isEmpty else {
            problems.append(.error(file, key: path, Self.notANonEmptyArray(events), fix: eventsFix))
            return nil
        }
        var types: [InstallationEventType] = []
        for (index, item) in items.enumerated() {
            guard case .string(let name) = item, let type = InstallationEventType(rawValue: name) else {
                let near: String? =
                    if case .string(let name) = item {
                        nearMiss(name, in: InstallationEventType.allCases.map(\.rawValue))
                    } else { nil }
                problems.append(
                    .error(
                        file,
                        key: "\(path)[\(index)]",
                        "is \(Self.show(item)), which is not an installation event type",
                        fix: near.map { "did you mean \"\($0)\"?" }
                            ?? "use \"firstInstallation\" and/or \"subsequentUpdate\""
                    )
                )
                wrong = true
                continue
            }
            if !types.contains(type) { types.append(type) }
        }
        if wrong { return nil }
        return types
    }

    /// The platforms, or `nil` with a problem for each wrong item (`platforms[1]`), so that one run lists them
    /// all.
    static func parsePlatforms(_ value: JSONValue?, file: String, problems: inout [ManifestProblem]) -> [String]? {
        let fix = "write e.g. \"platforms\": [\"iOS\", \"macOS\"] (known: \(knownPlatforms.joined(separator: ", ")))"
        guard let value else {
            problems.append(.error(file, key: "platforms", "is missing", fix: fix))
            return nil
        }
        guard case .array(let items) = value, !items.isEmpty else {
            problems.append(.error(file, key: "platforms", Self.notANonEmptyArray(value), fix: fix))
            return nil
        }
        var platforms: [String] = []
        var wrong = false
        for (index, item) in items.enumerated() {
            let key = "platforms[\(index)]"
            guard case .string(let name) = item else {
                problems.append(.error(file, key: key, "is \(item.typeName), not a platform name", fix: fix))
                wrong = true
                continue
            }
            if name == "iPadOS" {
                problems.append(
                    .error(
                        file,
                        key: key,
                        "is \"iPadOS\", which ba-package rejects",
                        fix: "list \"iOS\"; it covers iPadOS"
                    )
                )
                wrong = true
            } else if !knownPlatforms.contains(name) {
                let near = nearMiss(name, in: knownPlatforms)
                problems.append(
                    .error(
                        file,
                        key: key,
                        "is \"\(name)\", which is not a platform ba-package knows",
                        fix: near.map { "did you mean \"\($0)\"?" } ?? fix
                    )
                )
                wrong = true
            } else if let first = items.firstIndex(of: item), first < index {
                problems.append(
                    .warning(
                        file,
                        key,
                        "lists \"\(name)\" again (platforms[\(first)] is \"\(name)\" already); it counts once",
                        fix: "list each platform once"
                    )
                )
            } else {
                platforms.append(name)
            }
        }
        return wrong ? nil : platforms
    }

    /// Why a value is not a list with something in it: "must be a non-empty array (it is null)".
    static func notANonEmptyArray(_ value: JSONValue) -> String {
        if case .array = value { return "must be a non-empty array (it is empty)" }
        return "must be a non-empty array (it is \(value.typeName))"
    }

    static func show(_ value: JSONValue) -> String {
        if case .string(let text) = value { return "\"\(text)\"" }
        return value.typeName
    }
}

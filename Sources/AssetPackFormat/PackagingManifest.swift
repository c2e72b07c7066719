import Foundation
import SystemPackage

/// Apple's packaging manifest: the input of `ba-package`, one per asset pack.
///
/// ```json
/// { "assetPackID": "Tutorial",
///   "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation"] } },
///   "fileSelectors": [ { "file": "Videos/Introduction.m4v" }, { "directory": "Levels" } ],
///   "platforms": ["iOS"] }
/// ```
///
/// With Xcode 27's keys too: `sourceRoot`, `language`, `userInfo`, and the selectors `filePattern`,
/// `fileExclusion`, `fileSource`/`fileDestination` and `directorySource`/`directoryDestination`.
public struct PackagingManifest: Sendable, Hashable {
    /// The identifier the app uses in code.
    public var assetPackID: String
    /// When the pack is downloaded.
    public var downloadPolicy: DownloadPolicy
    /// Which files of the source root go into the pack, and where.
    public var fileSelectors: [FileSelector]
    /// The platforms the pack is for (`iOS`, `macOS`, `tvOS`, `visionOS`).
    public var platforms: [String]
    /// Where selector paths start, relative to the manifest file's folder (Xcode 27); `nil` for the asset
    /// folder (`serve`, `export`) or `--root` (`package`).
    public var sourceRoot: String?
    /// The language of a localized pack, a BCP-47 tag of language, script and region (OS 27); `nil` for a
    /// pack every language uses.
    public var language: String?
    /// Anything the app wants in the pack's download-manifest entry, copied there as is (Xcode 27).
    public var userInfo: JSONValue?

    /// Creates a manifest.
    public init(
        assetPackID: String,
        downloadPolicy: DownloadPolicy,
        fileSelectors: [FileSelector],
        platforms: [String],
        sourceRoot: String? = nil,
        language: String? = nil,
        userInfo: JSONValue? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.fileSelectors = fileSelectors
        self.platforms = platforms
        self.sourceRoot = sourceRoot
        self.language = language
        self.userInfo = userInfo
    }

    /// The platform names `ba-package` accepts.
    public static let knownPlatforms: [String] = ["iOS", "macOS", "tvOS", "visionOS"]

    /// The top-level keys a manifest may have.
    public static let knownKeys: [String] = [
        "assetPackID", "downloadPolicy", "fileSelectors", "language", "platforms", "sourceRoot", "userInfo",
    ]
}

/// One entry of `fileSelectors`.
public enum FileSelector: Sendable, Hashable {
    /// One file, by its path relative to the source root; it keeps that path in the pack.
    case file(String)
    /// A folder and all nested folders, by its path relative to the source root.
    case directory(String)
    /// Every file whose path matches the pattern (Xcode 27 `filePattern`), e.g. `Levels/**/*.json`.
    case filePattern(Glob)
    /// Removes the files that match from what the other selectors chose (Xcode 27 `fileExclusion`),
    /// wherever it stands in the list.
    case fileExclusion(Glob)
    /// One file placed at another path in the pack (Xcode 27 `fileSource` and `fileDestination`).
    case fileMapping(source: String, destination: String)
    /// A folder's contents placed under another path in the pack (Xcode 27 `directorySource` and
    /// `directoryDestination`).
    case directoryMapping(source: String, destination: String)

    /// The selector's key as written in the manifest (the first one, for the two-key selectors).
    public var key: String {
        switch self {
        case .file: "file"
        case .directory: "directory"
        case .filePattern: "filePattern"
        case .fileExclusion: "fileExclusion"
        case .fileMapping: "fileSource"
        case .directoryMapping: "directorySource"
        }
    }
}

/// A problem a manifest has, with where it is and what to do: what `ba-mock validate` lists.
public struct ManifestProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// An error stops the pack from being built; a warning does not.
    public enum Severity: String, Sendable, Hashable, Codable {
        case error, warning
    }

    /// The manifest file.
    public var file: String
    /// The key, e.g. `fileSelectors[2].filePattern`; `(top level)` or `(file)` for the document itself.
    public var key: String
    public var severity: Severity
    /// What is wrong, e.g. `is missing`.
    public var message: String
    /// What to do about it.
    public var fix: String?
    /// The error code this problem maps to, when it is an error.
    var code: AssetPackFormatError.Code = .invalidManifest

    enum CodingKeys: String, CodingKey {
        case file, key, severity, message, fix
    }

    /// Creates a problem.
    public init(file: String, key: String, severity: Severity, message: String, fix: String?) {
        self.file = file
        self.key = key
        self.severity = severity
        self.message = message
        self.fix = fix
    }

    /// `FILE: KEY: MESSAGE. Fix: FIX`, as every message of this tool reads.
    public var description: String {
        "\(file): \(key): \(message)" + (fix.map { ". Fix: \($0)" } ?? "")
    }

    static func error(
        _ file: String,
        _ key: String,
        _ message: String,
        fix: String?,
        code: AssetPackFormatError.Code = .invalidManifest
    ) -> Self {
        var problem = Self(file: file, key: key, severity: .error, message: message, fix: fix)
        problem.code = code
        return problem
    }

    static func error(
        _ file: String,
        key: String,
        _ message: String,
        fix: String?,
        code: AssetPackFormatError.Code = .invalidManifest
    ) -> Self {
        error(file, key, message, fix: fix, code: code)
    }

    static func warning(_ file: String, _ key: String, _ message: String, fix: String? = nil) -> Self {
        Self(file: file, key: key, severity: .warning, message: message, fix: fix)
    }

    /// The problem as an error to throw.
    var asError: AssetPackFormatError {
        AssetPackFormatError(code: code, message: description)
    }
}

/// A manifest read from a file, with the warnings its validation raised.
public struct ParsedManifest: Sendable, Hashable {
    /// The validated manifest.
    public var manifest: PackagingManifest
    /// Where it was read from, as given (used in every message about it).
    public var file: String
    /// Things that are allowed here but would fail or surprise elsewhere (App Store Connect, the
    /// merged namespace on the device).
    public var problems: [ManifestProblem]

    /// The warnings, as lines to print.
    public var warnings: [String] { problems.map(\.description) }
}

/// What checking a manifest found: the manifest when it has no error, and every problem.
public struct ManifestCheck: Sendable, Hashable {
    /// The manifest, when it has no error.
    public var parsed: ParsedManifest?
    /// Every error and warning, in the order of the keys.
    public var problems: [ManifestProblem]
}

extension ManifestProblem: Error {}

extension PackagingManifest {
    /// Reads and validates a packaging manifest file (JSON, `//` and `/* */` comments allowed).
    ///
    /// Checks the keys and values only; selector paths are checked against the files by
    /// ``PackSource/resolve(_:root:boundary:)``.
    /// - Parameter path: The manifest file.
    /// - Returns: The manifest and its warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.notFound`, `.io`, `.invalidJSON`, `.invalidManifest`
    ///   or `.unsafePath`; the message names the file, the key and the fix (the first error, and how many more
    ///   there are).
    public static func load(from path: FilePath) throws -> ParsedManifest {
        try Self.throwing(try check(file: path))
    }

    /// Reads a manifest file and finds every problem it has, as `ba-mock validate` does.
    /// - Throws: ``AssetPackFormatError`` with code `.notFound` or `.io` when the file cannot be read.
    public static func check(file path: FilePath) throws -> ManifestCheck {
        let bytes: [UInt8]
        do {
            let fd = try FileDescriptor.open(path, .readOnly)
            bytes = try fd.closeAfter { try fd.readAll() }
        } catch let errno as Errno where errno == .noSuchFileOrDirectory {
            throw AssetPackFormatError(
                code: .notFound,
                message: "manifest \(path) does not exist. Fix: check the path, or create one with `ba-mock template`",
                cause: errno
            )
        } catch let errno as Errno {
            throw AssetPackFormatError.io("read manifest", path, errno)
        }
        var checked = check(bytes, file: path.string)
        if path.extension != "json" {
            // Xcode 27's ba-package refuses it too ("path extension isn't “json”").
            checked.problems.insert(
                .error(
                    path.string,
                    "(file)",
                    "has the extension \"\(path.extension ?? "")\", not \"json\", which ba-package refuses",
                    fix: "rename it to \(path.stem ?? "Manifest").json"
                ),
                at: 0
            )
            checked.parsed = nil
        }
        return checked
    }

    /// Validates a packaging manifest given as bytes.
    /// - Parameters:
    ///   - bytes: The manifest's text (JSON with optional comments).
    ///   - file: The name used in messages.
    /// - Returns: The manifest and its warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidJSON`, `.invalidManifest` or `.unsafePath`.
    public static func parse(_ bytes: [UInt8], file: String) throws -> ParsedManifest {
        try throwing(check(bytes, file: file))
    }

    /// The manifest of a check, or the error `load` throws for it: the first error, and how many more.
    public static func throwingFirst(_ check: ManifestCheck) throws -> ParsedManifest {
        try throwing(check)
    }

    private static func throwing(_ check: ManifestCheck) throws -> ParsedManifest {
        if let parsed = check.parsed { return parsed }
        let errors = check.problems.filter { $0.severity == .error }
        guard let first = errors.first else { throw AssetPackFormatError(code: .invalidManifest, message: "invalid") }
        var error = first.asError
        if errors.count > 1 {
            error.message += " (and \(errors.count - 1) more: `ba-mock validate \(first.file)` lists every problem)"
        }
        throw error
    }

    /// Finds every problem of a manifest given as bytes: each key is checked, so one mistake does not hide
    /// the next.
    public static func check(_ bytes: [UInt8], file: String) -> ManifestCheck {
        let text = JSONValue.stripComments(bytes)
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(text))
        } catch {
            let problem = ManifestProblem.error(
                file,
                "not valid JSON (\(Self.syntaxProblem(in: text)))",
                "the file cannot be read as JSON",
                fix: "check quotes, commas and brackets there; `//` and `/* */` comments are allowed",
                code: .invalidJSON
            )
            return ManifestCheck(parsed: nil, problems: [problem])
        }
        guard case .object(let object) = value else {
            return ManifestCheck(
                parsed: nil,
                problems: [
                    .error(
                        file,
                        "(top level)",
                        "is \(value.typeName), not an object",
                        fix: "start from `ba-mock template`"
                    )
                ]
            )
        }
        var problems: [ManifestProblem] = []
        for key in object.keys.sorted() where !knownKeys.contains(key) {
            let near = nearMiss(key, in: knownKeys)
            problems.append(
                .error(
                    file,
                    key,
                    "is not a key of packaging manifests; a key that is ignored gives a pack that differs from the "
                        + "one App Store Connect builds",
                    fix: near.map { "did you mean \"\($0)\"?" }
                        ?? "remove it (keys: \(knownKeys.joined(separator: ", ")))"
                )
            )
        }
        func take<T>(_ body: () throws -> T) -> T? {
            do {
                return try body()
            } catch let problem as ManifestProblem {
                problems.append(problem)
            } catch {
                problems.append(.error(file, "(top level)", "\(error)", fix: nil))
            }
            return nil
        }
        var warnings: [ManifestProblem] = []
        let id = take { try parseID(object["assetPackID"], file: file, warnings: &warnings) }
        let policy = take { try parsePolicy(object["downloadPolicy"], file: file) }
        let selectors = take { try parseSelectors(object["fileSelectors"], file: file) }
        let platforms = take { try parsePlatforms(object["platforms"], file: file) }
        let sourceRoot = take { try parseSourceRoot(object["sourceRoot"], file: file) }
        let language = take { try parseLanguage(object["language"], file: file) }
        let userInfo = take { try parseUserInfo(object["userInfo"], file: file) }
        problems += warnings
        guard let id, let policy, let selectors, let platforms, let sourceRoot, let language, let userInfo,
            !problems.contains(where: { $0.severity == .error })
        else { return ManifestCheck(parsed: nil, problems: problems) }
        let manifest = PackagingManifest(
            assetPackID: id,
            downloadPolicy: policy,
            fileSelectors: selectors,
            platforms: platforms,
            sourceRoot: sourceRoot.value,
            language: language.value,
            userInfo: userInfo.value
        )
        return ManifestCheck(
            parsed: ParsedManifest(manifest: manifest, file: file, problems: problems),
            problems: problems
        )
    }

    /// The known key a misspelt one was meant to be: same letters in another case, or one or two edits away.
    static func nearMiss(_ key: String, in known: [String]) -> String? {
        if let same = known.first(where: { $0.lowercased() == key.lowercased() }) { return same }
        return known.map { ($0, editDistance($0.lowercased(), key.lowercased())) }.filter { $0.1 <= 2 }
            .min { $0.1 < $1.1 }?.0
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }

    /// An optional value that was checked: present or not, it is valid.
    struct Checked<T> {
        var value: T?
    }

    private static func parseSourceRoot(_ value: JSONValue?, file: String) throws -> Checked<String> {
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

    private static func parseLanguage(_ value: JSONValue?, file: String) throws -> Checked<String> {
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

    private static func parseUserInfo(_ value: JSONValue?, file: String) throws -> Checked<JSONValue> {
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
    private static func syntaxProblem(in text: [UInt8]) -> String {
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

    private static func parseID(_ value: JSONValue?, file: String, warnings: inout [ManifestProblem]) throws -> String {
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

    private static func parsePolicy(_ value: JSONValue?, file: String) throws -> DownloadPolicy {
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

    private static func parseSelectors(_ value: JSONValue?, file: String) throws -> [FileSelector] {
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

    private static func parsePlatforms(_ value: JSONValue?, file: String) throws -> [String] {
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

    private static func show(_ value: JSONValue) -> String {
        if case .string(let text) = value { return "\"\(text)\"" }
        return value.typeName
    }
}

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
public struct PackagingManifest: Sendable, Hashable, Codable {
    /// The identifier the app uses in code.
    public var assetPackID: String
    /// When the pack is downloaded.
    public var downloadPolicy: DownloadPolicy
    /// Which files of the asset folder go into the pack, as paths relative to the folder.
    public var fileSelectors: [FileSelector]
    /// The platforms the pack is for (`iOS`, `macOS`, `tvOS`, `visionOS`).
    public var platforms: [String]

    /// Creates a manifest.
    public init(
        assetPackID: String,
        downloadPolicy: DownloadPolicy,
        fileSelectors: [FileSelector],
        platforms: [String]
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.fileSelectors = fileSelectors
        self.platforms = platforms
    }

    /// The platform names `ba-package` accepts.
    public static let knownPlatforms: [String] = ["iOS", "macOS", "tvOS", "visionOS"]
}

/// One entry of `fileSelectors`: a single file, or a folder with everything below it.
public enum FileSelector: Sendable, Hashable, Codable {
    /// One file, by its path relative to the asset folder.
    case file(String)
    /// A folder and all nested folders, by its path relative to the asset folder.
    case directory(String)

    /// The selector's path as written in the manifest.
    public var path: String {
        switch self {
        case .file(let path), .directory(let path): path
        }
    }

    /// The selector's key: `file` or `directory`.
    public var key: String {
        switch self {
        case .file: "file"
        case .directory: "directory"
        }
    }

    private enum CodingKeys: String, CodingKey {
        case file, directory
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let path = try container.decodeIfPresent(String.self, forKey: .file) {
            self = .file(path)
        } else {
            self = .directory(try container.decode(String.self, forKey: .directory))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .file(let path): try container.encode(path, forKey: .file)
        case .directory(let path): try container.encode(path, forKey: .directory)
        }
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
    public var warnings: [String]
}

extension PackagingManifest {
    /// Reads and validates a packaging manifest file (JSON, `//` and `/* */` comments allowed).
    ///
    /// Checks the keys and values only; selector paths are checked against an asset folder by
    /// ``PackSource/resolve(_:root:)``.
    /// - Parameter path: The manifest file.
    /// - Returns: The manifest and its warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.notFound`, `.io`, `.invalidJSON` or
    ///   `.invalidManifest`; the message names the file, the key and the fix.
    public static func load(from path: FilePath) throws -> ParsedManifest {
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
        return try parse(bytes, file: path.string)
    }

    /// Validates a packaging manifest given as bytes.
    /// - Parameters:
    ///   - bytes: The manifest's text (JSON with optional comments).
    ///   - file: The name used in messages.
    /// - Returns: The manifest and its warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidJSON` or `.invalidManifest`.
    public static func parse(_ bytes: [UInt8], file: String) throws -> ParsedManifest {
        let text = JSONValue.stripComments(bytes)
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(text))
        } catch {
            throw AssetPackFormatError(
                code: .invalidJSON,
                message:
                    "\(file): not valid JSON (\(Self.syntaxProblem(in: text))). Fix: check quotes, commas and "
                    + "brackets there; `//` and `/* */` comments are allowed"
            )
        }
        var warnings: [String] = []
        guard case .object(let object) = value else {
            throw AssetPackFormatError.manifest(
                file,
                key: "(top level)",
                "is \(value.typeName), not an object",
                fix: "start from `ba-mock template`"
            )
        }
        let known: Set = ["assetPackID", "downloadPolicy", "fileSelectors", "platforms"]
        for key in object.keys.sorted() where !known.contains(key) {
            warnings.append(
                "\(file): \(key): unknown key, ignored (supported: \(known.sorted().joined(separator: ", ")))"
            )
        }

        let id = try parseID(object["assetPackID"], file: file, warnings: &warnings)
        let policy = try parsePolicy(object["downloadPolicy"], file: file)
        let selectors = try parseSelectors(object["fileSelectors"], file: file)
        let platforms = try parsePlatforms(object["platforms"], file: file)
        return ParsedManifest(
            manifest: PackagingManifest(
                assetPackID: id,
                downloadPolicy: policy,
                fileSelectors: selectors,
                platforms: platforms
            ),
            file: file,
            warnings: warnings
        )
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

    private static func parseID(_ value: JSONValue?, file: String, warnings: inout [String]) throws -> String {
        guard let value else {
            throw AssetPackFormatError.manifest(
                file,
                key: "assetPackID",
                "is missing",
                fix: "add \"assetPackID\": \"YourPackName\" (letters, digits and hyphens)"
            )
        }
        guard case .string(let id) = value else {
            throw AssetPackFormatError.manifest(
                file,
                key: "assetPackID",
                "is \(value.typeName), not a string",
                fix: "write the ID in quotes, e.g. \"Tutorial\""
            )
        }
        if let problem = AssetPackID.problem(with: id) {
            throw AssetPackFormatError.manifest(
                file,
                key: "assetPackID",
                "\"\(AssetPackID.printable(id))\" \(problem)",
                fix: "use letters, digits and hyphens only, e.g. \"Level-Pack-1\""
            )
        }
        if id.contains("_") || id.contains(".") {
            warnings.append(
                "\(file): assetPackID: \"\(id)\" contains '_' or '.', which App Store Connect rejects on upload "
                    + "(ba-package and this mock accept it). Use hyphens instead to upload this pack to Apple"
            )
        }
        return id
    }

    private static func parsePolicy(_ value: JSONValue?, file: String) throws -> DownloadPolicy {
        let fix =
            "write exactly one of {\"essential\": {\"installationEventTypes\": [\"firstInstallation\"]}}, "
            + "{\"prefetch\": {...}} or {\"onDemand\": {}}"
        guard let value else {
            throw AssetPackFormatError.manifest(file, key: "downloadPolicy", "is missing", fix: fix)
        }
        guard case .object(let object) = value else {
            throw AssetPackFormatError.manifest(
                file,
                key: "downloadPolicy",
                "is \(value.typeName), not an object",
                fix: fix
            )
        }
        guard object.count == 1, let (key, body) = object.first else {
            let keys = object.keys.sorted().joined(separator: ", ")
            throw AssetPackFormatError.manifest(
                file,
                key: "downloadPolicy",
                object.isEmpty ? "has no policy" : "has \(object.count) policies (\(keys)); a pack has exactly one",
                fix: fix
            )
        }
        switch key {
        case "onDemand":
            guard case .object(let inner) = body, inner.isEmpty else {
                throw AssetPackFormatError.manifest(
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
                throw AssetPackFormatError.manifest(
                    file,
                    key: "downloadPolicy.\(key)",
                    "is \(body.typeName), not an object",
                    fix: eventsFix
                )
            }
            guard let events = inner["installationEventTypes"] else {
                throw AssetPackFormatError.manifest(file, key: path, "is missing", fix: eventsFix)
            }
            guard case .array(let items) = events, !items.isEmpty else {
                throw AssetPackFormatError.manifest(
                    file,
                    key: path,
                    "must be a non-empty array",
                    fix: eventsFix
                )
            }
            var types: [InstallationEventType] = []
            for item in items {
                guard case .string(let name) = item, let type = InstallationEventType(rawValue: name) else {
                    throw AssetPackFormatError.manifest(
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
            throw AssetPackFormatError.manifest(
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
            throw AssetPackFormatError.manifest(file, key: "fileSelectors", "is missing", fix: fix)
        }
        guard case .array(let items) = value, !items.isEmpty else {
            throw AssetPackFormatError.manifest(file, key: "fileSelectors", "must be a non-empty array", fix: fix)
        }
        var selectors: [FileSelector] = []
        for (index, item) in items.enumerated() {
            let key = "fileSelectors[\(index)]"
            guard case .object(let object) = item, object.count == 1, let (kind, pathValue) = object.first else {
                throw AssetPackFormatError.manifest(
                    file,
                    key: key,
                    "must be an object with exactly one key, \"file\" or \"directory\"",
                    fix: "write {\"file\": \"path/to/file\"} or {\"directory\": \"path/to/folder\"}"
                )
            }
            guard kind == "file" || kind == "directory" else {
                throw AssetPackFormatError.manifest(
                    file,
                    key: "\(key).\(kind)",
                    "is not a selector this tool supports",
                    fix: "use \"file\" or \"directory\" (the Xcode 27 selectors are not supported yet)"
                )
            }
            guard case .string(let path) = pathValue, !path.isEmpty else {
                throw AssetPackFormatError.manifest(
                    file,
                    key: "\(key).\(kind)",
                    "must be a non-empty string",
                    fix: "give a path relative to the asset folder"
                )
            }
            try PackPath.checkSelector(path, file: file, key: "\(key).\(kind)")
            selectors.append(kind == "file" ? .file(path) : .directory(path))
        }
        return selectors
    }

    private static func parsePlatforms(_ value: JSONValue?, file: String) throws -> [String] {
        let fix = "write e.g. \"platforms\": [\"iOS\", \"macOS\"] (known: \(knownPlatforms.joined(separator: ", ")))"
        guard let value else {
            throw AssetPackFormatError.manifest(file, key: "platforms", "is missing", fix: fix)
        }
        guard case .array(let items) = value, !items.isEmpty else {
            throw AssetPackFormatError.manifest(file, key: "platforms", "must be a non-empty array", fix: fix)
        }
        var platforms: [String] = []
        for item in items {
            guard case .string(let name) = item else {
                throw AssetPackFormatError.manifest(file, key: "platforms", "has \(show(item))", fix: fix)
            }
            if name == "iPadOS" {
                throw AssetPackFormatError.manifest(
                    file,
                    key: "platforms",
                    "lists \"iPadOS\", which ba-package rejects",
                    fix: "list \"iOS\"; it covers iPadOS"
                )
            }
            guard knownPlatforms.contains(name) else {
                throw AssetPackFormatError.manifest(
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

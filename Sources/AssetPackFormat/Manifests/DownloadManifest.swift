import Foundation

/// The download manifest a server publishes: Apple's self-hosted layout plus fields Apple leaves out.
///
/// ```json
/// {"assetPacks": [{"id": "Tutorial", "url": "http://127.0.0.1:8443/assets/Tutorial", "version": 1,
///   "downloadSize": 415232, "downloadPolicy": {"essential": {...}}, "host": {"thirdParty": {}},
///   "sha256": "…", "installSize": 450560, "fileCount": 6, "compression": "zstd"}]}
/// ```
public struct DownloadManifest: Sendable, Hashable, Codable {
    /// One pack as the manifest lists it: Apple's fields (`id`, `url`, `version`, `downloadSize`,
    /// `downloadPolicy`, `host`, and Xcode 27's `userInfo`, `language`, `platforms`), and ours (`sha256`,
    /// `installSize`, `fileCount`, `compression`), which a manifest made by Apple's tools lacks.
    public struct Entry: Sendable, Hashable, Codable {
        /// The pack's ID.
        public var id: String
        /// Where to download the archive: absolute, or relative to the manifest's own URL.
        public var url: String
        /// The pack's version; it rises each time the content changes.
        public var version: Int
        /// The archive's exact size in bytes.
        public var downloadSize: Int64
        /// When the pack is downloaded.
        public var downloadPolicy: DownloadPolicy
        /// Who hosts the pack; `{"thirdParty": {}}` for self-hosted packs.
        public var host: Host
        /// Lower-case hex SHA-256 of the archive (ours; `nil` in Apple's manifests).
        public var sha256: String?
        /// The bytes the pack's files take once installed (ours).
        public var installSize: Int64?
        /// How many files the pack holds (ours).
        public var fileCount: Int?
        /// The archive's compression filter (ours).
        public var compression: PackCompression?
        /// The platforms the pack is for (Xcode 27); `nil` for every platform.
        public var platforms: [String]?
        /// The language of a localized pack, a BCP-47 tag (OS 27); `nil` for every language.
        public var language: String?
        /// What the packaging manifest's `userInfo` held (Xcode 27).
        public var userInfo: JSONValue?
        /// Delta archives from earlier versions to this one (ours: a client that does not know the field
        /// ignores it, Apple's included).
        public var deltas: [Delta]?

        /// Creates an entry.
        public init(
            id: String,
            url: String,
            version: Int,
            downloadSize: Int64,
            downloadPolicy: DownloadPolicy,
            sha256: String?,
            installSize: Int64?,
            fileCount: Int?,
            compression: PackCompression?,
            platforms: [String]? = nil,
            language: String? = nil,
            userInfo: JSONValue? = nil,
            deltas: [Delta]? = nil
        ) {
            self.id = id
            self.url = url
            self.version = version
            self.downloadSize = downloadSize
            self.downloadPolicy = downloadPolicy
            self.host = Host()
            self.sha256 = sha256
            self.installSize = installSize
            self.fileCount = fileCount
            self.compression = compression
            self.platforms = platforms
            self.language = language
            self.userInfo = userInfo
            self.deltas = deltas
        }

        enum CodingKeys: String, CodingKey {
            case id, url, version, downloadSize, downloadPolicy, host, sha256, installSize, fileCount, compression
            case platforms, language, userInfo, deltas
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            id = try container.decode(String.self, forKey: .id)
            url = try container.decode(String.self, forKey: .url)
            version = try container.decode(Int.self, forKey: .version)
            downloadSize = try container.decode(Int64.self, forKey: .downloadSize)
            downloadPolicy = try container.decode(DownloadPolicy.self, forKey: .downloadPolicy)
            host = try container.decodeIfPresent(Host.self, forKey: .host) ?? Host()
            sha256 = try container.decodeIfPresent(String.self, forKey: .sha256)
            installSize = try container.decodeIfPresent(Int64.self, forKey: .installSize)
            fileCount = try container.decodeIfPresent(Int.self, forKey: .fileCount)
            // A filter this version does not know is not a reason to refuse the pack.
            compression = try? container.decodeIfPresent(PackCompression.self, forKey: .compression)
            platforms = try container.decodeIfPresent([String].self, forKey: .platforms)
            language = try container.decodeIfPresent(String.self, forKey: .language)
            userInfo = try container.decodeIfPresent(JSONValue.self, forKey: .userInfo)
            // A delta this client cannot read is one it does not use: the full pack still installs.
            deltas = try? container.decodeIfPresent([Delta].self, forKey: .deltas)
        }
    }

    /// A delta archive (see ``PackDelta``): from the base version a client has installed to the entry's.
    public struct Delta: Sendable, Hashable, Codable {
        /// The base version.
        public var fromVersion: Int
        /// The base version's archive digest: a client uses the delta only over exactly that archive.
        public var fromSHA256: String
        /// Where to download the delta: absolute, or relative to the manifest's own URL.
        public var url: String
        /// The delta archive's exact size.
        public var downloadSize: Int64
        /// The delta archive's SHA-256.
        public var sha256: String
        /// How many files it carries (the others are the base's).
        public var fileCount: Int?

        /// Creates a delta entry.
        public init(
            fromVersion: Int,
            fromSHA256: String,
            url: String,
            downloadSize: Int64,
            sha256: String,
            fileCount: Int? = nil
        ) {
            self.fromVersion = fromVersion
            self.fromSHA256 = fromSHA256
            self.url = url
            self.downloadSize = downloadSize
            self.sha256 = sha256
            self.fileCount = fileCount
        }
    }

    /// The `host` object; encodes as `{"thirdParty": {}}`.
    public struct Host: Sendable, Hashable, Codable {
        /// Present for self-hosted packs.
        public var thirdParty: [String: String]? = [:]

        /// Creates the third-party host marker.
        public init() {}
    }

    /// The packs, sorted by ID.
    public var assetPacks: [Entry]
    /// ba-mock's own key, there only while a packaging manifest of the folder it serves is broken: each
    /// problem (file, key, message, fix, pack), while the pack's last good version stays listed. Apple's
    /// manifests have no such key; clients ignore it.
    public var mockProblems: [ManifestProblem]?

    /// Creates a manifest.
    public init(assetPacks: [Entry]) {
        self.assetPacks = assetPacks
    }

    /// The manifest as JSON with sorted keys, so the same packs always give the same bytes.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        // Foundation prints an empty object over three lines; JSON strings hold no raw newline, so this
        // folds only `{}` values such as "onDemand" and "thirdParty".
        let text = String(decoding: try encoder.encode(self), as: UTF8.self)
        let folded = text.replacingOccurrences(of: #"\{\s*\n\s*\}"#, with: "{}", options: .regularExpression)
        return Data(folded.utf8)
    }
}

extension DownloadManifest {
    /// The most packs a manifest may list; more is refused as hostile.
    public static let maximumPackCount = 10_000

    /// The largest download manifest a client accepts (one of 10 000 packs is about 5 MiB).
    public static let maximumSize = 64 << 20

    /// What decoding a manifest found wrong, in words, where: `assetPacks[0].id is not a string`.
    static func describe(_ error: any Error, in data: Data) -> String {
        func place(_ path: [any CodingKey]) -> String {
            path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined().trimmingPrefix(".").description
        }
        switch error as? DecodingError {
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            // Foundation says only that it is not valid JSON: the scanner of packaging manifests says what and where.
            do {
                _ = try JSONScanner.document(Array(data), comments: false)
            } catch let failure as JSONScanner.Failure {
                return "is not JSON (\(failure.kind.words)\(failure.place.map { " at \($0)" } ?? ""))"
            } catch {}
            return "is not JSON ba-sync reads (\(context.debugDescription))"
        case .dataCorrupted(let context):
            return "has \(place(context.codingPath)) wrong: \(context.debugDescription)"
        case .keyNotFound(let key, let context):
            let owner = context.codingPath.isEmpty ? "" : "\(place(context.codingPath)) "
            return "\(owner)has no \"\(key.stringValue)\""
        case .typeMismatch(let type, let context):
            return context.codingPath.isEmpty
                ? "its top level is not an object" : "\(place(context.codingPath)) is not \(Self.kind(type))"
        case .valueNotFound(_, let context):
            return "\(place(context.codingPath)) is null"
        default:
            return "is not a manifest ba-sync understands (\(error))"
        }
    }

    private static func kind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: type is [Any].Type ? "a list" : "an object"
        }
    }

    /// Decodes and checks a download manifest as a client receives it.
    ///
    /// Refuses what would be unsafe or meaningless to act on: IDs that are not valid pack IDs (they become
    /// folder names), duplicate IDs, negative or absurd sizes, digests that are not 64 hex characters, URLs
    /// with a scheme other than http or https, and more than ``maximumPackCount`` packs.
    /// - Parameters:
    ///   - data: The manifest's bytes.
    ///   - source: Where it came from (a URL), for messages.
    /// - Returns: The manifest.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidJSON` or `.invalidManifest`.
    public static func decode(_ data: Data, source: String) throws -> DownloadManifest {
        var manifest: DownloadManifest
        do {
            manifest = try JSONDecoder().decode(DownloadManifest.self, from: data)
        } catch {
            throw AssetPackFormatError(
                code: .invalidJSON,
                message:
                    "the download manifest at \(source) \(describe(error, in: data)). Fix: look at what is served there "
                    + "(curl \(source))"  // the decoder's own error says no more, in Foundation's debug words
            )
        }
        func bad(_ problem: String) -> AssetPackFormatError {
            AssetPackFormatError(code: .invalidManifest, message: "the download manifest at \(source) \(problem)")
        }
        guard manifest.assetPacks.count <= maximumPackCount else {
            throw bad("lists \(manifest.assetPacks.count) packs, more than the \(maximumPackCount) accepted")
        }
        var seen = Set<String>()
        for (position, entry) in manifest.assetPacks.enumerated() {
            if let problem = AssetPackID.problem(with: entry.id) {
                throw bad("has a pack ID \"\(AssetPackID.printable(entry.id))\" that \(problem)")
            }
            guard seen.insert(entry.id).inserted else { throw bad("lists pack \(entry.id) twice") }
            let limit: Int64 = 1 << 50
            guard (0...limit).contains(entry.downloadSize), (0...limit).contains(entry.installSize ?? 0),
                (entry.fileCount ?? 0) >= 0, entry.version >= 0
            else {
                throw bad("gives pack \(entry.id) a negative or impossible size, count or version")
            }
            if let sha256 = entry.sha256, sha256.utf8.count != 64 || !sha256.utf8.allSatisfy({ isHexDigit($0) }) {
                throw bad("gives pack \(entry.id) a sha256 that is not 64 hex digits")
            }
            // Digests are compared as lower-case hex everywhere; capitals mean the same archive.
            manifest.assetPacks[position].sha256 = entry.sha256?.lowercased()
            if let language = entry.language, (try? LanguageTag(parsing: language)) == nil {
                throw bad(
                    "gives pack \(entry.id) a language \"\(AssetPackID.printable(language))\" that is not a BCP-47 tag"
                )
            }
            if let colon = entry.url.firstIndex(of: ":"), !entry.url[..<colon].contains("/") {
                let scheme = entry.url[..<colon].lowercased()
                guard scheme == "http" || scheme == "https" else {
                    throw bad("gives pack \(entry.id) a \(scheme): URL; only http and https are fetched")
                }
                if let url = URL(string: entry.url), let problem = fetchProblem(with: url) {
                    throw bad("gives pack \(entry.id) a URL that \(problem): \(AssetPackID.printable(entry.url))")
                }
            }
            // A delta that is not sound is dropped, not a reason to refuse the manifest: the full pack remains.
            manifest.assetPacks[position].deltas = entry.deltas?.filter { delta in
                delta.fromVersion >= 1 && delta.downloadSize >= 0 && delta.downloadSize <= 1 << 50
                    && (delta.fileCount ?? 0) >= 0
                    && [delta.sha256, delta.fromSHA256].allSatisfy {
                        $0.utf8.count == 64 && $0.utf8.allSatisfy(isHexDigit)
                    }
            }.map { delta in
                var delta = delta
                delta.sha256 = delta.sha256.lowercased()
                delta.fromSHA256 = delta.fromSHA256.lowercased()
                return delta
            }
        }
        return manifest
    }

    /// Why a URL cannot be fetched, or `nil`: it must be http or https, name a host, and give a port (if any)
    /// from 1 to 65535 (a client would otherwise fail in its socket layer, or crash).
    public static func fetchProblem(with url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            return "is not an http:// or https:// URL"
        }
        guard let host = url.host, !host.isEmpty else { return "names no host" }
        if let port = url.port, !(1...65535).contains(port) { return "has port \(port), outside 1 to 65535" }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) || (byte >= 65 && byte <= 70)
    }
}

extension DownloadManifest {
    /// A platform's name as Apple spells it (`iOS`, `macOS`, `tvOS`, `visionOS`), from a name in any case;
    /// `nil` for a platform that is not one of them.
    public static func platform(named name: String) -> String? {
        PackagingManifest.knownPlatforms.first { $0.lowercased() == name.lowercased() }
    }

    /// What to say of a platform name that is not known: `platform Android is not one of iOS, macOS, tvOS,
    /// visionOS`.
    public static func unknownPlatform(_ name: String) -> String {
        "platform \(AssetPackID.printable(name)) is not one of \(PackagingManifest.knownPlatforms.joined(separator: ", "))"
    }

    /// The manifest with only the packs for `platform`: those that list it, and those that list no platform
    /// (they are for every platform).
    public func only(platform: String) -> DownloadManifest {
        DownloadManifest(assetPacks: assetPacks.filter { $0.isFor(platform: platform) })
    }
}

extension DownloadManifest.Entry {
    /// Whether the pack is for `platform` (any case): it lists it, or lists no platform at all.
    public func isFor(platform: String) -> Bool {
        guard let platforms, !platforms.isEmpty else { return true }
        return platforms.contains { $0.lowercased() == platform.lowercased() }
    }
}

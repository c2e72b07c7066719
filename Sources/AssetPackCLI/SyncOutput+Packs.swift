import AssetPackClient
import AssetPackFormat
import SystemPackage

extension SyncOutput {
    /// `list`'s result: the server's packs for the platform played, with their local status, and the app's
    /// languages.
    public struct List: Encodable, Equatable, Sendable {
        /// One pack the server publishes.
        public struct Pack: Encodable, Equatable, Sendable {
            public var id: String
            public var version: Int
            public var downloadPolicy: String
            public var downloadSize: Int64
            @Nullable public var installSize: Int64?
            @Nullable public var fileCount: Int?
            @Nullable public var sha256: String?
            @Nullable public var language: String?
            @Nullable public var platforms: [String]?
            public var forResolvedLanguage: Bool
            @Nullable public var installedVersion: Int?
            /// Apple's status flags by name, and as `AssetPack.Status`'s raw value.
            public var status: [String]
            public var statusRawValue: UInt
        }

        public let event = "result"
        @Nullable public var resolvedLanguage: String?
        public var language: String
        public var primaryLanguage: String
        /// The platform played, or `any`.
        public var platform: String
        public var availableLanguages: [String]
        public var packs: [Pack]

        public init(entries: [AssetPackStatusEntry], manifest: AssetPackManifest, platform: String?) {
            resolvedLanguage = manifest.resolvedLanguage?.description
            language = (manifest.preferredLanguages.first ?? manifest.primaryLanguage).description
            primaryLanguage = manifest.primaryLanguage.description
            self.platform = platform ?? "any"
            availableLanguages = Set(entries.compactMap(\.pack?.language)).sorted()
            packs = entries.compactMap { entry in
                guard let pack = entry.pack else { return nil }
                return Pack(
                    id: pack.id,
                    version: pack.version,
                    downloadPolicy: pack.downloadPolicy.name,
                    downloadSize: pack.downloadSize,
                    installSize: pack.installSize,
                    fileCount: pack.fileCount,
                    sha256: pack.sha256,
                    language: pack.language,
                    platforms: pack.platforms,
                    forResolvedLanguage: manifest.isForResolvedLanguage(pack),
                    installedVersion: entry.installed?.version,
                    status: entry.status.names,
                    statusRawValue: entry.status.rawValue
                )
            }
        }
    }

    /// `status`' result: the installed packs (or the one asked for) with Apple's flags, relative to the
    /// server when it answered (`online`), else to what the app group knows (`offlineReason` says why).
    public struct Status: Encodable, Equatable, Sendable {
        /// One pack: its flags, and what is installed when it is (those keys only then).
        public struct Pack: Encodable, Equatable, Sendable {
            public var id: String
            public var status: [String]
            public var statusRawValue: Int
            public var installed: Installed?
            /// The pack's folder in the app group.
            public var path: String?

            enum CodingKeys: String, CodingKey { case id, status, statusRawValue, path }

            public func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(id, forKey: .id)
                try container.encode(status, forKey: .status)
                try container.encode(statusRawValue, forKey: .statusRawValue)
                try container.encodeIfPresent(path, forKey: .path)
                try installed?.encode(to: encoder)  // the same object: JSONEncoder hands back the container above
            }
        }

        /// What is installed of a pack.
        public struct Installed: Encodable, Equatable, Sendable {
            public var version: Int
            public var installSize: Int64
            public var fileCount: Int
            public var downloadPolicy: String
            @Nullable public var language: String?
            /// How a localized pack came: `language` (reconcile may remove it) or `ensure` (by hand).
            @Nullable public var installedFor: String?
            /// The archive's digest, when the manifest gave one (Apple's tools write none): it covered every
            /// file's bytes, which were checked against the pack's index by size; without it each file's
            /// SHA-256 was checked against the index.
            @Nullable public var sha256: String?
            public var archiveDigestVerified: Bool
            /// From an Apple Archive: how many files carry their SHA-256 (checked against it when no archive
            /// digest covered them).
            @Nullable public var fileDigestsCarried: Int?

            public init(_ pack: InstalledPack) {
                version = pack.version
                installSize = pack.installSize
                fileCount = pack.fileCount
                downloadPolicy = pack.downloadPolicy.name
                language = pack.language
                installedFor = pack.language == nil ? nil : pack.installedForLanguage == true ? "language" : "ensure"
                sha256 = pack.sha256
                archiveDigestVerified = pack.sha256 != nil
                fileDigestsCarried = pack.fileDigestsCarried
            }
        }

        public let event = "result"
        public var online: Bool
        public var packs: [Pack]
        public var offlineReason: String?
        public var language: String
        @Nullable public var resolvedLanguage: String?
        public var primaryLanguage: String

        public init(_ report: AssetPackStatusReport, language: AppLanguage) {
            online = report.offlineReason == nil
            packs = report.entries.map { entry in
                Pack(
                    id: entry.id,
                    status: entry.status.names,
                    statusRawValue: Int(entry.status.rawValue),
                    installed: entry.installed.map(Installed.init),
                    path: entry.folder?.string
                )
            }
            // The line that says the flags are offline ones, and why.
            offlineReason = report.offlineReason.map { "offline: \($0.message); flags are what the app group knows" }
            self.language = language.preferred
            resolvedLanguage = language.resolved
            primaryLanguage = language.primary
        }
    }
}

extension SyncOutput.List {
    /// The languages as the line under the table says them.
    public var appLanguage: AppLanguage {
        AppLanguage(preferred: language, resolved: resolvedLanguage, primary: primaryLanguage)
    }
}

extension SyncOutput.Status {
    /// The languages as the line under the table says them.
    public var appLanguage: AppLanguage {
        AppLanguage(preferred: language, resolved: resolvedLanguage, primary: primaryLanguage)
    }
}

/// The app's language as the app group plays it: what `status` and `list` show under their table.
public struct AppLanguage: Sendable, Equatable {
    /// The preferred language (given, kept in the app group, or the environment's).
    public var preferred: String
    /// The language the localized packs resolve to; `nil` when no localized pack is installed.
    public var resolved: String?
    /// The primary language.
    public var primary: String

    public init(_ reader: AssetPackReader) {
        preferred = reader.preferredLanguage.description
        resolved = reader.resolvedLanguage?.description
        primary = reader.primaryLanguage.description
    }

    public init(preferred: String, resolved: String?, primary: String) {
        (self.preferred, self.resolved, self.primary) = (preferred, resolved, primary)
    }

    /// `language: fr (the app's); localized packs resolve to fr; primary en`.
    public var line: String {
        "language: \(preferred) (the app's); localized packs resolve to "
            + (resolved ?? "none (no localized pack is installed)") + "; primary \(primary)"
    }
}

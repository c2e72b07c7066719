import AssetPackClient
import AssetPackFormat

/// What `ba-sync --json` prints, one shape per line, each a type of the JSON contract (``JSONOutput``):
/// a command's `result`, an `error`, and the lines its progress writes (``ProgressLine``). The README's
/// "JSON output" section lists them; `JSONShapeTests` pins each byte for byte.
public enum SyncOutput {
    /// A pack's failure: its code (``AssetPackClientError/Code``) and message.
    public struct Failure: Encodable, Equatable, Sendable {
        public var code: String
        public var message: String

        public init(_ error: AssetPackClientError) {
            code = error.code.rawValue
            message = error.description
        }
    }

    /// `{"event": "error", "code", "message", "pack"}`: what ended a command; `code` and `pack` when known.
    public struct Error: Encodable, Equatable, Sendable {
        public let event = "error"
        public var code: String?
        public var message: String
        public var pack: String?

        public init(code: String?, message: String, pack: String? = nil) {
            (self.code, self.message, self.pack) = (code, message, pack)
        }

        /// An error as scripts read it: a client error's code and pack, and Apple's errors (as the manager's
        /// methods with Apple's names throw them) under the same codes.
        public init(_ error: any Swift.Error) {
            self.init(code: nil, message: "\(error)")
            if let error = error as? AssetPackClientError {
                code = error.code.rawValue
                pack = error.assetPackID
            }
            switch error as? ManagedBackgroundAssetsError {
            case .assetPackNotFound(let id):
                code = AssetPackClientError.Code.assetPackNotFound.rawValue
                pack = id
            case .fileNotFound:
                code = AssetPackClientError.Code.fileNotFound.rawValue
            case nil: break
            }
        }
    }

    /// `{"event": "collisions", "rule": "shuffle", "seed"}`: the seed a shuffled collision rule drew.
    public struct Collisions: Encodable, Equatable, Sendable {
        public let event = "collisions"
        public let rule = "shuffle"
        /// As a string: a JavaScript number cannot hold every `UInt64`.
        public var seed: String

        public init(seed: UInt64) { self.seed = String(seed) }
    }

    /// The device conditions a command plays (`--network`, `--free-space`, `--network-drop`), said first so
    /// that a log shows what the run was under.
    public struct Conditions: Encodable, Equatable, Sendable {
        public let event = "conditions"
        public var network: String
        /// `null`: as much as the disk has.
        public var freeSpace: Int64?
        /// `null`: no drop.
        public var dropAfterBytes: Int64?
        public var dropSeconds: Double?

        public init(_ conditions: DeviceConditions) {
            network = conditions.network.rawValue
            freeSpace = conditions.freeSpace
            dropAfterBytes = conditions.drop?.afterBytes
            dropSeconds = conditions.drop?.downFor.inSeconds
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event, forKey: .event)
            try container.encode(network, forKey: .network)
            try container.encode(freeSpace, forKey: .freeSpace)
            try container.encode(dropAfterBytes, forKey: .dropAfterBytes)
            try container.encode(dropSeconds, forKey: .dropSeconds)
        }

        enum CodingKeys: String, CodingKey { case event, network, freeSpace, dropAfterBytes, dropSeconds }
    }

    /// `sync`'s result.
    public struct Sync: Encodable, Equatable, Sendable {
        public let event = "result"
        public var installed: [String]
        public var alreadyLocal: [String]
        public var removed: [String]
        public var essentialFailed: Bool
        public var launchesWithout: [String]
        public var failures: [String: Failure]

        public init(_ report: SyncReport) {
            installed = report.installed
            alreadyLocal = report.alreadyLocal
            removed = report.removed
            essentialFailed = report.essentialFailed
            launchesWithout = report.launchesWithout
            failures = report.failures.mapValues(Failure.init)
        }
    }

    /// `ensure`'s result: the packs local now, and each failure by pack.
    public struct Ensure: Encodable, Equatable, Sendable {
        public let event = "result"
        public var ok: [String]
        public var failures: [String: Failure]

        public init(ids: [String], failures: [AssetPack: AssetPackClientError]) {
            let failed = Set(failures.keys.map(\.id))
            ok = ids.filter { !failed.contains($0) }.sorted()
            self.failures = Dictionary(uniqueKeysWithValues: failures.map { ($0.key.id, Failure($0.value)) })
        }
    }

    /// `reconcile`'s result: what changed and the languages local now, or (nothing removed) the failures.
    public struct Reconcile: Encodable, Equatable, Sendable {
        public let event = "result"
        public var language: String
        public var downloaded: [String]
        public var removed: [String]
        public var locallyAvailableLanguages: [String]?
        public var failures: [String: Failure]?

        public init(language: String, _ result: LanguageReconciliation) {
            self.language = language
            downloaded = result.downloaded
            removed = result.removed
            locallyAvailableLanguages = result.locallyAvailableLanguages
        }

        public init(language: String, failures: [AssetPack: AssetPackClientError]) {
            self.language = language
            (downloaded, removed) = ([], [])
            self.failures = Dictionary(uniqueKeysWithValues: failures.map { ($0.key.id, Failure($0.value)) })
        }
    }

    /// `check-updates`' result, in Apple's words (`checkForUpdates()` returns the IDs it updates).
    public struct CheckUpdates: Encodable, Equatable, Sendable {
        public let event = "result"
        public var updatingIDs: [String]
        public var removedIDs: [String]

        public init(updating: Set<String>, removed: Set<String>) {
            (updatingIDs, removedIDs) = (updating.sorted(), removed.sorted())
        }
    }

    /// `remove`'s result.
    public struct Remove: Encodable, Equatable, Sendable {
        public let event = "result"
        public var removed: String

        public init(removed: String) { self.removed = removed }
    }

    /// `url`'s result: the URL `url(for:)` gives, and which pack holds the path (`null`: none).
    public struct FileURL: Encodable, Equatable, Sendable {
        public let event = "result"
        public var path: String
        public var url: String
        public var exists: Bool
        @Nullable public var assetPackID: String?

        public init(path: String, url: String, assetPackID: String?) {
            (self.path, self.url, self.exists, self.assetPackID) = (path, url, assetPackID != nil, assetPackID)
        }
    }

    /// `verify`'s result: the files checked and what was wrong.
    public struct Verify: Encodable, Equatable, Sendable {
        public struct Problem: Encodable, Equatable, Sendable {
            public var pack: String
            public var problem: String
            public var path: String?
        }

        public let event = "result"
        public var verifiedFiles: Int
        public var ok: Bool
        public var problems: [Problem]

        public init(_ result: AssetPackReader.Verification) {
            verifiedFiles = result.checked
            ok = result.problems.isEmpty
            problems = result.problems.map { Problem(pack: $0.pack, problem: $0.kind.rawValue, path: $0.path) }
        }
    }
}

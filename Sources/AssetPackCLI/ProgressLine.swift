import AssetPackFormat

/// One line `ba-sync --json` writes while packs download: `{"event": EVENT, "pack": ID, ...}` with the
/// keys of its event beside them, a shape of the JSON contract (``JSONOutput``).
///
/// | event | keys beside `event` and `pack` |
/// |---|---|
/// | `began`, `paused` | none |
/// | `progress` | `completed`, `total` (bytes) |
/// | `retrying` | `reason`, `attempt`, `of`, `delaySeconds` (0: it starts over at once) |
/// | `resuming` | `from` (the byte it resumes at), `of` |
/// | `delta` | `fromVersion`, `fileCount` (`null`: not known), `downloadSize`, `fullSize` |
/// | `deltaFailed` | `reason` (the whole pack comes instead) |
/// | `note` | `carried`, `fileCount`, `archiveDigestChecked` (files of an Apple Archive without SHA-256) |
/// | `finished` | `deltaFrom` (the version a delta came from, or `null`) |
/// | `failed` | `code`, `message` |
public struct ProgressLine<Details: Encodable & Sendable>: Encodable, Sendable {
    public var event: String
    public var pack: String
    /// The event's own keys, written beside `event` and `pack`.
    public var details: Details

    public init(event: String, pack: String, details: Details) {
        (self.event, self.pack, self.details) = (event, pack, details)
    }

    enum CodingKeys: String, CodingKey { case event, pack }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event, forKey: .event)
        try container.encode(pack, forKey: .pack)
        try details.encode(to: encoder)  // the same object: JSONEncoder hands back the container above
    }
}

/// The keys each event of ``ProgressLine`` has beside `event` and `pack`.
public enum ProgressDetails {
    /// No keys beyond `event` and `pack`.
    public struct None: Encodable, Sendable {
        public init() {}
        public func encode(to encoder: any Encoder) throws {}
    }

    public struct Progress: Encodable, Sendable {
        public var completed: Int64
        public var total: Int64
    }

    public struct Retrying: Encodable, Sendable {
        public var reason: String
        public var attempt: Int
        public var of: Int
        public var delaySeconds: Double
    }

    public struct Resuming: Encodable, Sendable {
        public var from: Int64
        public var of: Int64
    }

    public struct Delta: Encodable, Sendable {
        public var fromVersion: Int
        @Nullable public var fileCount: Int?
        public var downloadSize: Int64
        public var fullSize: Int64
    }

    public struct DeltaFailed: Encodable, Sendable {
        public var reason: String
    }

    public struct Note: Encodable, Sendable {
        public var carried: Int
        public var fileCount: Int
        public var archiveDigestChecked: Bool
    }

    public struct Finished: Encodable, Sendable {
        @Nullable public var deltaFrom: Int?
    }

    public struct Failed: Encodable, Sendable {
        public var code: String
        public var message: String
    }
}

/// `{"event": "waiting", "lock": PATH, "holderPID": N}`: another ba-sync holds the app group's lock (its
/// PID when the lock file names it).
public struct WaitingLine: Encodable, Sendable {
    public let event = "waiting"
    public var lock: String
    public var holderPID: Int?
}

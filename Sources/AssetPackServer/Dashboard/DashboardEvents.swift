import AssetPackFormat
import Foundation

/// The data of the dashboard's events, each a shape of the JSON contract (``JSONOutput``): `snapshot` (also
/// in the page, for its first paint) and `downloads`. The page reads `null` and an absent key differently
/// (`publishedVersion === null`, `rate === undefined`), so which is which is part of each shape.
enum DashboardEvent {
    /// `snapshot`: every pack the folder has or builds, the folder's problems, and the faults in force.
    struct Snapshot: Encodable, Equatable {
        var packs: [Pack]
        var problems: [ManifestProblem]
        var faults: [String]
        /// The fault plan's seed, as a string (a JavaScript number cannot hold every `UInt64`).
        var seed: String
    }

    /// One pack of a snapshot: how its build stands, its marks, and what is served when it is.
    struct Pack: Encodable, Equatable {
        var id: String
        /// `published`, `building` or `broken` (its manifest has problems; the last good version stays).
        var build: String
        var building: Bool
        var problems: [ManifestProblem]
        var obsolete: Bool
        var removed: Bool
        @Nullable var pinnedBy: String?
        @Nullable var contentVersion: Int?
        @Nullable var publishedVersion: Int?
        /// What is served, when the pack is; its keys sit beside the others.
        var served: Served?

        enum CodingKeys: String, CodingKey {
            case id, build, building, problems, obsolete, removed, pinnedBy, contentVersion, publishedVersion
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(build, forKey: .build)
            try container.encode(building, forKey: .building)
            try container.encode(problems, forKey: .problems)
            try container.encode(obsolete, forKey: .obsolete)
            try container.encode(removed, forKey: .removed)
            try container.encode(_pinnedBy, forKey: .pinnedBy)
            try container.encode(_contentVersion, forKey: .contentVersion)
            try container.encode(_publishedVersion, forKey: .publishedVersion)
            try served?.encode(to: encoder)  // the same object: JSONEncoder hands back the container above
        }
    }

    /// A served pack's keys in a snapshot.
    struct Served: Encodable, Equatable {
        var policy: String
        @Nullable var platforms: [String]?
        @Nullable var language: String?
        var version: Int
        var size: Int64
        var installSize: Int64
        var files: Int
        var sha256: String
        var format: String
        var compression: String
        var deltas: [Delta]

        init(_ pack: ServedPack) {
            policy = pack.downloadPolicy.name
            platforms = pack.platforms
            language = pack.language
            version = pack.version
            size = pack.downloadSize
            installSize = pack.installSize
            files = pack.fileCount
            sha256 = pack.sha256
            format = pack.format.rawValue
            compression = pack.compression.rawValue
            deltas = pack.deltas.map { Delta(fromVersion: $0.fromVersion, size: $0.downloadSize) }
        }
    }

    /// A delta the server has for a pack: from which version, and its size.
    struct Delta: Encodable, Equatable {
        var fromVersion: Int
        var size: Int64
    }

    /// `downloads`: the responses in flight (the oldest ``DashboardFeed/inFlightPerEvent``), and the finished
    /// ones since the last event (the newest ``DashboardFeed/finishedPerEvent``; `skipped` went by unsent).
    struct Downloads: Encodable, Equatable {
        var inFlight: [Response]
        var inFlightCount: Int
        var finished: [Response]
        var skipped: Int
        var capacity: Int
    }

    /// One response: in flight (with `rate` from the second event on), or finished (with `sequence`, `ms`
    /// and `aborted`).
    struct Response: Encodable, Equatable {
        var id: Int
        var client: String
        var method: String
        var path: String
        @Nullable var pack: String?
        @Nullable var range: String?
        var status: Int
        @Nullable var total: Int?
        @Nullable var fault: String?
        var sent: Int
        /// Seconds since 1970.
        var started: Double
        /// Bytes a second since the previous event.
        var rate: Double?
        var sequence: Int?
        var ms: Double?
        var aborted: Bool?

        init(_ request: DownloadBoard.InFlight) {
            id = request.id
            client = request.client
            method = request.method
            path = request.path
            pack = request.pack
            range = request.range
            status = request.status
            total = request.total
            fault = request.fault
            sent = request.sent
            started = request.started.timeIntervalSince1970
        }

        init(_ item: DownloadBoard.Finished) {
            self.init(item.request)
            sequence = item.sequence
            ms = (item.milliseconds * 10).rounded() / 10
            aborted = item.aborted
        }
    }
}

import AssetPackFormat
import Foundation

/// Deleting old versions: never an object the live manifest (or the one it replaces) names, never one of the
/// last `--keep` releases, and only once the release that replaced it is older than the grace period, so a
/// device or an edge still holding an older manifest (for up to its `max-age`) finds what it names.
extension Publisher {
    /// The releases a bucket's prefix has had, newest last: `PREFIX/releases.json`, written after each
    /// manifest that changed.
    struct ReleaseLog: Codable, Sendable, Hashable {
        struct Release: Codable, Sendable, Hashable {
            /// When its manifest went live.
            var publishedAt: Date
            var manifestSHA256: String
            /// The keys its manifest names.
            var keys: [String]
        }

        var releases: [Release] = []

        static func decode(_ data: Data) throws -> ReleaseLog {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode(ReleaseLog.self, from: data)
        }

        func encoded() throws -> Data {
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            return try encoder.encode(self)
        }

        /// The log with `release` appended, unless its manifest is the newest already.
        func adding(_ release: Release) -> ReleaseLog {
            guard releases.last?.manifestSHA256 != release.manifestSHA256 else { return self }
            return ReleaseLog(releases: releases + [release])
        }
    }

    /// An object of the bucket, as a list gives it.
    struct ListedObject: Sendable, Hashable {
        var key: String
        var size: Int64
        var lastModified: Date
    }

    /// The objects to delete: archives under `PREFIX/packs/` and `PREFIX/deltas/` that no protected key
    /// is, none of the last `keep` releases of `log` names, and whose replacement went live at least `grace`
    /// before `now`. An object no release names (left by an interrupted run, or named by a manifest from
    /// before the log) counts from the later of its own upload and the log's first release: any manifest
    /// that named it was replaced by then.
    /// - Parameters:
    ///   - log: The releases, the one being published last.
    ///   - protected: Keys never deleted: what the manifest being replaced names.
    static func pruning(
        _ listed: [ListedObject],
        log: ReleaseLog,
        protected: Set<String>,
        prefix: String,
        keep: Int,
        grace: Duration,
        now: Date
    ) -> [Step] {
        let kept = log.releases.suffix(max(keep, 1)).reduce(into: protected) { $0.formUnion($1.keys) }
        let archives = [key("packs/", prefix: prefix), key("deltas/", prefix: prefix)]
        var steps: [Step] = []
        for object in listed where archives.contains(where: object.key.hasPrefix) && !kept.contains(object.key) {
            let lastNaming = log.releases.lastIndex { $0.keys.contains(object.key) }
            let replacedAt =
                lastNaming.map { log.releases[min($0 + 1, log.releases.count - 1)].publishedAt }
                ?? max(object.lastModified, log.releases.first?.publishedAt ?? object.lastModified)
            guard now.timeIntervalSince(replacedAt) >= grace.inSeconds else { continue }
            let name = object.key.split(separator: "/").last.map(String.init) ?? ""
            steps.append(
                Step(
                    kind: object.key.hasPrefix(archives[1]) ? .delta : .pack,
                    key: object.key,
                    bytes: object.size,
                    sha256: String(name.suffix(64)),
                    action: .delete
                )
            )
        }
        return steps
    }

    /// The keys a manifest names, for a manifest whose URLs are relative or start with `baseURL`.
    /// - Returns: `nil` when a URL is neither: which object it names cannot be told, so nothing may be deleted.
    static func keys(namedBy manifest: DownloadManifest, prefix: String, baseURL: String?) -> Set<String>? {
        var keys: Set<String> = []
        let urls = manifest.assetPacks.flatMap { [$0.url] + ($0.deltas ?? []).map(\.url) }
        for url in urls {
            if let baseURL, url.hasPrefix(baseURL) {
                keys.insert(key(String(url.dropFirst(baseURL.count)), prefix: prefix))
            } else if URL(string: url)?.scheme == nil, !url.hasPrefix("/") {
                keys.insert(key(url, prefix: prefix))
            } else {
                return nil
            }
        }
        return keys
    }

    /// What pruning will do: the release log with this publish's release added (and, for a first log, the
    /// live manifest's before it), and the deletions.
    /// - Returns: `nil` when the live manifest names objects that cannot be told (a URL outside the base):
    ///   nothing is deleted then, and `log` says why.
    static func prunePlan(
        _ bucket: S3Bucket,
        prefix: String,
        objects: [PlannedObject],
        manifest: PlannedObject,
        options: Options,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> (log: ReleaseLog, deletions: [Step])? {
        let logKey = key("releases.json", prefix: prefix)
        var releases = ReleaseLog()
        if let data = try await bucket.get(logKey) {
            do {
                releases = try ReleaseLog.decode(data)
            } catch {
                throw PublishError(
                    code: .refused,
                    message: "\(bucket.name(logKey)) is not a release log publish wrote (\(error))",
                    fix: "delete it; old versions are then kept until it has --keep releases again"
                )
            }
        }
        let now = Date()
        var protected: Set<String> = []
        let base = options.downloadBaseURL.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        if let live = try await bucket.get(manifest.step.key) {
            guard let decoded = try? DownloadManifest.decode(live, source: bucket.name(manifest.step.key)),
                let named = keys(namedBy: decoded, prefix: prefix, baseURL: base)
            else {
                log(
                    "warning: nothing is deleted: \(bucket.name(manifest.step.key)) names objects that are not under "
                        + (base ?? "relative URLs")
                )
                return nil
            }
            protected = named
            if releases.releases.isEmpty {
                releases = releases.adding(
                    .init(publishedAt: now, manifestSHA256: FileDigest.sha256(of: live), keys: named.sorted())
                )
            }
        }
        releases = releases.adding(
            .init(publishedAt: now, manifestSHA256: manifest.step.sha256, keys: objects.map(\.step.key).sorted())
        )
        let listed = try await bucket.list(prefix: prefix.isEmpty ? "" : prefix + "/")
        let deletions = pruning(
            listed,
            log: releases,
            protected: protected,
            prefix: prefix,
            keep: options.keep ?? 1,
            grace: options.grace,
            now: now
        )
        return (releases, deletions)
    }

    /// Writes the release log, then deletes `deletions`.
    /// - Parameter wentLive: The manifest was uploaded just now: its release is dated now, not when the
    ///   plan was made (a long upload would otherwise shorten the grace of what it replaced).
    static func prune(
        _ plan: (log: ReleaseLog, deletions: [Step]),
        in bucket: S3Bucket,
        prefix: String,
        wentLive: Bool,
        jobs: Int,
        log: @escaping @Sendable (String) -> Void
    ) async throws {
        var releases = plan.log
        if wentLive, !releases.releases.isEmpty { releases.releases[releases.releases.count - 1].publishedAt = Date() }
        let data = try releases.encoded()
        try await bucket.put(
            key("releases.json", prefix: prefix),
            .data(data, sha256: FileDigest.sha256(of: data)),
            headers: [("content-type", "application/json"), ("cache-control", "no-store")]
        )
        _ = try await concurrently(plan.deletions, jobs: jobs) { step in
            try await bucket.delete(step.key)
            log("deleted \(bucket.name(step.key)) (\(ByteFormat.string(step.bytes))), an old version")
        }
    }
}

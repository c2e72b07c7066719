import AssetPackFormat
import Foundation
import SystemPackage

/// What `ba-package download-manifest create` and `update` do: a self-hosted download manifest for one
/// platform, made from pack archives (`.aar`) and a base URL, each pack at base URL + "/" + ID.
///
/// Entries carry Apple's fields (`id`, `url`, `version`, `downloadSize` = the archive's byte size,
/// `downloadPolicy`, `host`, `userInfo`) and ours, as `export` writes them (`sha256`, `installSize`,
/// `fileCount`, `compression`, `platforms`, `language`); they are sorted by ID.
public enum SelfHostedManifest {
    /// A manifest made or updated, and what to tell the user.
    public struct Result: Sendable {
        /// The manifest.
        public var manifest: DownloadManifest
        /// What was done to each pack handed in, one line each (`Alpha: version 3 → 4 (archive changed)`).
        public var changes: [String] = []
        /// Archives left out (for another platform), or read under a name taken from their file.
        public var warnings: [String] = []
    }

    /// Refuses a manifest path that does not end in `.json`, as Apple's tool does (`path extension isn’t
    /// “json”`, exit 64).
    /// - Throws: ``AssetPackFormatError`` with code `.invalidOption`.
    public static func checkManifestPath(_ path: FilePath) throws {
        guard path.extension?.lowercased() != "json" else { return }
        throw AssetPackFormatError(
            code: .invalidOption,
            message: "\(path): path extension isn’t “json”. Fix: name the manifest e.g. manifest.json"
        )
    }

    /// Refuses a base URL that is not http or https with a host.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidOption`.
    public static func checkBaseURL(_ text: String) throws {
        let problem = URL(string: text).map { DownloadManifest.fetchProblem(with: $0) } ?? "does not parse as a URL"
        guard let problem else { return }
        throw AssetPackFormatError(
            code: .invalidOption,
            message: "--download-base-url \(text) \(problem); give the URL the packs are served under, e.g. "
                + "https://cdn.example.com/packs"
        )
    }

    /// Makes a manifest of `archives` for `platform`, as `download-manifest create` does.
    /// - Parameters:
    ///   - archives: Pack archives, each read whole and checked against the digests it carries.
    ///   - versions: One version per archive, by position; `nil` gives each version 0 (as Apple's tool does
    ///     when `--asset-pack-versions` is left out).
    ///   - platform: The platform (see ``DownloadManifest/platform(named:)``): an archive whose manifest lists
    ///     other platforms only is left out, with a warning.
    ///   - baseURL: The URL the packs are served under.
    /// - Returns: The manifest, and warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidOption` (a count of versions that does not match,
    ///   a negative version, a bad base URL), `.duplicatePackID` (two archives of one pack), or what reading an
    ///   archive throws.
    public static func create(
        archives: [FilePath],
        versions: [Int]?,
        platform: String,
        baseURL: String
    ) throws -> Result {
        if let versions {
            guard versions.count == archives.count else {
                throw AssetPackFormatError(
                    code: .invalidOption,
                    message:
                        "--asset-pack-versions gives \(versions.count) version(s) for \(archives.count) archive(s); "
                        + "give one per archive, in their order"
                )
            }
            if let bad = versions.first(where: { $0 < 0 }) {
                throw AssetPackFormatError(
                    code: .invalidOption,
                    message: "--asset-pack-versions \(bad): a version is 0 or more"
                )
            }
        }
        try checkBaseURL(baseURL)
        let read = try readArchives(archives, versions: versions ?? archives.map { _ in 0 }, platform: platform)
        var result = Result(manifest: DownloadManifest(assetPacks: []), warnings: read.warnings)
        result.manifest.assetPacks = read.packs.map { entry($0, baseURL: baseURL) }.sorted { $0.id < $1.id }
        result.changes = read.packs.sorted { $0.id < $1.id }.map { "\($0.id): version \($0.version)" }
        return result
    }

    /// Updates a published manifest with `archives`, as `download-manifest update` does (as third-party
    /// scripts use it: "increments exactly the packs it is handed, leaving the rest of the manifest alone").
    ///
    /// A pack handed in whose archive differs from the one the manifest describes goes up one version; one
    /// whose archive is the same (same SHA-256 and size) keeps its entry, so that running an update twice
    /// changes nothing; an entry without a SHA-256 (one of Apple's) is bumped, as Apple's tool bumps whatever
    /// it is handed. A pack the manifest does not list is added at version 0. Packs not handed in keep their
    /// entries.
    /// - Parameters:
    ///   - published: The manifest as published.
    ///   - archives: Pack archives of new or changed packs.
    ///   - platform: As for ``create(archives:versions:platform:baseURL:)``.
    ///   - baseURL: The URL the packs handed in are served under.
    /// - Returns: The manifest, what happened to each pack, and warnings.
    /// - Throws: As ``create(archives:versions:platform:baseURL:)``, and `.invalidOption` for a version that
    ///   cannot go up.
    public static func update(
        _ published: DownloadManifest,
        archives: [FilePath],
        platform: String,
        baseURL: String
    ) throws -> Result {
        try checkBaseURL(baseURL)
        let read = try readArchives(archives, versions: archives.map { _ in 0 }, platform: platform)
        var entries = Dictionary(published.assetPacks.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var result = Result(manifest: published, warnings: read.warnings)
        for var pack in read.packs.sorted(by: { $0.id < $1.id }) {
            guard let old = entries[pack.id] else {
                entries[pack.id] = entry(pack, baseURL: baseURL)
                result.changes.append("\(pack.id): added at version 0")
                continue
            }
            if old.sha256 == pack.sha256 && old.downloadSize == pack.downloadSize {
                result.changes.append("\(pack.id): version \(old.version) kept (archive unchanged)")
                continue
            }
            guard old.version < Int.max else {
                throw AssetPackFormatError(
                    code: .invalidOption,
                    message: "pack \(pack.id) is at version \(old.version), which cannot go up"
                )
            }
            pack.version = old.version + 1
            entries[pack.id] = entry(pack, baseURL: baseURL)
            result.changes.append(
                "\(pack.id): version \(old.version) → \(pack.version) "
                    + (old.sha256 == nil ? "(no digest published to compare)" : "(archive changed)")
            )
        }
        result.manifest.assetPacks = entries.values.sorted { $0.id < $1.id }
        return result
    }

    /// `download-manifest create` as a library call: ``create(archives:versions:platform:baseURL:)`` on a
    /// thread of its own (archives are read whole), then the manifest written to `path` atomically.
    /// - Throws: What ``create(archives:versions:platform:baseURL:)`` and ``write(_:to:)`` throw.
    public static func create(
        archives: [FilePath],
        versions: [Int]?,
        platform: String,
        baseURL: String,
        writingTo path: FilePath
    ) async throws -> Result {
        let result = try await BlockingIO.longJob {
            try create(archives: archives, versions: versions, platform: platform, baseURL: baseURL)
        }
        try await BlockingIO.longJob { try write(result.manifest, to: path) }
        return result
    }

    /// `download-manifest update` as a library call: the manifest at `path` read, carried forward by
    /// ``update(_:archives:platform:baseURL:)`` on a thread of its own, and written back atomically.
    /// - Throws: What ``load(_:)``, ``update(_:archives:platform:baseURL:)`` and ``write(_:to:)`` throw.
    public static func update(
        manifestAt path: FilePath,
        archives: [FilePath],
        platform: String,
        baseURL: String
    ) async throws -> Result {
        let result = try await BlockingIO.longJob {
            try update(try load(path), archives: archives, platform: platform, baseURL: baseURL)
        }
        try await BlockingIO.longJob { try write(result.manifest, to: path) }
        return result
    }

    /// Reads a published manifest from a file.
    /// - Throws: ``AssetPackFormatError`` with code `.notFound` (saying to create one), `.io`, `.invalidJSON`
    ///   or `.invalidManifest`.
    public static func load(_ path: FilePath) throws -> DownloadManifest {
        do {
            // As a client reads one: a FIFO or a device in its place is refused unread, its size bounded.
            return try DownloadManifest.read(file: path).manifest
        } catch let error as AssetPackFormatError where (error.cause as? Errno) == .noSuchFileOrDirectory {
            throw AssetPackFormatError(
                code: .notFound,
                message: "\(path) does not exist. Fix: make it with `ba-mock download-manifest create`, or give "
                    + "the published manifest's path"
            )
        }
    }

    /// Writes `manifest` to `path` atomically (temporary file, fsync, rename), making its folder if needed.
    /// - Throws: ``AssetPackFormatError`` with code `.io`.
    public static func write(_ manifest: DownloadManifest, to path: FilePath) throws {
        try AtomicFile.makeFolders(for: path, option: "-o")
        let bytes: Data
        do {
            bytes = try manifest.encoded()
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot encode the download manifest for \(path): \(error)")
        }
        try AtomicFile.write(bytes, to: path)
    }

    private static func entry(_ pack: ServedPack, baseURL: String) -> DownloadManifest.Entry {
        pack.manifestEntry(baseURL: baseURL, packFolder: "")
    }

    /// Reads each archive (its ID, policy and platforms from the manifest it carries), leaving out those for
    /// other platforms, and refuses two archives of one pack.
    private static func readArchives(
        _ archives: [FilePath],
        versions: [Int],
        platform: String
    ) throws -> (packs: [ServedPack], warnings: [String]) {
        var packs: [ServedPack] = []
        var warnings: [String] = []
        var seen: [String: FilePath] = [:]
        for (path, version) in zip(archives, versions) {
            let (pack, warning) = try ServedPack.archive(at: path, version: version)
            if let warning { warnings.append(warning) }
            if let first = seen[pack.id] {
                throw AssetPackFormatError(
                    code: .duplicatePackID,
                    message: "\(first) and \(path) are both pack \(pack.id); give each pack once"
                )
            }
            seen[pack.id] = path
            guard pack.manifestEntry(baseURL: "").isFor(platform: platform) else {
                let platforms = pack.platforms?.joined(separator: ", ") ?? ""
                warnings.append("skipped \(path): pack \(pack.id) is for \(platforms), not \(platform)")
                continue
            }
            packs.append(pack)
        }
        return (packs, warnings)
    }
}

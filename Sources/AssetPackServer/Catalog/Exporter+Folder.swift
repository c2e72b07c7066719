import AssetPackFormat
import SystemPackage

/// `ba-mock export` as a library call: an asset folder in, its packs written as a static tree, a report out.
extension Exporter {
    /// What to export and how.
    public struct Options: Sendable {
        /// The asset folder.
        public var folder: FilePath
        /// The output folder (created if needed).
        public var out: FilePath
        /// Written before `assets/<id>` in pack URLs; `nil` writes relative URLs.
        public var baseURL: String?
        /// Packs published at a version whatever their content.
        public var pinnedVersions: [String: Int] = [:]
        /// Platforms to write a manifest of their own for, as ``DownloadManifest/platform(named:)`` spells them.
        public var platforms: [String] = []
        /// How packs are built.
        public var packOptions = PackBuildOptions()
        /// How many earlier versions each pack keeps a delta from.
        public var deltaDepth = 3
        /// Put each pack as a hard link to the archive built where the file system allows, else as a copy (see
        /// ``Exporter/export(_:to:baseURL:platforms:linking:)``).
        public var linking = true

        /// Options that export `folder` into `out` with the defaults of `ba-mock export`.
        public init(folder: FilePath, out: FilePath) {
            self.folder = folder
            self.out = out
        }
    }

    /// What an export of a folder did.
    public struct Report: Sendable {
        /// What was written.
        public var result: Result
        /// The packs exported, as published.
        public var snapshot: CatalogSnapshot
    }

    /// Builds the folder's packs (versions shared with `serve` through its `.ba-mock`, or a copy of it when
    /// another ba-mock holds it: the note goes to `log`, as do the catalog's warnings, before the export) and
    /// writes them into `options.out`.
    /// - Throws: What the catalog and ``export(_:to:baseURL:platforms:linking:)`` throw.
    public static func export(_ options: Options, log: @escaping @Sendable (String) -> Void) async throws -> Report {
        try await withBuiltPacks(
            folder: options.folder,
            packOptions: options.packOptions,
            pinnedVersions: options.pinnedVersions,
            deltaDepth: options.deltaDepth,
            log: log
        ) { snapshot in
            let result = try await BlockingIO.longJob {  // links or copies every archive
                try export(
                    snapshot,
                    to: options.out,
                    baseURL: options.baseURL,
                    platforms: options.platforms,
                    linking: options.linking
                )
            }
            return Report(result: result, snapshot: snapshot)
        }
    }

    /// Builds the folder's packs as `serve` publishes them (versions shared with it through the folder's
    /// `.ba-mock`, or a copy of it when another ba-mock holds it: the note goes to `log`, as do the catalog's
    /// warnings) and runs `body` with them, while their archives exist.
    /// - Throws: What the catalog and `body` throw.
    static func withBuiltPacks<T: Sendable>(
        folder root: FilePath,
        packOptions: PackBuildOptions,
        pinnedVersions: [String: Int],
        deltaDepth: Int,
        log: @escaping @Sendable (String) -> Void,
        _ body: (CatalogSnapshot) async throws -> T
    ) async throws -> T {
        try await AssetFolder.withClaimedState(root: root, log: log) { folder in
            let catalog = try await BlockingIO.shortCall {  // reads the state file
                try PackCatalog(
                    folder: folder,
                    options: packOptions,
                    pinnedVersions: pinnedVersions,
                    deltaDepth: deltaDepth,
                    log: log
                )
            }
            for warning in try await catalog.load() { log("warning: \(warning)") }
            return try await body(catalog.snapshot)
        }
    }
}

import AssetPackFormat
import Foundation
import Hummingbird
import Logging
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// What `ba-mock serve` is asked to serve and how, as one value: the executable parses its flags into it, and
/// tests build one directly.
public struct ServeOptions: Sendable {
    /// The asset folder; `nil` serves the archives alone (the catalog keeps its state in a scratch folder).
    public var folder: FilePath?
    /// Pack archives served byte for byte, each read and checked once at start.
    public var archives: [FilePath] = []
    /// The versions of `archives`, by position (1 for those past the end), as ba-serve takes them.
    public var archiveVersions: [Int] = []
    /// The address or host name to listen on.
    public var host = "127.0.0.1"
    /// The port; 0 lets the system choose.
    public var port = 8443
    /// Plain HTTP, PEM files, or a local CA.
    public var tls: TLSMode = .none
    /// Where a self-signed CA is kept; `nil`: ``TLSSetup/defaultFolder(environment:)``.
    public var tlsFolder: FilePath?
    /// The names a self-signed certificate is made for, besides `host`.
    public var tlsNames: [String] = []
    /// Archives kept on disk per pack, the published one included.
    public var archivesKept = 2
    /// Packs published at a version whatever their content.
    public var pinnedVersions: [String: Int] = [:]
    /// The base URL written into the manifest; `nil` derives it from each request's `Host` header.
    public var baseURL: String?
    /// How often the folder is checked for changes; `nil` turns live updates off.
    public var watchInterval: Duration? = .seconds(1)
    /// How long the folder must have been quiet before a change is built.
    public var settle: Duration = .seconds(1)
    /// How long a connection may accept no bytes of a response before it is closed.
    public var sendTimeout: Duration = .seconds(60)
    /// How long responses under way may take to finish after SIGINT or SIGTERM.
    public var shutdownGrace: Duration = .seconds(5)
    /// The most connections open at once.
    public var maxConnections = ServerConfiguration.defaultMaxConnections
    /// Serve the live dashboard at `/_mock/`.
    public var dashboard = true
    /// Request lines as JSON objects.
    public var jsonLog = false
    /// The faults to inject.
    public var faults: [FaultRule] = []
    /// The seed of faults with `p=`; `nil`: a random one (``MockServer/faults`` tells which).
    public var seed: UInt64?
    /// How packs are built.
    public var packOptions = PackBuildOptions()
    /// How many earlier versions each pack keeps a delta from.
    public var deltaDepth = 3

    /// Options that serve `folder` (`nil`: archives only) with the defaults of `ba-mock serve`.
    public init(folder: FilePath?, archives: [FilePath] = []) {
        self.folder = folder
        self.archives = archives
    }
}

/// `ba-mock serve` as a library call, built as Hummingbird's `buildApplication` is: ``prepare(_:folder:log:)``
/// reads the archives, checks the manifests, the pins and the faults, and makes the TLS material; then
/// ``application(requestLog:onListening:onFirstBuild:)`` builds the server, whose packs are built once it listens.
public struct MockServer: Sendable {
    /// What was asked.
    public let options: ServeOptions
    /// The packs served (built once the server listens).
    public let catalog: PackCatalog
    /// The manifests' warnings, found before the build.
    public let manifestWarnings: [String]
    /// The TLS material, or `nil` for plain HTTP.
    public let tls: TLSSetup?
    /// The faults and the seed they draw from.
    public let faults: FaultPlan
    /// The token `/_mock/` asks for off loopback, or `nil`.
    public let token: String?

    /// Claims the folder's state (or works beside a copy of it, when another ba-mock holds it; the note says
    /// so on `log`), prepares the server and hands it to `body`; the copy aside, and the scratch folder of an
    /// archives-only server, are removed afterwards, whatever `body` does.
    /// - Throws: What ``prepare(_:folder:log:)`` and `body` throw; ``AssetPackServerError`` with code `.state`
    ///   when no scratch folder can be made.
    public static func with<T: Sendable>(
        _ options: ServeOptions,
        log: @escaping @Sendable (String) -> Void,
        _ body: (MockServer) async throws -> T
    ) async throws -> T {
        let scratch = options.folder == nil ? try makeScratchFolder() : nil
        defer { if let scratch { _ = try? FileManager.default.removeItem(atPath: scratch.string) } }
        let root = options.folder ?? scratch ?? "."
        return try await AssetFolder.withClaimedState(root: root, mayBeEmpty: options.folder == nil, log: log) {
            try await body(try await prepare(options, folder: $0, log: log))
        }
    }

    /// Reads the archives, makes the catalog (its state read), checks the manifests and that every pin and
    /// fault names a pack, and makes the TLS material; warnings and notes go to `log`.
    /// - Throws: ``AssetPackServerError`` with code `.invalidOption` when two archives are one pack or a pin or
    ///   a fault names no pack; what reading an archive, the manifests or the TLS files throws.
    public static func prepare(
        _ options: ServeOptions,
        folder: AssetFolder,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> MockServer {
        let archives = try await readArchives(options.archives, versions: options.archiveVersions, log: log)
        let catalog = try await BlockingIO.shortCall {  // reads the state file
            try PackCatalog(
                folder: folder,
                options: options.packOptions,
                pinnedVersions: options.pinnedVersions,
                archivesKept: options.archivesKept,
                deltaDepth: options.deltaDepth,
                archives: archives,
                log: log
            )
        }
        // Manifests are checked before listening; packs are built once the server listens.
        let (warnings, packIDs) = try await catalog.check()
        for warning in warnings { log("warning: \(warning)") }
        try NamedPacks.check(
            pins: Array(options.pinnedVersions.keys),
            faults: options.faults.compactMap(\.pack),
            known: packIDs.union(await catalog.knownPackIDs)
        )
        let tls = try await BlockingIO.longJob {  // may generate keys; reads and writes PEM files
            try TLSSetup.make(
                mode: options.tls,
                host: options.host,
                names: options.tlsNames,
                folder: options.tlsFolder ?? TLSSetup.defaultFolder(),
                legacyFolder: folder.stateFolder.appending("tls"),
                assetFolder: folder.root
            )
        }
        for note in tls?.notes ?? [] { log(note) }
        return MockServer(
            options: options,
            catalog: catalog,
            manifestWarnings: warnings,
            tls: tls,
            faults: FaultPlan(rules: options.faults, seed: options.seed ?? UInt64.random(in: 0...UInt64.max)),
            token: ServerConfiguration.token(forHost: options.host)
        )
    }

    /// The archives given as files, each read once and checked, at `versions` by position (1 past the end);
    /// their warnings said on `log`. (`serve` and `publish` take archives as ba-serve does.)
    /// - Throws: ``AssetPackServerError`` with code `.invalidOption` when two archives are one pack, and what
    ///   reading one throws.
    static func readArchives(
        _ paths: [FilePath],
        versions: [Int],
        log: @Sendable (String) -> Void
    ) async throws -> [ServedPack] {
        let archives = try await BlockingIO.longJob {
            try paths.enumerated().map { number, path in
                try ServedPack.archive(at: path, version: number < versions.count ? versions[number] : 1)
            }
        }
        for warning in archives.compactMap(\.warning) { log("warning: \(warning)") }
        if let twice = Dictionary(grouping: archives.map(\.pack), by: \.id).first(where: { $0.value.count > 1 }) {
            throw AssetPackServerError(
                code: .invalidOption,
                message: "\(twice.value.map(\.archive.string).joined(separator: " and ")) are both pack "
                    + "\(twice.key); serve one"
            )
        }
        return archives.map(\.pack)
    }

    /// The server over the catalog, not yet running; run it with ``run(_:)`` or in a service group.
    /// - Parameters:
    ///   - requestLog: One line per request once its response is over (called on an event loop: it must not
    ///     block); `nil` logs none.
    ///   - log: Rebuilds, removals and problems found while serving.
    ///   - onListening: Told the URL clients use once the server listens (the real port when 0 was asked).
    ///   - onFirstBuild: Told how the first build of the packs went.
    /// - Throws: When the TLS configuration is refused.
    public func application(
        requestLog: (@Sendable (String) -> Void)?,
        log: @escaping @Sendable (String) -> Void,
        onListening: @escaping @Sendable (String) -> Void,
        onFirstBuild: @escaping @Sendable (Result<CatalogReport, any Error>) -> Void
    ) throws -> some ApplicationProtocol {
        var configuration = ServerConfiguration(
            host: options.host,
            port: options.port,
            baseURL: options.baseURL,
            jsonLog: options.jsonLog,
            watchInterval: options.watchInterval,
            requestLog: requestLog,
            eventLog: log,
            faults: faults,
            sendTimeout: options.sendTimeout,
            maxConnections: options.maxConnections,
            onFirstBuild: onFirstBuild
        )
        configuration.settle = options.settle
        configuration.dashboard = options.dashboard
        configuration.controlToken = token
        let (host, publicName) = (options.host, options.tlsNames.first)
        return try buildApplication(catalog: catalog, configuration: configuration, tls: tls) { listening in
            onListening(ServerConfiguration.publicURL(listening: listening, host: host, publicName: publicName))
        }
    }

    /// Runs `app` until SIGINT or SIGTERM, then lets responses under way finish for the options' grace.
    /// - Throws: ``AssetPackServerError`` naming the address when the server cannot listen or fails.
    public func run(_ app: some ApplicationProtocol) async throws {
        var logger = Logger(label: "ba-mock")
        logger.logLevel = .warning
        do {
            try await runUntilSignalled(app, grace: options.shutdownGrace, logger: logger)
        } catch {
            throw AssetPackServerError.listening(error, host: options.host, port: options.port)
        }
    }

    /// A new, empty, private folder under the temporary folder.
    private static func makeScratchFolder() throws -> FilePath {
        var template = Array((NSTemporaryDirectory() + "/ba-mock-serve-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ $0.baseAddress.flatMap(mkdtemp) }) else {
            throw AssetPackServerError(code: .state, message: "cannot create a folder in \(NSTemporaryDirectory())")
        }
        return FilePath(String(cString: made))
    }
}

import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import Hummingbird
import Logging
import Synchronization
import SystemPackage

extension Serve {
    /// Serves `assetFolder` (its state claimed or aside) and the archives at `archivePaths` until a signal.
    func serve(_ assetFolder: AssetFolder, given: FilePath?, archivePaths: [FilePath], note: String?) async throws {
        let events = OutputQueue(.standardError, what: "messages")
        defer { events.flush() }  // what was queued is written before an error (or the end) is printed
        if let note { events.writeLine(note) }
        let archives = try await readArchives(archivePaths, events: events)
        let catalog = try await makeCatalog(assetFolder, archives: archives, events: events)
        // Manifests are checked before listening; packs are built once the server listens, each served as
        // soon as it is built.
        let (warnings, rules) = try await check(catalog, events: events)
        let tls = try await makeTLS(for: assetFolder, events: events)
        let plan = FaultPlan(rules: rules, seed: seed ?? UInt64.random(in: 0...UInt64.max))
        if !plan.rules.isEmpty {
            events.writeLine("faults: \(plan.rules.map(\.description).joined(separator: "; ")) (seed \(plan.seed))")
        }
        // Request lines go through a queue drained by a thread of its own: a slow reader of stdout drops
        // lines (and says how many), it never slows serving.
        let requestLines = OutputQueue(.standardOutput, what: "request lines")
        // The first line on stdout is the URL: lines of requests answered before it (packs built before, served
        // while the folder is checked) wait for it, the first 1 000 of them.
        let early = EarlyLines()
        let servedURL = Mutex("")  // the URL printed first, for the line after the table
        let start = StartMessages(
            events: events,
            catalog: catalog,
            manifestWarnings: warnings,
            caFile: tls?.caFile,
            dashboard: dashboard,
            token: ServerConfiguration.token(forHost: host),
            host: host,
            jsonLog: jsonLog,
            served: ((given.map { [$0.string] } ?? []) + archivePaths.map(\.string)).joined(separator: ", "),
            folder: assetFolder.root
        )
        let configuration = serverConfiguration(
            faults: plan,
            events: events,
            requestLog: quiet ? nil : { @Sendable line in if !early.hold(line) { requestLines.writeLine(line) } },
            onFirstBuild: { built in
                let url = servedURL.withLock { $0 }
                Console.out(url)
                defer { early.release { requestLines.writeLine($0) } }
                start.firstBuild(built, url: url)
            },
            token: start.token
        )
        let (host, publicName, archiveCount) = (self.host, tlsName.first, archives.count)
        let app = try buildApplication(catalog: catalog, configuration: configuration, tls: tls) { listening in
            let url = ServerConfiguration.publicURL(listening: listening, host: host, publicName: publicName)
            servedURL.withLock { $0 = url }
            start.listening(at: url, archiveCount: archiveCount)
        }
        do {
            var logger = Logger(label: "ba-mock")
            logger.logLevel = .warning
            try await runUntilSignalled(app, grace: .milliseconds(Int64(shutdownGrace * 1000)), logger: logger)
            requestLines.flush()
        } catch {
            throw AssetPackServerError.listening(error, host: host, port: port)
        }
    }

    /// The archives given as files, each read once and checked; their warnings said on `events`.
    /// - Throws: What reading an archive throws; a usage error when two are the same pack.
    private func readArchives(_ paths: [FilePath], events: OutputQueue) async throws -> [(
        pack: ServedPack, warning: String?
    )] {
        let versions = assetPackVersions
        let archives = try await BlockingIO.longJob {
            try paths.enumerated().map { number, path in
                try ServedPack.archive(at: path, version: number < versions.count ? versions[number] : 1)
            }
        }
        for warning in archives.compactMap(\.warning) { events.writeLine("warning: \(warning)") }
        if let twice = Dictionary(grouping: archives.map(\.pack), by: \.id).first(where: { $0.value.count > 1 }) {
            throw ValidationError(
                "\(twice.value.map(\.archive.string).joined(separator: " and ")) are both pack \(twice.key); serve one"
            )
        }
        return archives
    }

    /// The catalog of the folder and the archives, its state read (a short call: it reads the state file).
    private func makeCatalog(
        _ folder: AssetFolder,
        archives: [(pack: ServedPack, warning: String?)],
        events: OutputQueue
    )
        async throws -> PackCatalog
    {
        let (options, pins, kept, depth) = (
            build.packOptions, try PackVersionPins.parse(packVersions), keepArchives, deltas.deltaDepth
        )
        return try await BlockingIO.shortCall {
            try PackCatalog(
                folder: folder,
                options: options,
                pinnedVersions: pins,
                archivesKept: kept,
                deltaDepth: depth,
                archives: archives.map(\.pack),
                log: { events.writeLine($0) }
            )
        }
    }

    /// Checks the manifests (their warnings said on `events`) and that every pin and fault names a pack.
    /// - Returns: The manifests' warnings, and the fault rules.
    private func check(_ catalog: PackCatalog, events: OutputQueue) async throws -> ([String], [FaultRule]) {
        let (warnings, packIDs) = try await catalog.check()
        for warning in warnings { events.writeLine("warning: \(warning)") }
        let rules = try faults.map(FaultRule.init(parsing:))
        do {
            try NamedPacks.check(
                pins: Array(try PackVersionPins.parse(packVersions).keys),
                faults: rules.compactMap(\.pack),
                known: packIDs.union(await catalog.knownPackIDs)
            )
        } catch let error as AssetPackServerError {
            throw ValidationError(error.message)
        }
        return (warnings, rules)
    }

    /// The TLS setup the options ask for (`nil`: plain HTTP), its notes said on `events`; a long job: it may
    /// generate keys, and reads and writes PEM files.
    private func makeTLS(for folder: AssetFolder, events: OutputQueue) async throws -> TLSSetup? {
        let mode: TLSMode =
            if let tlsCert, let tlsKey { .files(certificate: tlsCert, key: tlsKey) } else if tlsSelfSigned {
                .selfSigned
            } else { .none }
        let (host, names, tlsFolder) = (host, tlsName, tlsDir ?? TLSSetup.defaultFolder())
        let tls = try await BlockingIO.longJob {
            try TLSSetup.make(
                mode: mode,
                host: host,
                names: names,
                folder: tlsFolder,
                legacyFolder: folder.stateFolder.appending("tls"),
                assetFolder: folder.root
            )
        }
        for note in tls?.notes ?? [] { events.writeLine(note) }
        return tls
    }

    /// The server's configuration from the options.
    private func serverConfiguration(
        faults: FaultPlan,
        events: OutputQueue,
        requestLog: (@Sendable (String) -> Void)?,
        onFirstBuild: @escaping @Sendable (Result<CatalogReport, any Error>) -> Void,
        token: String?
    ) -> ServerConfiguration {
        var configuration = ServerConfiguration(
            host: host,
            port: port,
            baseURL: baseURL,
            jsonLog: jsonLog,
            watchInterval: watchInterval > 0 ? .milliseconds(Int64(watchInterval * 1000)) : nil,
            requestLog: requestLog,
            eventLog: { events.writeLine($0) },
            faults: faults,
            sendTimeout: .milliseconds(Int64(sendTimeout * 1000)),
            maxConnections: maxConnections ?? ServerConfiguration.defaultMaxConnections,
            onFirstBuild: onFirstBuild
        )
        configuration.settle = .milliseconds(Int64(settle * 1000))
        configuration.dashboard = dashboard
        configuration.controlToken = token
        return configuration
    }
}

/// What `serve` says as it starts: once it listens (on stderr), and once the first build is over (the URL,
/// the table and the manifest's address on stdout; problems, TLS, dashboard and the serving line on stderr).
struct StartMessages: Sendable {
    let events: OutputQueue
    let catalog: PackCatalog
    /// The manifests' warnings, said before the build; the build's own are said after it.
    let manifestWarnings: [String]
    let caFile: FilePath?
    let dashboard: Bool
    let token: String?
    let host: String
    let jsonLog: Bool
    /// What is served, as the last line names it.
    let served: String
    let folder: FilePath

    /// Said once the server listens: what is still building, or that packs built before are served.
    func listening(at url: String, archiveCount: Int) {
        let (pending, built) = (catalog.snapshot.building.count, catalog.snapshot.packs.count - archiveCount)
        if pending > 0 {
            events.writeLine(
                "listening at \(url); building \(ByteFormat.count(pending, "pack")), each served as soon as it is "
                    + "built (503 with Retry-After until then)"
            )
        } else if built > 0 {
            // A restart: said at once, as a first start says it, while the folder is looked at again.
            events.writeLine(
                "listening at \(url); \(ByteFormat.count(built, "pack")) built before, served while the folder is "
                    + "checked for changes (the URL comes on stdout once it is)"
            )
        }
    }

    /// Said once every pack is built (the URL, already on stdout, comes first, as scripts expect; the server
    /// listened and served each pack as it was built before, as stderr said).
    func firstBuild(_ built: Result<CatalogReport, any Error>, url: String) {
        if case .failure(let error) = built {
            events.writeLine("error: cannot build the packs of \(folder): \(error)")
        }
        for problem in (try? built.get())?.problems ?? [] {
            events.writeLine("error: \(problem) (that pack is not published; fix it and save)")
        }
        // What the build found beyond the manifests' warnings, said before it (a pin over new content).
        for warning in (try? built.get())?.warnings ?? [] where !manifestWarnings.contains(warning) {
            events.writeLine("warning: \(warning)")
        }
        if !jsonLog {
            Console.out(PackTable.render(catalog.snapshot))
            Console.out("manifest: \(url)/manifest")
        }
        if let caFile {
            events.writeLine(
                "TLS: trust the CA in \(caFile): curl --cacert \(caFile) \(url)/manifest, or ba-sync --ca-cert \(caFile)"
            )
        }
        if dashboard {
            let page = ServerConfiguration.dashboardURL(served: url, host: host, token: token)
            events.writeLine("dashboard: \(page) (from this machine only)")
        } else if let token {
            events.writeLine("control token: \(token) (send X-BA-Mock-Token: \(token) to /_mock/)")
        }
        events.writeLine("serving \(served) at \(url); Ctrl-C stops")
    }
}

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
    /// Serves what `server` was prepared with until a signal, saying on stdout and stderr what it serves.
    func serve(_ server: MockServer, events: OutputQueue) async throws {
        let plan = server.faults
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
        let options = server.options
        let start = StartMessages(
            events: events,
            catalog: server.catalog,
            manifestWarnings: server.manifestWarnings,
            caFile: server.tls?.caFile,
            dashboard: options.dashboard,
            token: server.token,
            host: options.host,
            jsonLog: options.jsonLog,
            served: ((options.folder.map { [$0.string] } ?? []) + options.archives.map(\.string))
                .joined(separator: ", "),
            folder: server.catalog.folder.root
        )
        let archiveCount = options.archives.count
        let app = try server.application(
            requestLog: quiet ? nil : { @Sendable line in if !early.hold(line) { requestLines.writeLine(line) } },
            log: { events.writeLine($0) },
            onListening: { url in
                servedURL.withLock { $0 = url }
                start.listening(at: url, archiveCount: archiveCount)
            },
            onFirstBuild: { built in
                let url = servedURL.withLock { $0 }
                Console.out(url)
                defer { early.release { requestLines.writeLine($0) } }
                start.firstBuild(built, url: url)
            }
        )
        try await server.run(app)
        requestLines.flush()
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

import AssetPackFormat
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
    import Glibc
#endif

/// Builds the router: request log outermost, JSON errors inside it, then the pack routes and the
/// loopback-only control endpoint.
func buildRouter(
    catalog: PackCatalog,
    configuration: ServerConfiguration,
    scheme: String,
    sendfile: SendfileTransport?,
    requestLog: RequestLogMiddleware?,
    board: DownloadBoard?,
    smallPacks: SmallPackCache
) -> Router<MockRequestContext> {
    let router = Router(context: MockRequestContext.self, options: .autoGenerateHeadEndpoints)
    if let requestLog { router.add(middleware: requestLog) }
    router.add(middleware: JSONErrorMiddleware())
    PackController(
        catalog: catalog,
        baseURL: configuration.baseURL,
        scheme: scheme,
        faults: configuration.faults,
        smallPacks: smallPacks,
        sendfile: sendfile
    ).addRoutes(to: router)
    ControlController(
        catalog: catalog,
        faults: configuration.faults,
        bodyTimeout: TimeAmount(configuration.controlBodyTimeout),
        token: configuration.controlToken,
        dashboard: board.map { DashboardController(catalog: catalog, faults: configuration.faults, board: $0) }
    ).addRoutes(to: router)
    return router
}

/// Builds the `ba-mock` server application over a catalog that has been refreshed once.
///
/// Run it with `runService()` (graceful shutdown on SIGINT/SIGTERM) or inside a service group.
/// - Parameters:
///   - catalog: The packs to serve; watched for changes when `configuration.watchInterval` is set.
///   - configuration: Address, logging and live-update settings.
///   - tls: TLS material, or `nil` for plain HTTP.
///   - onRunning: Called once listening, with the URL clients use (the real port when port 0 was asked).
/// - Returns: The application.
/// - Throws: When the TLS configuration is refused.
public func buildApplication(
    catalog: PackCatalog,
    configuration: ServerConfiguration,
    tls: TLSSetup? = nil,
    onRunning: @escaping @Sendable (String) async -> Void = { _ in }
) throws -> some ApplicationProtocol {
    let scheme = tls == nil ? "http" : "https"
    // Pack bodies go out by sendfile on plain HTTP; TLS has to encrypt them, so they go through buffers.
    let sendfile = tls == nil ? SendfileTransport() : nil
    // The request log and the dashboard count what each connection's socket took; without them nothing is.
    let tally = configuration.requestLog == nil && !configuration.dashboard ? nil : ResponseTally()
    let board = configuration.dashboard ? DownloadBoard() : nil
    let requestLog = tally.map {
        RequestLogMiddleware(json: configuration.jsonLog, tally: $0, write: configuration.requestLog, board: board)
    }
    let smallPacks = SmallPackCache()
    let router = buildRouter(
        catalog: catalog,
        configuration: configuration,
        scheme: scheme,
        sendfile: sendfile,
        requestLog: requestLog,
        board: board,
        smallPacks: smallPacks
    )
    let serverName = "ba-mock"
    let direct = DirectPackRoute(
        catalog: catalog,
        packs: smallPacks,
        faults: configuration.faults,
        recorder: requestLog,
        serverName: serverName
    )
    var logger = Logger(label: "ba-mock")
    logger.logLevel = .warning
    // A connection whose next request head takes longer than requestHeadTimeout after the last answer is
    // closed (an idle one too), so is one whose request body stops for 30 s, and one that accepts no bytes of
    // a response for sendTimeout (slow or stuck clients do not pile up); request heads are bounded by NIO's
    // decoder (80 KiB of headers, 1000 fields). Hummingbird's own idle timeout is off: it does not see the
    // answers of DirectPackResponder, and would close a connection busy with them after 30 s.
    let (headTimeout, sendTimeout) = (
        TimeAmount(configuration.requestHeadTimeout), TimeAmount(configuration.sendTimeout)
    )
    let eventLog = configuration.eventLog
    let tracker = ConnectionTracker(limit: configuration.maxConnections) { [limit = configuration.maxConnections] in
        eventLog("refused \($0) connection(s): \(limit) are open, the --max-connections cap")
    }
    // Made once: the handlers below are made anew for each connection, and the warning is said once.
    let http1Codec = (configuration.locateHTTP1Codec, HTTP1HandlerInstaller.MissingCodecWarning(log: eventLog))
    let http1: HTTPServerBuilder = .http1(
        configuration: .init(
            additionalChannelHandlers: connectionHandlers(
                tracker: tracker,
                headTimeout: headTimeout,
                sendTimeout: sendTimeout,
                sendfile: sendfile,
                tally: tally,
                http1: http1Codec,
                direct: direct
            ),
            idleTimeout: nil
        )
    )
    let server: HTTPServerBuilder = try tls.map { try .tls(http1, tlsConfiguration: $0.configuration) } ?? http1
    // First in line, so last to be told to shut down; cancelled with the rest when the grace runs out, it
    // closes what is still open.
    var services: [any Service] = [ConnectionCloser(tracker: tracker)]
    // The first build waits for the server to listen: the URL is printed first, and packs are served as built.
    let (listening, listened) = AsyncStream<Void>.makeStream()
    if configuration.watchInterval != nil || configuration.onFirstBuild != nil {
        services.append(
            CatalogWatcher(
                catalog: catalog,
                interval: configuration.watchInterval,
                settle: configuration.settle,
                log: configuration.eventLog,
                firstBuild: configuration.onFirstBuild.map { ($0, listening) }
            )
        )
    }
    let host = configuration.host
    return Application(
        router: router,
        server: server,
        configuration: .init(address: .hostname(host, port: configuration.port), serverName: serverName),
        services: services,
        onServerRunning: { channel in
            let port = channel.localAddress?.port ?? configuration.port
            let printableHost = host.contains(":") ? "[\(host)]" : host
            await onRunning("\(scheme)://\(printableHost):\(port)")
            listened.finish()
        },
        logger: logger
    )
}

/// The handlers of one connection, made anew for each (they hold its state); the connection is counted
/// first, so that one past the cap is closed before anything else runs for it.
private func connectionHandlers(
    tracker: ConnectionTracker,
    headTimeout: TimeAmount,
    sendTimeout: TimeAmount,
    sendfile: SendfileTransport?,
    tally: ResponseTally?,
    http1: (locate: HTTP1HandlerInstaller.Locate, warning: HTTP1HandlerInstaller.MissingCodecWarning),
    direct: DirectPackRoute
) -> [any RemovableChannelHandler] {
    var handlers: [any RemovableChannelHandler] = [
        ConnectionTrackingHandler(tracker: tracker),
        RequestHeadTimeoutHandler(timeout: headTimeout), SendTimeoutHandler(timeout: sendTimeout),
        ConnectionCloseHandler(),
        HTTP1HandlerInstaller(sendfile: sendfile, locateCodec: http1.locate, warning: http1.warning, direct: direct),
    ]
    if let tally { handlers.append(ResponseTallyHandler(tally: tally, markers: sendfile != nil)) }
    return handlers
}

/// Builds the catalog once the server listens (when asked to), then refreshes it on a timer while the
/// server runs, and says what changed.
struct CatalogWatcher: Service {
    let catalog: PackCatalog
    let interval: Duration?
    let settle: Duration
    let log: @Sendable (String) -> Void
    /// Told how the first build went, and what says the server listens.
    let firstBuild: (report: @Sendable (Result<CatalogReport, any Error>) -> Void, listening: AsyncStream<Void>)?

    func run() async throws {
        let log = self.log
        if let firstBuild {
            let built: Result<CatalogReport, any Error>? = await cancelWhenGracefulShutdown {
                for await _ in firstBuild.listening {}
                guard !Task.isCancelled else { return nil }
                // A shutdown stops the pack being built within a buffer (a GiB pack outlasts any grace): what
                // was built before is saved.
                let built: Result<CatalogReport, any Error>
                do {
                    built = .success(try await catalog.refresh(reusingCheck: true))
                } catch {
                    built = .failure(error)
                }
                return Task.isCancelled ? nil : built
            }
            guard let built else { return }
            firstBuild.report(built)
        }
        guard let interval else {
            try? await gracefulShutdown()  // a service that returned would stop the server
            return
        }
        await cancelWhenGracefulShutdown {
            await catalog.watch(every: interval, settle: settle) { report in
                for change in report.changes {
                    if let from = change.from {
                        log("updated \(change.id): version \(from) -> \(change.to)")
                    } else {
                        log("added \(change.id): version \(change.to)")
                    }
                }
                for id in report.removed {
                    log("removed \(id): no manifest names it any more; clients will see it as obsolete")
                }
                for problem in report.problems {
                    log("error: \(problem) (the last good version stays published; GET /_mock/packs lists it)")
                }
                for file in report.fixed { log("fixed: \(file) has no error any more") }
                for warning in report.warnings { log("warning: \(warning)") }
            }
        }
    }
}

/// Runs a server until SIGINT or SIGTERM, then shuts it down gracefully: it stops accepting connections,
/// lets responses under way finish for up to `grace`, and then closes whatever connections are left (a
/// client that stopped reading would otherwise hold the process for good).
/// - Throws: What the server throws while running (an address in use, say); not a grace period that ran out.
public func runUntilSignalled(_ service: some Service, grace: Duration, logger: Logger) async throws {
    var configuration = ServiceGroupConfiguration(
        services: [.init(service: service)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger
    )
    configuration.maximumGracefulShutdownDuration = grace
    configuration.maximumCancellationDuration = .seconds(2)
    try await ServiceGroup(configuration: configuration).run()
}

import AssetPackFormat
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UnixSignals

#if canImport(Glibc)
    import Glibc
#endif

/// How the HTTP side of `ba-mock serve` behaves.
public struct ServerConfiguration: Sendable {
    /// The address or name to listen on.
    public var host: String
    /// The port; 0 lets the system choose (the chosen URL is reported to `onRunning`).
    public var port: Int
    /// The base URL written into the manifest; `nil` derives it from each request's `Host` header.
    public var baseURL: String?
    /// Request lines as JSON instead of text.
    public var jsonLog: Bool
    /// How often the folder is checked for changes; `nil` turns live updates off.
    public var watchInterval: Duration?
    /// How long the folder must have been quiet before a change is built (see ``PackCatalog/refresh(settle:)``).
    public var settle: Duration = .zero
    /// Receives one line per request once its response is over; `nil` (the default) logs nothing and costs
    /// nothing per request. It is called on the connection's event loop: it must not block (a command hands
    /// the line to a queue).
    public var requestLog: (@Sendable (String) -> Void)?
    /// Receives a line for each rebuild, removal or manifest problem found while serving (default: nowhere).
    public var eventLog: @Sendable (String) -> Void
    /// The faults to inject; empty by default.
    public var faults: FaultPlan
    /// How long a connection may take to send a complete request head.
    public var requestHeadTimeout: TimeAmount
    /// How long a connection may accept no bytes while a response waits to be sent before it is closed.
    public var sendTimeout: TimeAmount
    /// The most connections open at once; one more is closed as soon as it is accepted (and the event log
    /// says so, once a second at most).
    public var maxConnections: Int
    /// Set when the catalog was not built before: it is built once the server listens, each pack served as
    /// soon as it is built (a folder of thousands of packs does not keep the first from being tested), and
    /// this is told how that first build went. `nil` (the default): the caller refreshed the catalog.
    public var onFirstBuild: (@Sendable (Result<CatalogReport, any Error>) -> Void)?
    /// How long a control request (`POST /_mock/faults`) may take to send its body: a slower one is answered
    /// 408 and its connection closed.
    public var controlBodyTimeout: TimeAmount
    /// Serve the live dashboard at `/_mock/` (with its event stream); on by default. Off, responses are
    /// counted only for the request log.
    public var dashboard = true
    /// The token every `/_mock/` request must carry (`?token=` or `X-BA-Mock-Token`), or `nil` for none.
    /// ``ServerConfiguration/token(forHost:)`` makes one when the host is not loopback.
    public var controlToken: String?
    /// Finds Hummingbird's HTTP/1 codec in a connection's pipeline, below which ``HTTP1HandlerInstaller``
    /// puts the handlers that speak HTTP/1 itself (tests replace it to see what happens when it is missing).
    var locateHTTP1Codec: HTTP1HandlerInstaller.Locate = HTTP1HandlerInstaller.hummingbirdCodec

    /// Creates a configuration; the defaults serve plain HTTP on 127.0.0.1:8443 and watch every second.
    public init(
        host: String = "127.0.0.1",
        port: Int = 8443,
        baseURL: String? = nil,
        jsonLog: Bool = false,
        watchInterval: Duration? = .seconds(1),
        requestLog: (@Sendable (String) -> Void)? = nil,
        eventLog: @escaping @Sendable (String) -> Void = { _ in },
        faults: FaultPlan = FaultPlan(seed: 0),
        requestHeadTimeout: TimeAmount = .seconds(10),
        sendTimeout: TimeAmount = .seconds(60),
        maxConnections: Int = ServerConfiguration.defaultMaxConnections,
        onFirstBuild: (@Sendable (Result<CatalogReport, any Error>) -> Void)? = nil,
        controlBodyTimeout: TimeAmount = .seconds(10)
    ) {
        self.onFirstBuild = onFirstBuild
        self.sendTimeout = sendTimeout
        self.maxConnections = maxConnections
        self.controlBodyTimeout = controlBodyTimeout
        self.faults = faults
        self.requestHeadTimeout = requestHeadTimeout
        self.host = host
        self.port = port
        self.baseURL = baseURL
        self.jsonLog = jsonLog
        self.watchInterval = watchInterval
        self.requestLog = requestLog
        self.eventLog = eventLog
    }
}

extension ServerConfiguration {
    /// A new random token for `/_mock/` when `host` is not a loopback address or `localhost`, else `nil`: off
    /// loopback, a forwarded peer (a tunnel, a proxy) can look local, so the dashboard and the control API
    /// ask for a secret the person who started the server has.
    public static func token(forHost host: String) -> String? {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if bare == "localhost" || bare.hasPrefix("127.") || bare == "::1" { return nil }
        return TokenMiddleware.make()
    }

    /// The dashboard's address under `served`, the URL `serve` printed, with the token when there is one.
    /// On a wildcard `host` that URL names what other devices use (a LAN address), and a browser here that
    /// opened it would arrive from that address, not loopback, and be refused: the dashboard's URL names
    /// loopback instead.
    public static func dashboardURL(served url: String, host: String, token: String?) -> String {
        var base = url
        if TLSSetup.isWildcard(host), let scheme = url.range(of: "://"), let port = url.lastIndex(of: ":"),
            port > scheme.upperBound
        {
            let loopback = host.contains(":") ? "[::1]" : "127.0.0.1"
            base = String(url[..<scheme.upperBound]) + loopback + String(url[port...])
        }
        return base + "/_mock/" + (token.map { "?token=\($0)" } ?? "")
    }

    /// The URL to print for a server listening at `listening`: on a wildcard `host` (`0.0.0.0`, `::`) it names
    /// what clients use, the TLS certificate's first name `publicName`, instead of the wildcard address.
    public static func publicURL(listening: String, host: String, publicName: String?) -> String {
        guard let publicName, TLSSetup.isWildcard(host) else { return listening }
        let shown = publicName.contains(":") ? "[\(publicName)]" : publicName
        let bound = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return listening.replacingOccurrences(of: "://\(bound):", with: "://\(shown):")
    }

    /// A cap that fits the machine: half the process's file descriptor limit (each connection takes one, and
    /// packs being served and built take more), at most 4096.
    public static var defaultMaxConnections: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 512 }
        return Int(clamping: min(UInt64(4096), max(UInt64(16), UInt64(limit.rlim_cur) / 2)))
    }
}

/// Builds the router: request log outermost, JSON errors inside it, then the pack routes and the
/// loopback-only control endpoint.
func buildRouter(
    catalog: PackCatalog,
    configuration: ServerConfiguration,
    scheme: String,
    sendfile: SendfileRegistry?,
    tally: ResponseTally?
) -> Router<MockRequestContext> {
    let router = Router(context: MockRequestContext.self, options: .autoGenerateHeadEndpoints)
    let board = configuration.dashboard ? DownloadBoard() : nil
    if let tally, configuration.requestLog != nil || board != nil {
        router.add(
            middleware: RequestLogMiddleware(
                json: configuration.jsonLog,
                tally: tally,
                write: configuration.requestLog,
                board: board
            )
        )
    }
    router.add(middleware: JSONErrorMiddleware())
    PackController(
        catalog: catalog,
        baseURL: configuration.baseURL,
        scheme: scheme,
        faults: configuration.faults,
        sendfile: sendfile
    ).addRoutes(to: router)
    ControlController(
        catalog: catalog,
        faults: configuration.faults,
        bodyTimeout: configuration.controlBodyTimeout,
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
    let sendfile = tls == nil ? SendfileRegistry() : nil
    // The request log and the dashboard count what each connection's socket took; without them nothing is.
    let tally = configuration.requestLog == nil && !configuration.dashboard ? nil : ResponseTally()
    let router = buildRouter(
        catalog: catalog,
        configuration: configuration,
        scheme: scheme,
        sendfile: sendfile,
        tally: tally
    )
    var logger = Logger(label: "ba-mock")
    logger.logLevel = .warning
    // A connection idle for 30 s between requests is closed, so is one whose request head takes longer
    // than requestHeadTimeout, and one that accepts no bytes of a response for sendTimeout (slow or stuck
    // clients do not pile up); request heads are bounded by NIO's decoder (80 KiB of headers, 1000 fields).
    let (headTimeout, sendTimeout) = (configuration.requestHeadTimeout, configuration.sendTimeout)
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
                http1: http1Codec
            ),
            idleTimeout: .seconds(30)
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
        configuration: .init(address: .hostname(host, port: configuration.port), serverName: "ba-mock"),
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
    sendfile: SendfileRegistry?,
    tally: ResponseTally?,
    http1: (locate: HTTP1HandlerInstaller.Locate, warning: HTTP1HandlerInstaller.MissingCodecWarning)
) -> [any RemovableChannelHandler] {
    var handlers: [any RemovableChannelHandler] = [
        ConnectionTrackingHandler(tracker: tracker),
        RequestHeadTimeoutHandler(timeout: headTimeout), SendTimeoutHandler(timeout: sendTimeout),
        ConnectionCloseHandler(),
        HTTP1HandlerInstaller(sendfile: sendfile, locateCodec: http1.locate, warning: http1.warning),
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
                // A shutdown does not wait for the pack being built (a GiB pack outlasts any grace): what was
                // built is saved, and what a build leaves behind is swept at the next start.
                return await resultUnlessCancelled(Task { try await catalog.refresh() })
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

/// The result of `task`, or `nil` as soon as the caller is cancelled (the task is cancelled too, and goes on
/// without being waited for).
func resultUnlessCancelled<T: Sendable>(_ task: Task<T, any Error>) async -> Result<T, any Error>? {
    let waiter = OneShot<Result<T, any Error>?>()
    return await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            waiter.wait(continuation)
            Task { waiter.resume(await task.result) }
            if Task.isCancelled { waiter.resume(nil) }
        }
    } onCancel: {
        task.cancel()
        waiter.resume(nil)
    }
}

/// A continuation resumed once, by whichever comes first; a value that comes before the wait is kept for it.
private final class OneShot<T: Sendable>: Sendable {
    private enum State {
        case idle
        case waiting(CheckedContinuation<T, Never>)
        case early(T)
        case done
    }

    private let state = Mutex(State.idle)

    func wait(_ continuation: CheckedContinuation<T, Never>) {
        let early: T? = state.withLock { state in
            guard case .early(let value) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .done
            return value
        }
        if let early { continuation.resume(returning: early) }
    }

    func resume(_ value: T) {
        let waiting: CheckedContinuation<T, Never>? = state.withLock { state in
            switch state {
            case .waiting(let continuation):
                state = .done
                return continuation
            case .idle:
                state = .early(value)
                return nil
            case .early, .done:
                return nil
            }
        }
        waiting?.resume(returning: value)
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

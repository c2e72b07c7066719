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
    public var requestHeadTimeout: Duration
    /// How long a connection may accept no bytes while a response waits to be sent before it is closed.
    public var sendTimeout: Duration
    /// The most connections open at once; one more is closed as soon as it is accepted (and the event log
    /// says so, once a second at most).
    public var maxConnections: Int
    /// Set when the catalog was not built before: it is built once the server listens, each pack served as
    /// soon as it is built (a folder of thousands of packs does not keep the first from being tested), and
    /// this is told how that first build went. `nil` (the default): the caller refreshed the catalog.
    public var onFirstBuild: (@Sendable (Result<CatalogReport, any Error>) -> Void)?
    /// How long a control request (`POST /_mock/faults`) may take to send its body: a slower one is answered
    /// 408 and its connection closed.
    public var controlBodyTimeout: Duration
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
        requestHeadTimeout: Duration = .seconds(10),
        sendTimeout: Duration = .seconds(60),
        maxConnections: Int = ServerConfiguration.defaultMaxConnections,
        onFirstBuild: (@Sendable (Result<CatalogReport, any Error>) -> Void)? = nil,
        controlBodyTimeout: Duration = .seconds(10)
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

import AssetPackFormat
import AssetPackServer
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import ServiceLifecycle
import Synchronization
import SystemPackage

/// A real `ba-mock` server on 127.0.0.1, port 0, over a real asset folder, for one test.
public struct LiveServer: Sendable {
    public let url: String
    public let catalog: PackCatalog
    public let requestLines: Lines

    /// Request log lines, shared with the server's log closure.
    public final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        public init() {}
        public func append(_ line: String) { lines.withLock { $0.append(line) } }
        public func withLock<T: Sendable>(_ body: ([String]) -> T) -> T { lines.withLock { body($0) } }
    }

    /// Starts a server over `folder`, runs `body`, shuts the server down; `adjust` changes the configuration
    /// before the server is built (a test with `@testable` access sets what is not public).
    public static func with<T: Sendable>(
        folder: FilePath,
        tls: TLSSetup? = nil,
        pinnedVersions: [String: Int] = [:],
        jsonLog: Bool = false,
        faults: FaultPlan = FaultPlan(seed: 1),
        requestHeadTimeout: Duration = .seconds(10),
        controlBodyTimeout: Duration = .seconds(10),
        deltaDepth: Int = 3,
        format: PackFormat = .tar,
        controlToken: String? = nil,
        adjust: (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (LiveServer) async throws -> T
    ) async throws -> T {
        let catalog = try PackCatalog(
            folder: AssetFolder(root: folder),
            options: PackBuildOptions(format: format, threads: 1),
            pinnedVersions: pinnedVersions,
            archivesKept: 1,
            deltaDepth: deltaDepth
        )
        let report = try await catalog.refresh()
        guard report.problems.isEmpty else { throw report.problems[0] }
        let lines = Lines()
        let (urls, continuation) = AsyncStream<String>.makeStream()
        var configuration = ServerConfiguration(
            host: "127.0.0.1",
            port: 0,
            jsonLog: jsonLog,
            watchInterval: nil,
            requestLog: { line in lines.append(line) },
            eventLog: { _ in },
            faults: faults,
            requestHeadTimeout: requestHeadTimeout,
            controlBodyTimeout: controlBodyTimeout
        )
        configuration.controlToken = controlToken
        adjust(&configuration)
        let app = try buildApplication(catalog: catalog, configuration: configuration, tls: tls) { url in
            continuation.yield(url)
        }
        return try await runServing(app, urls: urls) { url in
            try await body(LiveServer(url: url, catalog: catalog, requestLines: lines))
        }
    }

    /// A whole response, body collected.
    public struct Fetched {
        public var status: Int
        public var headers: HTTPHeaders
        public var body: Data

        public func header(_ name: String) -> String? { headers.first(name: name) }

        public var json: [String: Any]? { try? JSONSerialization.jsonObject(with: body) as? [String: Any] }

        public var errorCode: String? { (json?["error"] as? [String: Any])?["code"] as? String }
    }

    public func get(
        _ path: String,
        method: HTTPMethod = .GET,
        headers: [(String, String)] = [],
        body: String? = nil,
        client: HTTPClient = .shared,
        timeout: TimeAmount = .seconds(30)
    ) async throws -> Fetched {
        var request = HTTPClientRequest(url: url + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await client.execute(request, timeout: timeout)
        let collected = try await response.body.collect(upTo: 256 << 20)
        return Fetched(
            status: Int(response.status.code),
            headers: response.headers,
            body: Data(collected.readableBytesView)
        )
    }

    public func manifest() async throws -> DownloadManifest {
        let fetched = try await get("/manifest")
        return try JSONDecoder().decode(DownloadManifest.self, from: fetched.body)
    }
}

extension Scratch {
    /// Bytes of the archive the server publishes for `id` right now.
    public func archive(of id: String, in catalog: PackCatalog) throws -> Data {
        let pack = try require(catalog.snapshot.pack(withID: id))
        return try read(pack.archive)
    }
}

private func require<T>(_ value: T?) throws -> T {
    guard let value else { throw CancellationError() }
    return value
}

/// Runs `service` (a server) in a service group, waits for the first URL it reports on `urls`, runs `body`
/// with it, then shuts the server down gracefully, whatever `body` did.
public func runServing<T: Sendable>(
    _ service: some Service,
    urls: AsyncStream<String>,
    _ body: @Sendable (String) async throws -> T
) async throws -> T {
    let group = ServiceGroup(services: [service], gracefulShutdownSignals: [], logger: Logger(label: "test"))
    return try await withThrowingTaskGroup(of: T?.self) { tasks in
        tasks.addTask {
            try await group.run()
            return nil
        }
        var iterator = urls.makeAsyncIterator()
        guard let url = await iterator.next() else { throw CancellationError() }
        do {
            let result = try await body(url)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
            return result
        } catch {
            await group.triggerGracefulShutdown()
            throw error
        }
    }
}

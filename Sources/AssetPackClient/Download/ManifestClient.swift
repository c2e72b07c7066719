import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Fetches and decodes the server's download manifest, retrying transient failures by the client's
/// ``RetryPolicy``.
struct ManifestClient: Sendable {
    /// The manifest's URL: `<server>/manifest`, or any URL (Apple's `BAManifestURL`).
    let url: URL
    let client: HTTPClient
    let retryPolicy: RetryPolicy
    /// The deadline of one fetch, from the request to the body's last byte: a server that drips its manifest
    /// a byte at a time cannot hold the client past it.
    let timeout: Duration
    /// The device played: no manifest comes while its network is away.
    var device: SimulatedDevice?

    /// The largest manifest accepted.
    static let maximumSize = DownloadManifest.maximumSize

    /// Every pack the server lists, by ID.
    /// - Throws: ``AssetPackClientError`` with code `.network`, `.httpStatus` or `.badManifest`.
    func fetch() async throws -> [String: AssetPack] { try await fetchCountingBytes().packs }

    /// Every pack the server lists, by ID, and the manifest's size in bytes (what a device counts against
    /// `BAEssentialDownloadAllowance`).
    /// - Throws: ``AssetPackClientError`` with code `.network`, `.httpStatus` or `.badManifest`.
    func fetchCountingBytes() async throws -> (packs: [String: AssetPack], bytes: Int64) {
        let url = self.url
        let device = self.device
        let body = try await retryPolicy.run {
            try device?.requireNetwork(for: "the manifest at \(url)")
            return try await withDeadline(timeout, url: url) { try await fetchOnce(url) }
        }
        return (try decode(body, url: url), Int64(body.readableBytes))
    }

    private func fetchOnce(_ url: URL) async throws -> ByteBuffer {
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: .hours(1))
            guard response.status.code == 200 else {
                var error = AssetPackClientError(
                    code: .httpStatus,
                    message:
                        "\(url) answered \(response.status.code) \(response.status.reasonPhrase). Fix: check --server or --manifest-url"
                )
                error.httpStatus = Int(response.status.code)
                error.retryAfter = Backoff.retryAfter(response.headers.first(name: "Retry-After"))
                throw error
            }
            return try await response.body.collect(upTo: Self.maximumSize)
        } catch let error as AssetPackClientError {
            throw error
        } catch {
            let connect = AssetPackClientError.isConnectFailure(error)
            let tls = AssetPackClientError.isTLSFailure(error)
            let message =
                if AssetPackClientError.isPlainHTTP(error) {
                    "\(url.host ?? "the server") does not speak TLS on that port. Fix: use http:// in --server or --manifest-url"
                } else if tls {
                    "the TLS handshake with \(url.host ?? "the server") failed. \(AssetPackClientError.tlsFix)"
                } else if connect {
                    "cannot connect to \(url.host ?? "")\(url.port.map { ":\($0)" } ?? "") for \(url). Fix: is the "
                        + "server running there, and is --server (or --manifest-url) right?"
                } else if url.scheme == "http", (error as? HTTPClientError) == .remoteConnectionClosed {
                    // What a TLS server does with a plain request: a TLS alert, or nothing, and the close.
                    "\(url.host ?? "the server") closed the connection without an answer to \(url). Fix: if it speaks "
                        + "TLS (ba-mock serve --tls-self-signed or --tls-cert), use https:// in --server or --manifest-url"
                } else {
                    "cannot fetch the manifest from \(url). Fix: is the server running, and --server (or --manifest-url) right?"
                }
            var failure = AssetPackClientError(code: .network, message: message, cause: error)
            failure.retryable = !connect && !tls
            throw failure
        }
    }

    /// Runs `fetch` and fails it with a network error if it has not finished after `timeout`.
    private func withDeadline(
        _ timeout: Duration,
        url: URL,
        _ fetch: @escaping @Sendable () async throws -> ByteBuffer
    ) async throws -> ByteBuffer {
        try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
            group.addTask { try await fetch() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let body = try await group.next() ?? nil else {
                throw AssetPackClientError(
                    code: .network,
                    message:
                        "the manifest at \(url) did not arrive whole within \(timeout.inSeconds) s. Fix: check the "
                        + "server, or raise --timeout"
                )
            }
            return body
        }
    }

    private func decode(_ body: ByteBuffer, url: URL) throws -> [String: AssetPack] {
        let manifest: DownloadManifest
        do {
            manifest = try DownloadManifest.decode(Data(body.readableBytesView), source: url.absoluteString)
        } catch let error as AssetPackFormatError {
            throw AssetPackClientError(code: .badManifest, message: error.message, cause: error)
        }
        var packs: [String: AssetPack] = [:]
        for entry in manifest.assetPacks { packs[entry.id] = try AssetPack(entry, manifestURL: url) }
        return packs
    }
}

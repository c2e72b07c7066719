import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Fetches and decodes the server's download manifest, retrying transient failures by the client's
/// ``RetryPolicy``.
struct ManifestClient: Sendable {
    /// The server's base URL; the manifest is at `<server>/manifest`.
    let server: URL
    let client: HTTPClient
    let retryPolicy: RetryPolicy
    /// The deadline of one fetch, body included.
    let timeout: TimeAmount

    /// The largest manifest accepted (a manifest of 10 000 packs is about 5 MiB).
    static let maximumSize = 64 << 20

    var url: URL { server.appendingPathComponent("manifest") }

    /// Every pack the server lists, by ID.
    /// - Throws: ``AssetPackClientError`` with code `.network`, `.httpStatus` or `.badManifest`.
    func fetch() async throws -> [String: AssetPack] {
        let url = self.url
        let body = try await retryPolicy.run { try await fetchOnce(url) }
        return try decode(body, url: url)
    }

    private func fetchOnce(_ url: URL) async throws -> ByteBuffer {
        do {
            let response = try await client.execute(HTTPClientRequest(url: url.absoluteString), timeout: timeout)
            guard response.status.code == 200 else {
                var error = AssetPackClientError(
                    code: .httpStatus,
                    message:
                        "\(url) answered \(response.status.code) \(response.status.reasonPhrase). Fix: check --server"
                )
                error.httpStatus = Int(response.status.code)
                error.retryAfter = RetryPolicy.retryAfter(response.headers.first(name: "Retry-After"))
                throw error
            }
            return try await response.body.collect(upTo: Self.maximumSize)
        } catch let error as AssetPackClientError {
            throw error
        } catch {
            throw AssetPackClientError(
                code: .network,
                message: "cannot fetch the manifest from \(url). Fix: is the server running, and --server right?",
                cause: error
            )
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

import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// After publishing, what a device sees: the manifest and every object it names, fetched from the public
/// address (`--download-base-url`, a CDN or the bucket), unsigned, as a device fetches them: each object with a
/// GET of its first byte (a HEAD is answered differently by some stores and edges than the GET a device sends).
extension Publisher {
    /// What the public address served.
    public struct PublicCheck: Sendable, Hashable, Codable {
        /// The manifest's public URL.
        public var manifestURL: String
        /// Whether it served the manifest just published (an edge may serve the one before for its max-age).
        public var servesThisRelease: Bool
        /// Objects fetched (their first byte): every one the served manifest names.
        public var objectsChecked: Int
    }

    /// GETs the manifest at `baseURL` + `manifest`, then the first byte of every URL it names.
    /// - Throws: ``PublishError`` with code `.notConfirmed` naming the first URL a device could not download
    ///   as the manifest says (a status, a size, or a manifest that does not parse).
    static func checkPublic(
        baseURL: String,
        published: PlannedObject,
        http: HTTPClient,
        jobs: Int
    ) async throws -> PublicCheck {
        let manifestURL = baseURL + "manifest"
        let fix = "make the bucket (or the CDN's origin) readable at --download-base-url, with the headers publish set"
        func failure(_ message: String) -> PublishError {
            PublishError(
                code: .notConfirmed,
                message: "published, but \(message): a device could not install from it",
                fix: fix
            )
        }
        let answer = try await fetch(manifestURL, method: .GET, http: http)
        guard answer.status == 200 else { throw failure("\(manifestURL) answered \(answer.status)") }
        let manifest: DownloadManifest
        do {
            manifest = try DownloadManifest.decode(answer.body, source: manifestURL)
        } catch {
            throw failure("\(manifestURL) does not serve a download manifest (\(error))")
        }
        let entries = manifest.assetPacks.flatMap { entry in
            [
                (
                    URL(string: entry.url, relativeTo: URL(string: manifestURL))?.absoluteString ?? entry.url,
                    entry.downloadSize
                )
            ]
                + (entry.deltas ?? []).map {
                    (
                        URL(string: $0.url, relativeTo: URL(string: manifestURL))?.absoluteString ?? $0.url,
                        $0.downloadSize
                    )
                }
        }
        let heads = try await concurrently(entries, jobs: jobs) { url, _ in
            try await fetch(url, method: .HEAD, http: http)
        }
        for ((url, size), head) in zip(entries, heads) {
            guard head.status == 200 else { throw failure("\(url) answered \(head.status)") }
            let length = head.headers.first(name: "content-length").flatMap(Int64.init)
            guard length == size else {
                throw failure(
                    "\(url) is \(length.map { "\($0) bytes" } ?? "of no stated size"), not \(size) as the manifest says"
                )
            }
        }
        return PublicCheck(
            manifestURL: manifestURL,
            servesThisRelease: FileDigest.sha256(of: answer.body) == published.step.sha256,
            objectsChecked: entries.count
        )
    }

    /// GETs `url` (its first byte with `range`: a server that ignores ranges answers 200, whose body is then
    /// not read).
    private static func fetch(
        _ url: String,
        method: HTTPMethod,
        range: String? = nil,
        http: HTTPClient
    ) async throws -> (status: Int, headers: HTTPHeaders, body: Data) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let range { request.headers.add(name: "range", value: range) }
        do {
            let response = try await http.execute(request, timeout: .seconds(60))
            let body = range != nil ? ByteBuffer() : try await response.body.collect(upTo: 64 << 20)
            return (Int(response.status.code), response.headers, Data(body.readableBytesView))
        } catch {
            throw PublishError(
                code: .notConfirmed,
                message: "published, but \(url) could not be fetched (\(error)): a device could not install from it",
                fix: "check --download-base-url"
            )
        }
    }
}

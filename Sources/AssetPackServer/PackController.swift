import AssetPackFormat
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import SystemPackage

/// The routes a client uses: `GET /manifest` and `GET`/`HEAD /assets/<id>`.
struct PackController<Context: RequestContext> {
    let catalog: PackCatalog
    /// The base URL written into the manifest, or `nil` to derive it from each request's `Host`.
    let baseURL: String?
    /// `http` or `https`, for derived base URLs.
    let scheme: String
    let fileIO = FileIO(threadPool: .singleton)

    func addRoutes(to router: Router<Context>) {
        router.get("/manifest", use: manifest)
        router.get("/assets/{id}", use: pack)
    }

    @Sendable func manifest(_ request: Request, context: Context) async throws -> Response {
        let base = baseURL ?? request.head.authority.map { "\(scheme)://\($0)" } ?? ""
        let body = try catalog.snapshot.manifest(baseURL: base).encoded()
        let etag = "\"\(FileDigest.sha256(of: body).prefix(32))\""
        var headers: HTTPFields = [.contentType: "application/json", .eTag: etag, .cacheControl: "no-cache"]
        if matches(request.headers[.ifNoneMatch], etag: etag) {
            headers[.contentLength] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    @Sendable func pack(_ request: Request, context: Context) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        guard AssetPackID.problem(with: id) == nil, let pack = catalog.snapshot.pack(withID: id) else {
            throw AssetPackServerError(
                code: .packNotFound,
                message:
                    "no asset pack \"\(AssetPackID.printable(id))\" on this server. Fix: GET /manifest lists the "
                    + "packs and their URLs"
            )
        }
        let size = pack.downloadSize
        var headers: HTTPFields = [
            .acceptRanges: "bytes",
            .eTag: pack.etag,
            .lastModified: HTTPDate.string(pack.lastModified),
            .contentType: "application/octet-stream",
            .cacheControl: "no-cache",
        ]
        if let name = HTTPField.Name("X-Asset-Pack-Version") { headers[name] = String(pack.version) }

        if let ifNoneMatch = request.headers[.ifNoneMatch] {
            if matches(ifNoneMatch, etag: pack.etag) { return Response(status: .notModified, headers: headers) }
        } else if let since = request.headers[.ifModifiedSince].flatMap(HTTPDate.parse), pack.lastModified <= since {
            return Response(status: .notModified, headers: headers)
        }

        var range = ByteRange.parse(request.headers[.range], size: size)
        if range != .full, let ifRange = request.headers[.ifRange], !ifRangeHolds(ifRange, pack: pack) {
            range = .full  // the client's partial copy is of another version: send it all again
        }
        switch range {
        case .full:
            let body = try await fileIO.loadFile(path: pack.archive.string, range: 0...Int(size - 1), context: context)
            return Response(status: .ok, headers: headers, body: body)
        case .partial(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)"
            let body = try await fileIO.loadFile(
                path: pack.archive.string,
                range: Int(bytes.lowerBound)...Int(bytes.upperBound),
                context: context
            )
            return Response(status: .partialContent, headers: headers, body: body)
        case .unsatisfiable:
            throw AssetPackServerError(
                code: .rangeNotSatisfiable,
                message:
                    "range \(request.headers[.range] ?? "") is outside pack \(id), which has \(size) bytes. "
                    + "Fix: ask for bytes 0 to \(size - 1)",
                contentRange: "bytes */\(size)"
            )
        }
    }

    /// `If-None-Match`: a list of entity tags or `*`, compared weakly.
    private func matches(_ header: String?, etag: String) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    /// `If-Range`: a strong entity tag or an exact `Last-Modified` date.
    private func ifRangeHolds(_ header: String, pack: ServedPack) -> Bool {
        let value = header.trimmingCharacters(in: .whitespaces)
        if value.hasPrefix("\"") { return value == pack.etag }
        if value.hasPrefix("W/") { return false }
        return HTTPDate.parse(value) == pack.lastModified
    }
}

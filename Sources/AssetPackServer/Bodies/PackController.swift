import AssetPackFormat
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import NIOPosix
import SystemPackage

/// The routes a client uses: `GET /manifest` (`?platform=iOS` for one platform's packs),
/// `GET`/`HEAD /assets/<id>` and, for delta updates,
/// `GET`/`HEAD /deltas/<id>/<base digest, 16 hex digits>`.
struct PackController {
    typealias Context = MockRequestContext

    let catalog: PackCatalog
    /// The base URL written into the manifest, or `nil` to derive it from each request's `Host`.
    let baseURL: String?
    /// `http` or `https`, for derived base URLs.
    let scheme: String
    let faults: FaultPlan
    /// Small packs' bytes, shared with ``DirectPackResponder``.
    let smallPacks: SmallPackCache
    /// Files open for `sendfile` bodies, or `nil` when bodies must go through buffers (TLS).
    let sendfile: SendfileTransport?

    func addRoutes(to router: Router<Context>) {
        router.get("/manifest", use: manifest)
        router.get("/assets/{id}", use: pack)
        router.get("/deltas/{id}/{base}", use: delta)
    }

    @Sendable func manifest(_ request: Request, context: Context) async throws -> Response {
        guard let base = baseURL ?? Self.authority(request.head.authority).map({ "\(scheme)://\($0)" }) else {
            throw AssetPackServerError(
                code: .invalidOption,
                message:
                    "the Host header \"\(AssetPackID.printable(request.head.authority ?? ""))\" is not a host and port; "
                    + "pack URLs are made from it. Fix: send Host: NAME[:PORT], or start ba-mock with --base-url"
            )
        }
        let snapshot = catalog.snapshot
        if snapshot.incomplete {
            // A manifest that lists only the packs built so far tells a client the others are gone: it would
            // remove them as obsolete. It waits; each built pack is served already.
            throw AssetPackServerError(
                code: .packBuilding,
                message:
                    "the manifest is served once every pack is built (\(snapshot.packs.count) of "
                    + "\(snapshot.packs.count + snapshot.building.count) are); each built pack is served at "
                    + "/assets/<id> already. Fix: ask again after Retry-After seconds"
            )
        }
        let injected = faults.draw(pack: nil)
        var faultHeaders: HTTPFields = [:]
        if !injected.isEmpty { faultHeaders[.mockFault] = injected.map(\.description).joined(separator: "; ") }
        if injected.contains(where: { $0.kind == .badManifest }) {
            faultHeaders[.contentType] = "application/json"
            return Response(
                status: .ok,
                headers: faultHeaders,
                body: ResponseBody(byteBuffer: ByteBuffer(string: #"{"assetPacks": [{"id": "#))
            )
        }
        let stale = injected.contains { $0.kind == .staleManifest }
        var manifest = snapshot.manifest(baseURL: base, stale: stale)
        // Devices are said to add a platform query parameter; its name is third-party and unconfirmed.
        if let name = request.uri.queryParameters.get("platform") {
            guard let platform = DownloadManifest.platform(named: name) else {
                throw AssetPackServerError(
                    code: .invalidOption,
                    message:
                        "\(DownloadManifest.unknownPlatform(name)). Fix: ask /manifest?platform=iOS (any case), or "
                        + "/manifest for every pack"
                )
            }
            manifest = manifest.only(platform: platform)
        }
        let body = try manifest.encoded()
        let etag = "\"\(FileDigest.sha256(of: body).prefix(32))\""
        var headers: HTTPFields = [.contentType: "application/json", .eTag: etag, .cacheControl: "no-cache"]
        headers.append(contentsOf: faultHeaders)
        if matches(request.headers[.ifNoneMatch], etag: etag) {
            headers[.contentLength] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    @Sendable func pack(_ request: Request, context: Context) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        let snapshot = catalog.snapshot
        guard AssetPackID.problem(with: id) == nil, let pack = snapshot.pack(withID: id) else {
            if snapshot.building.contains(id) {
                throw AssetPackServerError(
                    code: .packBuilding,
                    message:
                        "asset pack \"\(AssetPackID.printable(id))\" is being built and is served as soon as it is. "
                        + "Fix: ask again after Retry-After seconds"
                )
            }
            throw AssetPackServerError(
                code: .packNotFound,
                message:
                    "no asset pack \"\(AssetPackID.printable(id))\" on this server. Fix: GET /manifest lists the "
                    + "packs and their URLs"
            )
        }
        return try await serve(pack, request: request, context: context)
    }

    /// A delta archive: served as a pack is (ranges, validators, faults of that pack).
    @Sendable func delta(_ request: Request, context: Context) async throws -> Response {
        let id = context.parameters.get("id") ?? ""
        let base = context.parameters.get("base") ?? ""
        guard AssetPackID.problem(with: id) == nil, let pack = catalog.snapshot.pack(withID: id),
            let delta = pack.deltas.first(where: { $0.urlName == base })
        else {
            throw AssetPackServerError(
                code: .packNotFound,
                message:
                    "no delta \"\(AssetPackID.printable(base))\" of pack \"\(AssetPackID.printable(id))\" on this "
                    + "server (it is built for the published version only). Fix: GET /manifest lists the deltas"
            )
        }
        return try await serve(pack.served(delta), request: request, context: context)
    }

    /// The headers of every answer for `pack` (`200`, `206`, `304`), in the order they are sent; also those
    /// of ``DirectPackResponder``'s answers, which must not differ from the router's.
    static func headers(of pack: ServedPack) -> HTTPFields {
        var headers: HTTPFields = [
            .acceptRanges: "bytes",
            .eTag: pack.etag,
            .lastModified: HTTPDate.string(pack.lastModified),
            .contentType: "application/octet-stream",
            .cacheControl: "no-cache",
        ]
        headers[.assetPackVersion] = String(pack.version)
        return headers
    }

    private func serve(_ pack: ServedPack, request: Request, context: Context) async throws -> Response {
        let id = pack.id
        var headers = Self.headers(of: pack)
        let injected = faults.draw(pack: id)
        if !injected.isEmpty { headers[.mockFault] = injected.map(\.description).joined(separator: "; ") }
        var plan = FaultyBodyWriter.Plan()
        var ignoreRanges = false
        if let response = try await Self.applyFaults(injected, plan: &plan, ignoreRanges: &ignoreRanges) {
            return response
        }

        if let ifNoneMatch = request.headers[.ifNoneMatch] {
            if matches(ifNoneMatch, etag: pack.etag) { return Response(status: .notModified, headers: headers) }
        } else if let since = request.headers[.ifModifiedSince].flatMap(HTTPDate.parse), pack.lastModified <= since {
            return Response(status: .notModified, headers: headers)
        }

        return try await respond(
            with: pack,
            request: request,
            context: context,
            headers: headers,
            plan: plan,
            ignoreRanges: ignoreRanges
        )
    }

    /// Sleeps for latency faults and fills `plan` in the order drawn; returns the answer of a status fault, if any.
    private static func applyFaults(
        _ injected: [FaultRule],
        plan: inout FaultyBodyWriter.Plan,
        ignoreRanges: inout Bool
    ) async throws -> Response? {
        for rule in injected {
            switch rule.kind {
            case .status(let code, let retryAfter):
                var errorHeaders: HTTPFields = [.mockFault: rule.description]
                if let retryAfter { errorHeaders[.retryAfter] = String(retryAfter) }
                return JSONErrorMiddleware<Context>.response(
                    HTTPResponse.Status(code: code),
                    code: "injectedFault",
                    message: "ba-mock answers \(code) on purpose (fault \(rule))",
                    headers: errorHeaders
                )
            case .latency(let milliseconds): try await Task.sleep(for: .milliseconds(milliseconds))
            case .noRanges: ignoreRanges = true
            case .wrongLength:
                ignoreRanges = true
                plan.extraByte = true
            case .resetAfter(let bytes): plan.cutAfter = bytes
            case .truncate: plan.cutAfter = -1  // half of whatever is sent, set below
            case .corrupt(let offset): plan.corruptAt = offset
            case .throttle(let rate): plan.bytesPerSecond = rate
            case .stall(let seconds):
                plan.stallAt = -1
                plan.stallSeconds = seconds
            case .staleManifest, .badManifest: break
            }
        }
        return nil
    }

    /// The pack's bytes for the request's range (all of them if it has none), faults applied; throws on a bad range.
    private func respond(
        with pack: ServedPack,
        request: Request,
        context: Context,
        headers: HTTPFields,
        plan: FaultyBodyWriter.Plan,
        ignoreRanges: Bool
    ) async throws -> Response {
        let id = pack.id
        let size = pack.downloadSize
        var headers = headers
        var range = ignoreRanges ? .full : ByteRange.parse(request.headers[.range], size: size)
        if range != .full, let ifRange = request.headers[.ifRange], !ifRangeHolds(ifRange, pack: pack) {
            range = .full  // the client's partial copy is of another version: send it all again
        }
        let buffered = !plan.isEmpty  // faults change the bytes: they need them in buffers
        switch range {
        case .full:
            let (body, path) = try await body(of: pack, range: 0...Int(size - 1), buffered: buffered, context: context)
            headers[.mockBody] = path.rawValue
            return Response(status: .ok, headers: headers, body: Self.misbehave(body, plan, firstByte: 0))
        case .partial(let bytes):
            headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)"
            let (body, path) = try await body(
                of: pack,
                range: Int(bytes.lowerBound)...Int(bytes.upperBound),
                buffered: buffered,
                context: context
            )
            headers[.mockBody] = path.rawValue
            return Response(
                status: .partialContent,
                headers: headers,
                body: Self.misbehave(body, plan, firstByte: Int(bytes.lowerBound))
            )
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

    /// How a body is sent, as `X-Mock-Body` says: `memory` (a small pack, read once), `direct` (the same
    /// bytes, answered on the event loop before the router: ``DirectPackResponder``), `sendfile` (the kernel
    /// copies the file to the socket), `stream` (the file through ``FileBody``'s buffers).
    enum BodyPath: String {
        case memory, direct, sendfile, stream
    }

    /// The bytes of `range` and how they go: from memory for a small pack; from its file otherwise, by
    /// `sendfile` on plain HTTP where the connection has the handler that sends file regions, through buffers
    /// with TLS or faults (or without that handler).
    private func body(of pack: ServedPack, range: ClosedRange<Int>, buffered: Bool, context: Context) async throws
        -> (ResponseBody, BodyPath)
    {
        guard pack.downloadSize <= SmallPackCache.largestPack else {
            if !buffered, let sendfile, sendfile.sendsFiles(on: context.channel) {
                let body = sendfile.body(path: pack.archive, range: range, channel: context.channel)
                return (body, .sendfile)
            }
            let slots = scheme == "https" ? FileBody.tlsSlotCount : FileBody.slotCount
            return (FileBody.make(path: pack.archive, range: range, channel: context.connection, slots: slots), .stream)
        }
        let bytes = try await smallPacks.bytes(of: pack)
        return (Self.memoryBody(bytes.getSlice(at: range.lowerBound, length: range.count) ?? ByteBuffer()), .memory)
    }

    /// Bytes from memory written at most 256 KiB at a time: the request log counts a write once the socket
    /// took it, and a 1 MiB pack written whole would count nothing for a client that read most of it.
    static func memoryBody(_ bytes: ByteBuffer) -> ResponseBody {
        let pieceLength = 256 << 10
        guard bytes.readableBytes > pieceLength else { return ResponseBody(byteBuffer: bytes) }
        return ResponseBody(contentLength: bytes.readableBytes) { writer in
            var rest = bytes
            while let piece = rest.readSlice(length: min(pieceLength, rest.readableBytes)), piece.readableBytes > 0 {
                try await writer.write(piece)
            }
            try await writer.finish(nil)
        }
    }

    /// Wraps a body in the faults of `plan`; offsets in the plan are pack offsets, `firstByte` is where the
    /// body starts in the pack.
    private static func misbehave(_ body: ResponseBody, _ plan: FaultyBodyWriter.Plan, firstByte: Int) -> ResponseBody {
        guard !plan.isEmpty else { return body }
        let length = body.contentLength ?? 0
        var plan = plan
        if plan.cutAfter == -1 { plan.cutAfter = length / 2 }
        if plan.stallAt == -1 { plan.stallAt = length / 2 }
        if let corruptAt = plan.corruptAt {
            plan.corruptAt = (firstByte...(firstByte + length - 1)).contains(corruptAt) ? corruptAt - firstByte : nil
        }
        let faulty = plan
        return ResponseBody(contentLength: length + (faulty.extraByte ? 1 : 0)) { writer in
            try await body.write(FaultyBodyWriter(base: writer, plan: faulty))
        }
    }

    /// The `Host` header when it is a host name or address and an optional port, nothing else (it goes into
    /// every pack URL of the manifest).
    static func authority(_ header: String?) -> String? {
        guard let header, !header.isEmpty, header.utf8.count <= 255 else { return nil }
        let allowed = header.unicodeScalars.allSatisfy { scalar in
            (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || (scalar >= "0" && scalar <= "9")
                || ".-:[]_".unicodeScalars.contains(scalar)
        }
        return allowed ? header : nil
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

extension HTTPField.Name {
    /// Names the faults injected into a response (also written on the request line).
    static var mockFault: Self { Self("X-Mock-Fault") ?? .via }  // the literal is a valid token
    /// Says how a pack's body was sent (``PackController/BodyPath``): which fast path served it.
    static var mockBody: Self { Self("X-Mock-Body") ?? .via }  // the literal is a valid token
    /// The published version of the pack sent.
    static var assetPackVersion: Self { Self("X-Asset-Pack-Version") ?? .via }  // the literal is a valid token
}

import AssetPackFormat
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TestSupport

/// A deliberately misbehaving server for client tests: serves a given manifest and given pack bytes, honours
/// single ranges, and can cut the first download of a pack after some bytes.
struct StubServer: Sendable {
    struct Options: Sendable {
        /// Close the connection after this many body bytes on the first full request of each pack.
        var cutFirstDownloadAfter: Int?
        /// Send the manifest one byte at a time, this long apart.
        var dripManifestEvery: Duration?
        /// Send pack bodies at this many bytes per second, in pieces of a tenth of it.
        var packBytesPerSecond: Int?
        /// Answer every pack request with this many bytes of garbage (made as they are sent).
        var garbageBytes: Int?
    }

    final class Log: Sendable {
        private let entries = Mutex<[String]>([])
        private let sent = Mutex(0)
        func add(_ line: String) { entries.withLock { $0.append(line) } }
        var lines: [String] { entries.withLock { $0 } }
        func count(_ bytes: Int) { sent.withLock { $0 += bytes } }
        /// Body bytes of garbage responses written so far.
        var garbageSent: Int { sent.withLock { $0 } }
    }

    let url: String
    let log: Log

    /// Runs a server answering `/manifest` with `manifest(baseURL)` and `/assets/<id>` with `packs[id]`.
    static func with<T: Sendable>(
        manifest: @escaping @Sendable (String) -> Data,
        packs: [String: Data],
        options: Options = Options(),
        _ body: @Sendable (StubServer) async throws -> T
    ) async throws -> T {
        let log = Log()
        let cut = Mutex<Set<String>>([])
        let base = Mutex<String>("")
        let router = Router()
        router.get("/manifest") { _, _ in
            let bytes = manifest(base.withLock { $0 })
            guard let every = options.dripManifestEvery else {
                return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
            }
            return Response(
                status: .ok,
                body: ResponseBody(contentLength: bytes.count) { writer in
                    for byte in bytes {
                        try await writer.write(ByteBuffer(bytes: [byte]))
                        try await Task.sleep(for: every)
                    }
                    try await writer.finish(nil)
                }
            )
        }
        router.get("/assets/{id}") { request, context -> Response in
            let id = context.parameters.get("id") ?? ""
            if let garbage = options.garbageBytes {
                log.add("GET \(id) garbage")
                return Response(
                    status: .ok,
                    body: ResponseBody(contentLength: garbage) { writer in
                        let chunk = ByteBuffer(bytes: Scratch.noise(64 << 10, seed: 42))
                        var sent = 0
                        while sent < garbage {
                            let piece = chunk.getSlice(at: 0, length: min(chunk.readableBytes, garbage - sent)) ?? chunk
                            try await writer.write(piece)
                            log.count(piece.readableBytes)
                            sent += piece.readableBytes
                        }
                        try await writer.finish(nil)
                    }
                )
            }
            guard let bytes = packs[id] else { return Response(status: .notFound) }
            let range = request.headers[.range]
            log.add("GET \(id) range=\(range ?? "-") if-range=\(request.headers[.ifRange] ?? "-")")
            var slice = bytes[...]
            var status = HTTPResponse.Status.ok
            var headers: HTTPFields = [.acceptRanges: "bytes", .eTag: "\"\(FileDigest.sha256(of: bytes))\""]
            if let range, range.hasPrefix("bytes="), let start = Int(range.dropFirst(6).prefix { $0 != "-" }) {
                slice = bytes[bytes.startIndex + start..<bytes.endIndex]
                status = .partialContent
                headers[.contentRange] = "bytes \(start)-\(bytes.count - 1)/\(bytes.count)"
            }
            let cutAfter = range == nil && cut.withLock { $0.insert(id).inserted } ? options.cutFirstDownloadAfter : nil
            let body = Data(slice)
            return Response(
                status: status,
                headers: headers,
                body: ResponseBody(contentLength: body.count) { writer in
                    if let cutAfter {
                        try await writer.write(ByteBuffer(bytes: body.prefix(cutAfter)))
                        throw CancellationError()  // drops the connection mid-body
                    }
                    if let rate = options.packBytesPerSecond {
                        var rest = body[...]
                        while !rest.isEmpty {
                            try await writer.write(ByteBuffer(bytes: rest.prefix(max(1, rate / 10))))
                            rest = rest.dropFirst(max(1, rate / 10))
                            try await Task.sleep(for: .milliseconds(100))
                        }
                        try await writer.finish(nil)
                        return
                    }
                    try await writer.write(ByteBuffer(bytes: body))
                    try await writer.finish(nil)
                }
            )
        }
        let (urls, continuation) = AsyncStream<String>.makeStream()
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield("http://127.0.0.1:\(channel.localAddress?.port ?? 0)") },
            logger: Logger(label: "stub")
        )
        return try await runServing(app, urls: urls) { url in
            base.withLock { $0 = url }
            return try await body(StubServer(url: url, log: log))
        }
    }

    /// A manifest listing one pack with the given fields.
    static func manifest(
        id: String,
        bytes: Data,
        downloadSize: Int? = nil,
        sha256: String? = nil,
        digested: Bool = true,
        installSize: Int64 = 1 << 20
    )
        -> @Sendable (String) -> Data
    {
        { base in
            let entry = DownloadManifest.Entry(
                id: id,
                url: base + "/assets/" + id,
                version: 1,
                downloadSize: Int64(downloadSize ?? bytes.count),
                downloadPolicy: .onDemand,
                sha256: digested ? sha256 ?? FileDigest.sha256(of: bytes) : nil,  // without: Apple's shape
                installSize: installSize,
                fileCount: 1,
                compression: .zstd
            )
            return (try? DownloadManifest(assetPacks: [entry]).encoded()) ?? Data()
        }
    }
}

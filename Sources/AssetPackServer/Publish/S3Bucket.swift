import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import _NIOFileSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One bucket of an S3-compatible store, spoken to with signed requests (``S3Signer``) through
/// AsyncHTTPClient: the few calls `publish` needs (HEAD, GET, PUT of an object, a list to check the bucket).
///
/// A 5xx or 429 answer and a broken connection are retried with ``Backoff`` (honouring `Retry-After`); every
/// other answer that is not a success becomes a ``PublishError`` whose code a caller can match.
struct S3Bucket: Sendable {
    /// The store's address: `http://127.0.0.1:9000`, `https://s3.eu-west-1.amazonaws.com`.
    struct Endpoint: Sendable, Hashable {
        var scheme: String
        var host: String
        var port: Int?

        /// Reads `http(s)://host[:port]`; a path is refused (no store puts one before the bucket).
        init?(_ text: String) {
            guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                scheme == "http" || scheme == "https",
                let host = url.host, !host.isEmpty, url.path.isEmpty || url.path == "/", url.query == nil
            else { return nil }
            self.scheme = scheme
            self.host = host
            self.port = url.port
        }

        /// `host` or `host:port` for the `Host` header (the port only when it is not the scheme's own).
        func authority(_ host: String) -> String {
            guard let port, port != (scheme == "https" ? 443 : 80) else { return host }
            return "\(host):\(port)"
        }

        var text: String { "\(scheme)://\(authority(host))" }
    }

    /// What a HEAD of an object says.
    struct Head: Sendable, Hashable {
        var size: Int64
        /// `x-amz-checksum-sha256` (base64), which the store computed or checked when the object was written.
        var checksumSHA256: String?
        /// `x-amz-meta-sha256` (hex), which `publish` writes beside it.
        var metadataSHA256: String?
        var cacheControl: String?
        var contentType: String?
    }

    let http: HTTPClient
    let signer: S3Signer
    let endpoint: Endpoint
    let bucket: String
    /// `bucket.host/key` instead of `host/bucket/key`.
    let virtualHosted: Bool
    let retries: Int
    let backoff: Backoff
    /// Told of each retry before its wait.
    let onRetry: @Sendable (String) -> Void

    /// The body of a request.
    enum Payload: Sendable {
        case empty
        case data(Data, sha256: String)
        /// The bytes of `range` of a file (all of it, or one part of a multipart upload).
        case file(FilePath, range: Range<Int64>, sha256: String)

        var sha256: String {
            switch self {
            case .empty: S3Signer.emptyPayload
            case .data(_, let sha256), .file(_, _, let sha256): sha256
            }
        }
    }

    struct Response: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// `s3://bucket/key`, as messages name an object.
    func name(_ key: String) -> String { "s3://\(bucket)/\(key)" }

    /// Checks that the bucket exists and the credentials may list it (a list of at most one key under
    /// `prefix`), so that a mistake is reported before anything is uploaded.
    func check(prefix: String) async throws {
        _ = try await send("GET", key: nil, query: [("list-type", "2"), ("max-keys", "1"), ("prefix", prefix)])
    }

    /// HEADs `key`, asking for its checksum.
    /// - Returns: What the store says of it, or `nil` when there is no such object.
    func head(_ key: String) async throws -> Head? {
        let response = try await send("HEAD", key: key, headers: [("x-amz-checksum-mode", "ENABLED")], allowing: [404])
        guard response.status != 404 else { return nil }
        return Head(
            size: Int64(response.headers.first(name: "content-length") ?? "") ?? -1,
            checksumSHA256: response.headers.first(name: "x-amz-checksum-sha256"),
            metadataSHA256: response.headers.first(name: "x-amz-meta-sha256"),
            cacheControl: response.headers.first(name: "cache-control"),
            contentType: response.headers.first(name: "content-type")
        )
    }

    /// GETs `key`.
    /// - Returns: Its bytes, or `nil` when there is no such object.
    func get(_ key: String) async throws -> Data? {
        let response = try await send("GET", key: key, allowing: [404])
        return response.status == 404 ? nil : response.body
    }

    /// PUTs `payload` as `key` with `headers`, and its SHA-256 as `x-amz-checksum-sha256` (which the store
    /// checks before it keeps the object) and as `x-amz-meta-sha256`.
    func put(_ key: String, _ payload: Payload, headers: [(String, String)]) async throws {
        let digest = Data(hexDigest: payload.sha256)?.base64EncodedString() ?? ""
        let all =
            headers + [
                ("x-amz-sdk-checksum-algorithm", "SHA256"), ("x-amz-checksum-sha256", digest),
                ("x-amz-meta-sha256", payload.sha256),
            ]
        _ = try await send("PUT", key: key, headers: all, payload: payload)
    }

    /// Sends one request, retrying 5xx, 429 and broken connections.
    /// - Parameter allowed: Statuses besides 2xx that are answers, not errors (404 for a HEAD).
    func send(
        _ method: String,
        key: String?,
        query: [(String, String)] = [],
        headers: [(String, String)] = [],
        payload: Payload = .empty,
        allowing allowed: Set<Int> = []
    ) async throws -> Response {
        var failures = 0
        while true {
            var retryAfter: Duration?
            let failure: PublishError
            do {
                let response = try await once(method, key: key, query: query, headers: headers, payload: payload)
                if (200..<300).contains(response.status) || allowed.contains(response.status) { return response }
                let error = S3Bucket.error(response, method: method, object: key.map(name) ?? "s3://\(bucket)", self)
                guard error.code == .unavailable else { throw error }
                retryAfter = Backoff.retryAfter(response.headers.first(name: "retry-after"))
                failure = error
            } catch let error as PublishError {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                // The transport's own text (NIO's) is not the user's: say which of the two it was.
                let refused = (error as? IOError)?.errnoCode == ECONNREFUSED
                failure = PublishError(
                    code: .network,
                    message: "\(method) \(key.map(name) ?? bucket) got no answer from the store at \(endpoint.text): "
                        + (refused
                            ? "nothing is listening there (connection refused)"
                            : "the connection broke (\(type(of: error)))"),
                    fix: "check --endpoint-url and that the store is running; run publish again to resume"
                )
            }
            failures += 1
            guard failures <= retries else {
                var final = failure
                if failures > 1 { final.message += " (after \(failures) attempts)" }
                throw final
            }
            let wait = backoff.delay(afterFailure: failures, retryAfter: retryAfter)
            onRetry(
                "\(method) \(key.map(name) ?? bucket): \(failure.storeCode ?? failure.status.map(String.init) ?? "no answer")"
                    + ", retry \(failures) of \(retries) in \(String(format: "%.1f", wait.inSeconds)) s"
            )
            try await Task.sleep(for: wait)
        }
    }

    private func once(
        _ method: String,
        key: String?,
        query: [(String, String)],
        headers: [(String, String)],
        payload: Payload
    ) async throws -> Response {
        let host = virtualHosted ? "\(bucket).\(endpoint.host)" : endpoint.host
        let objectPath = key.map { "/" + S3Signer.encode($0, keepingSlashes: true) } ?? "/"
        let path = virtualHosted ? objectPath : "/\(S3Signer.encode(bucket))" + (key == nil ? "" : objectPath)
        let queryText = query.map { "\(S3Signer.encode($0.0))=\(S3Signer.encode($0.1))" }.sorted().joined(
            separator: "&"
        )
        var request = HTTPClientRequest(
            url: "\(endpoint.scheme)://\(endpoint.authority(host))\(path)\(queryText.isEmpty ? "" : "?" + queryText)"
        )
        request.method = HTTPMethod(rawValue: method)
        var sent = headers + [("host", endpoint.authority(host))]
        switch payload {
        case .empty: break
        case .data(let data, _): sent.append(("content-length", String(data.count)))
        case .file(_, let range, _): sent.append(("content-length", String(range.count)))
        }
        sent += signer.signedHeaders(
            method: method,
            path: path,
            query: query,
            headers: sent,
            payloadSHA256: payload.sha256,
            date: Date()
        )
        for (name, value) in sent where name != "content-length" { request.headers.add(name: name, value: value) }
        switch payload {
        case .empty:
            return try await collect(http.execute(request, timeout: .minutes(5)), method: method)
        case .data(let data, _):
            request.body = .bytes(ByteBuffer(bytes: data))
            return try await collect(http.execute(request, timeout: .minutes(5)), method: method)
        case .file(let path, let range, _):
            return try await FileSystem.shared.withFileHandle(forReadingAt: path) { handle in
                request.body = .stream(
                    handle.readChunks(in: range, chunkLength: .mebibytes(1)),
                    length: .known(Int64(range.count))
                )
                return try await collect(http.execute(request, timeout: .hours(24)), method: method)
            }
        }
    }

    private func collect(_ response: HTTPClientResponse, method: String) async throws -> Response {
        // An object GET is a manifest here; an error body is a few hundred bytes.
        let body = method == "HEAD" ? ByteBuffer() : try await response.body.collect(upTo: 64 << 20)
        return Response(
            status: Int(response.status.code),
            headers: response.headers,
            body: Data(body.readableBytesView)
        )
    }
}

extension Data {
    /// The bytes of a hex string (either case), or `nil` when it is not one.
    init?(hexDigest hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        self.init(bytes)
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// An S3-compatible store on 127.0.0.1, port 0: moto's standalone server, started by `scripts/s3-store.py`
/// (PyPI `moto`, `make deps` installs it), with its buckets made. Read back with boto3, an independent client.
public final class S3Store: @unchecked Sendable {
    /// `http://127.0.0.1:PORT`.
    public let endpoint: String
    public let accessKeyID: String
    public let secretAccessKey: String
    private let server: RunningTool
    private static let script = repositoryRoot().appendingPathComponent("scripts/s3-store.py").path

    /// Starts a store holding `buckets`.
    /// - Parameters:
    ///   - auth: moto checks every request's signature against a key it made (the one given here).
    ///   - publicRead: anyone may GET the buckets' objects (a bucket policy), as from a CDN.
    public init(buckets: [String], auth: Bool = false, publicRead: Bool = false) throws {
        server = try RunningTool(
            S3Store.python,
            ["python3", "-u", S3Store.script, "serve"] + (auth ? ["--auth"] : []) + (publicRead ? ["--public"] : [])
                + buckets
        )
        guard let line = server.waitForFirstLine(timeout: 60),
            let fields = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
            let endpoint = fields["endpoint"], let key = fields["accessKeyID"], let secret = fields["secretAccessKey"]
        else {
            let stderr = server.stderr
            server.interrupt(signal: SIGKILL)
            throw StoreError(message: "the S3 store did not start (run `make deps` for moto): \(stderr)")
        }
        self.endpoint = endpoint
        accessKeyID = key
        secretAccessKey = secret
    }

    /// The variables a tool reads its credentials from, with the user's own AWS files and profile out of the way.
    public var environment: [String: String?] {
        [
            "AWS_ACCESS_KEY_ID": accessKeyID, "AWS_SECRET_ACCESS_KEY": secretAccessKey, "AWS_SESSION_TOKEN": nil,
            "AWS_PROFILE": nil, "AWS_CONFIG_FILE": "/dev/null", "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_ENDPOINT_URL": nil, "AWS_REGION": nil, "AWS_DEFAULT_REGION": nil,
        ]
    }

    /// One object as boto3 read it.
    public struct Object: Sendable, Hashable, Decodable {
        public var key: String
        public var size: Int64
        public var cacheControl: String?
        public var contentType: String?
        /// The SHA-256 of the bytes boto3 downloaded.
        public var sha256: String
    }

    /// Every object of `bucket`, downloaded with boto3.
    public func objects(_ bucket: String) throws -> [Object] {
        let run = try runTool(
            S3Store.python,
            ["python3", S3Store.script, "objects", endpoint, bucket],
            environment: environment
        )
        guard run.status == 0 else { throw StoreError(message: "boto3 could not list \(bucket): \(run.stderr)") }
        return try run.stdout.split(separator: "\n").map { try JSONDecoder().decode(Object.self, from: Data($0.utf8)) }
    }

    /// Stops the server (SIGKILL). Call it in a `defer`: that also keeps the server alive to the end of the test.
    public func stop() { server.interrupt(signal: SIGKILL) }

    deinit { server.interrupt(signal: SIGKILL) }

    struct StoreError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }

    /// The Python that has moto and boto3 (pip installs them for the `python3` on PATH, which a version
    /// manager may provide).
    private static let python = URL(fileURLWithPath: "/usr/bin/env")
}

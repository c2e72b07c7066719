import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage

extension Publisher {
    /// Builds the folder's packs and publishes them (see ``Publisher``).
    ///
    /// In order: the bucket is listed once (wrong credentials or a missing bucket stop everything here); each
    /// object is HEADed and uploaded unless the store holds its bytes; every object the manifest names is
    /// HEADed again and must have the size and SHA-256 uploaded; then the manifest is uploaded, and HEADed.
    /// - Parameters:
    ///   - options: What to publish and where.
    ///   - log: Told of each step (an upload done, a retry), as a line.
    /// - Returns: What was uploaded and kept.
    /// - Throws: ``PublishError`` (the live manifest is unchanged unless the failure is the manifest's own
    ///   confirmation), and what building the packs throws.
    public static func publish(_ options: Options, log: @escaping @Sendable (String) -> Void) async throws -> Report {
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration())
        do {
            let report = try await publish(options, through: http, log: log)
            try await http.shutdown()
            return report
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    private static func publish(
        _ options: Options,
        through http: HTTPClient,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> Report {
        let (bucket, prefix) = try await bucket(options, http: http, log: log)
        let archives = try await MockServer.readArchives(options.archives, versions: options.archiveVersions, log: log)
        guard let folder = options.folder else {
            return try await publish(
                CatalogSnapshot(packs: archives.sorted { $0.id < $1.id }),
                to: bucket,
                prefix: prefix,
                options: options,
                log: log
            )
        }
        return try await Exporter.withBuiltPacks(
            folder: folder,
            packOptions: options.packOptions,
            pinnedVersions: options.pinnedVersions,
            deltaDepth: options.deltaDepth,
            log: log
        ) { built in
            var snapshot = built
            if let twice = archives.first(where: { archive in built.packs.contains { $0.id == archive.id } }) {
                throw PublishError(
                    code: .invalidInput,
                    message: "\(twice.archive) is pack \(twice.id), which \(folder) builds too",
                    fix: "publish one of them"
                )
            }
            snapshot.packs = (built.packs + archives).sorted { $0.id < $1.id }
            return try await publish(snapshot, to: bucket, prefix: prefix, options: options, log: log)
        }
    }

    /// The bucket of `options.destination`, with the credentials, region and endpoint found as the AWS CLI
    /// finds them, and the prefix.
    private static func bucket(
        _ options: Options,
        http: HTTPClient,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> (S3Bucket, String) {
        let (bucketName, prefix) = try destination(options.destination)
        let settings = try await BlockingIO.shortCall {  // reads ~/.aws
            try S3Settings.load(environment: options.environment, profile: options.profile)
        }
        guard let credentials = settings.credentials else {
            throw PublishError(
                code: .credentials,
                message: "no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and profile "
                    + "\"\(settings.profile)\" has none in \(settings.searched.joined(separator: " or "))",
                fix: "set them, or name a profile with --profile"
            )
        }
        let region = options.region ?? settings.region ?? "us-east-1"
        let endpointText = options.endpointURL ?? settings.endpointURL ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = S3Bucket.Endpoint(endpointText) else {
            throw PublishError(
                code: .invalidDestination,
                message: "\(endpointText) is not a store's address",
                fix: "give --endpoint-url as http(s)://HOST[:PORT]"
            )
        }
        let bucket = S3Bucket(
            http: http,
            signer: S3Signer(credentials: credentials, region: region),
            endpoint: endpoint,
            bucket: bucketName,
            virtualHosted: virtualHosted(options.addressing, endpoint, bucketName),
            retries: options.retries,
            backoff: options.backoff,
            onRetry: { log("retrying \($0)") }
        )
        return (bucket, prefix)
    }

    private static func publish(
        _ snapshot: CatalogSnapshot,
        to bucket: S3Bucket,
        prefix: String,
        options: Options,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> Report {
        var (objects, platformManifests, manifest) = try plan(
            snapshot,
            prefix: prefix,
            baseURL: options.downloadBaseURL,
            manifestMaxAge: options.manifestMaxAge,
            platforms: options.platforms
        )
        var pruning: (log: ReleaseLog, deletions: [Step])?
        do {
            try await bucket.check(prefix: prefix)
            try await markHeld(&objects, &platformManifests, &manifest, in: bucket, jobs: options.jobs)
            if options.keep != nil {
                pruning = try await prunePlan(
                    bucket,
                    prefix: prefix,
                    objects: objects,
                    manifest: manifest,
                    options: options,
                    log: log
                )
            }
            if !options.dryRun {
                try await send(&objects, then: platformManifests, to: bucket, options: options, log: log)
            }
        } catch var error as PublishError {
            error.message += "; the live manifest \(bucket.name(manifest.step.key)) was not changed"
            throw error
        }
        if !options.dryRun, manifest.step.action == .upload {
            try await bucket.put(manifest.step.key, manifest.payload, headers: manifest.headers)
            try await confirm([manifest], in: bucket, jobs: 1)
            log("uploaded \(bucket.name(manifest.step.key)), last")
        }
        if !options.dryRun, let pruning {
            try await prune(
                pruning,
                in: bucket,
                prefix: prefix,
                wentLive: manifest.step.action == .upload,
                jobs: options.jobs,
                log: log
            )
        }
        let baseURL = options.downloadBaseURL.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        var report = Report(
            manifest: bucket.name(manifest.step.key),
            manifestURL: baseURL.map { $0 + "manifest" },
            endpoint: bucket.endpoint.text,
            dryRun: options.dryRun,
            steps: objects.map(\.step) + platformManifests.map(\.step) + [manifest.step] + (pruning?.deletions ?? [])
        )
        if !options.dryRun, options.check, let baseURL {
            report.publicCheck = try await checkPublic(
                baseURL: baseURL,
                published: manifest,
                http: bucket.http,
                jobs: options.jobs
            )
        }
        return report
    }

    /// HEADs every object and marks those the store holds as publish would write them (``holds(_:_:)``) to keep.
    private static func markHeld(
        _ objects: inout [PlannedObject],
        _ platformManifests: inout [PlannedObject],
        _ manifest: inout PlannedObject,
        in bucket: S3Bucket,
        jobs: Int
    ) async throws {
        let all = objects + platformManifests + [manifest]
        let heads = try await concurrently(all, jobs: jobs) { try await bucket.head($0.step.key) }
        for index in objects.indices where holds(heads[index], objects[index]) {
            objects[index].step.action = .keep
        }
        for index in platformManifests.indices where holds(heads[objects.count + index], platformManifests[index]) {
            platformManifests[index].step.action = .keep
        }
        if holds(heads[all.count - 1], manifest) { manifest.step.action = .keep }
    }

    /// Uploads and confirms the archives, then each platform's manifest (a device reads one of them or the
    /// main one): everything before the main manifest.
    private static func send(
        _ objects: inout [PlannedObject],
        then platformManifests: [PlannedObject],
        to bucket: S3Bucket,
        options: Options,
        log: @escaping @Sendable (String) -> Void
    ) async throws {
        let sent = try await upload(
            objects.filter { $0.step.action == .upload },
            to: bucket,
            options: options,
            log: log
        )
        for index in objects.indices {
            objects[index].step = sent[objects[index].step.key] ?? objects[index].step
        }
        try await confirm(objects, in: bucket, jobs: options.jobs)
        for object in platformManifests where object.step.action == .upload {
            try await bucket.put(object.step.key, object.payload, headers: object.headers)
            log("uploaded \(bucket.name(object.step.key))")
        }
        try await confirm(platformManifests, in: bucket, jobs: options.jobs)
    }

    /// Sends `objects`: those of at most one part side by side (`jobs` at once), then each larger one in parts
    /// (`jobs` parts at once), so that no more than `jobs` requests are in flight.
    /// - Returns: The steps sent, by key, with their parts and the bytes an earlier run had sent.
    private static func upload(
        _ objects: [PlannedObject],
        to bucket: S3Bucket,
        options: Options,
        log: @escaping @Sendable (String) -> Void
    ) async throws -> [String: Step] {
        let done = Counter()
        @Sendable func uploaded(_ step: Step) async {
            let count = await done.increment()
            let resumed = step.resumedBytes.flatMap { $0 > 0 ? ", \(ByteFormat.string($0)) of it sent before" : nil }
            log(
                "uploaded \(bucket.name(step.key)) (\(ByteFormat.string(step.bytes))\(resumed ?? "")), \(count) of "
                    + "\(objects.count)"
            )
        }
        let small = objects.filter { $0.step.bytes <= options.partSize }
        var sent = try await concurrently(small, jobs: options.jobs) { object in
            try await bucket.put(object.step.key, object.payload, headers: object.headers)
            await uploaded(object.step)
            return object.step
        }
        for object in objects where object.step.bytes > options.partSize {
            guard case .file(let path, _, let sha256) = object.payload else { continue }
            let parts = try await bucket.putInParts(
                object.step.key,
                file: path,
                size: object.step.bytes,
                sha256: sha256,
                headers: object.headers,
                partSize: options.partSize,
                jobs: options.jobs
            )
            var step = object.step
            step.parts = parts.parts
            step.resumedBytes = parts.resumedBytes
            await uploaded(step)
            sent.append(step)
        }
        return Dictionary(sent.map { ($0.key, $0) }) { first, _ in first }
    }

    /// HEADs every object and throws unless each has the size, SHA-256 and headers it was uploaded with.
    private static func confirm(_ objects: [PlannedObject], in bucket: S3Bucket, jobs: Int) async throws {
        let heads = try await concurrently(objects, jobs: jobs) { try await bucket.head($0.step.key) }
        for (object, head) in zip(objects, heads) where !holds(head, object) {
            let step = object.step
            let found =
                head.map {
                    "\($0.size) bytes, SHA-256 \($0.checksumSHA256 ?? $0.metadataSHA256 ?? "not given"), Cache-Control "
                        + "\($0.cacheControl ?? "none"), Content-Type \($0.contentType ?? "none")"
                } ?? "no object"
            let headers = object.headers.map { "\($0.0): \($0.1)" }.joined(separator: ", ")
            throw PublishError(
                code: .notConfirmed,
                message: "\(bucket.name(step.key)) should hold \(step.bytes) bytes with SHA-256 \(step.sha256) and "
                    + "\(headers), but the store has \(found)",
                fix: "run publish again; if it persists, the store or a proxy in front "
                    + "of it changes objects"
            )
        }
    }

    private static func virtualHosted(_ addressing: Addressing, _ endpoint: S3Bucket.Endpoint, _ bucket: String) -> Bool
    {
        switch addressing {
        case .path: false
        case .virtual: true
        // A name with dots would not match AWS's wildcard certificate.
        case .auto: endpoint.host.hasSuffix(".amazonaws.com") && !bucket.contains(".")
        }
    }

    private static func httpConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.timeout.read = .seconds(60)
        // The bucket's own retries decide; AHC's would hold a refused connection until the connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        return configuration
    }

    private actor Counter {
        var value = 0
        func increment() -> Int {
            value += 1
            return value
        }
    }
}

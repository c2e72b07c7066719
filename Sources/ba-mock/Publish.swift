import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Publish: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "publish",
        abstract: "Upload an asset folder's packs to an S3-compatible store, the manifest last.",
        discussion: """
            Packs and deltas go under keys that carry their version and SHA-256 (PREFIX/packs/<id>/<version>-<sha256>, \
            PREFIX/deltas/<id>/...), with Cache-Control: public, max-age=31536000, immutable. Only objects the store \
            does not already hold with the same size and SHA-256 are uploaded. The download manifest \
            (PREFIX/manifest) is uploaded last, and only after every object it names has been confirmed by a HEAD \
            with the SHA-256 uploaded (x-amz-checksum-sha256), so a device never reads a manifest naming a missing or \
            partial object. Old versions stay for devices that still hold an older manifest, unless --keep is given.

            Credentials, region and endpoint are found as the AWS CLI finds them: AWS_ACCESS_KEY_ID, \
            AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL, then ~/.aws/credentials and \
            ~/.aws/config (AWS_PROFILE or --profile). The secret is never printed. Versions are shared with `serve` \
            and `export` through FOLDER/.ba-mock/state.json.

            Example, against a local store: AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... ba-mock publish Assets \
            s3://packs/game --endpoint-url http://127.0.0.1:9000 --download-base-url https://cdn.example.com/game
            """
    )

    @Argument(
        help: ArgumentHelp(
            "An asset folder (packaging manifests at its top level; Assets for the sample) and pack archives to publish as they are (.aar from ba-package, or ba-mock's own), then where: s3://BUCKET or s3://BUCKET/PREFIX.",
            valueName: "folder-or-archive... s3-url"
        )
    )
    var inputs: [String] = []

    @OptionGroup var versions: ArchiveVersions

    /// The folder, the archives and the destination.
    private func split() throws -> (folder: FilePath?, archives: [FilePath], destination: String) {
        guard let destination = inputs.last, destination.hasPrefix("s3://") else {
            throw ValidationError("give the destination last, as s3://BUCKET or s3://BUCKET/PREFIX")
        }
        let sources = inputs.dropLast().map { FilePath($0) }
        guard !sources.isEmpty else {
            throw ValidationError("give an asset folder or pack archives before \(destination)")
        }
        let (folder, archives) = try folderAndArchives(sources, verb: "publish")
        return (folder, archives, destination)
    }

    @Option(
        help:
            "The store's address, e.g. http://127.0.0.1:9000. (default: AWS_ENDPOINT_URL, the profile's endpoint_url, or AWS's own for the region)"
    )
    var endpointURL: String?

    @Option(help: "The region requests are signed for. (default: AWS_REGION, the profile's region, or us-east-1)")
    var region: String?

    @Option(help: "The profile of ~/.aws/credentials and ~/.aws/config to read. (default: AWS_PROFILE, or default)")
    var profile: String?

    @Option(
        help: ArgumentHelp(
            "How requests name the bucket: path (endpoint/BUCKET/KEY), virtual (BUCKET.endpoint/KEY), or auto: virtual on AWS for a name without dots, path elsewhere.",
            valueName: "style"
        )
    )
    var addressing: Publisher.Addressing = .auto

    @Option(
        help:
            "The public address of PREFIX (a CDN's, or the bucket's), written before each object's path in the manifest's URLs, e.g. https://cdn.example.com/packs. (default: URLs relative to the manifest)"
    )
    var downloadBaseURL: String?

    @Option(
        help:
            "The manifest's Cache-Control max-age, in seconds: how long a CDN or a device may keep an old manifest. Packs are immutable and kept a year."
    )
    var manifestMaxAge: Int = 60

    @Option(
        name: .customLong("platform"),
        help: ArgumentHelp(
            "Also publish PREFIX/manifest-<platform>.json with only the packs for that platform (those that list it or list none), as export --platform writes it; uploaded after the packs and before PREFIX/manifest. Repeatable; iOS, macOS, tvOS or visionOS, any case.",
            valueName: "platform"
        )
    )
    var platforms: [String] = []

    @Flag(
        inversion: .prefixedNo,
        help:
            "After publishing, fetch the manifest from --download-base-url and the first byte of every object it names, unsigned, as a device would: a bucket that is not readable there, or a size that differs, fails the run (the manifest is live by then)."
    )
    var check = true

    @Option(help: "Requests at once (HEADs, uploads, parts).")
    var jobs: Int = 4

    @Option(
        help: ArgumentHelp(
            "An object larger than this is uploaded in parts of this size, side by side; an upload a run left unfinished is taken up again, its parts already in the store not sent again. 5 to 5120 (S3's limits).",
            valueName: "MiB"
        )
    )
    var partSize: Int = 16

    @Option(
        help:
            "Retries of a request the store answers with 5xx or 429, or whose connection breaks (backoff from 0.5 s, doubling, up to 30 s; Retry-After honoured)."
    )
    var retries: Int = 5

    @Option(
        help: ArgumentHelp(
            "Delete old versions, keeping the archives of the last N releases (the one published now counts). Never deleted: what the live manifest or the one it replaces names, and anything until --grace after the release that replaced it. The releases are kept in PREFIX/releases.json. (default: delete nothing)",
            valueName: "N"
        )
    )
    var keep: Int?

    @Option(
        help:
            "Seconds an old version stays after the release that replaced it went live: at least --manifest-max-age, so an edge or a device still holding the older manifest finds what it names."
    )
    var grace: Double = 86_400

    @Flag(help: "Print what would be uploaded, kept and deleted, with bytes, and change nothing.")
    var dryRun = false

    @Option(
        name: .customLong("pack-version"),
        help: ArgumentHelp("Publish pack ID at version N. Repeatable.", valueName: "ID=N")
    )
    var packVersions: [String] = []

    @Flag(help: "Print the report as one JSON object (steps with key, kind, action, bytes, sha256) instead of a table.")
    var json = false

    @OptionGroup var build: BuildOptions
    @OptionGroup var deltas: DeltaOptions

    func validate() throws {
        let archives = try split().archives
        try versions.check(archives: archives.count)
        if let downloadBaseURL {
            let problem =
                URL(string: downloadBaseURL).map { DownloadManifest.fetchProblem(with: $0) }
                ?? "does not parse as a URL"
            if let problem { throw ValidationError("--download-base-url \(downloadBaseURL) \(problem)") }
            // Written into every URL of the manifest as given: a space or a non-ASCII byte there is no URL.
            if let bad = downloadBaseURL.unicodeScalars.first(where: {
                !$0.isASCII || $0.value <= 0x20 || $0 == "\u{7F}"
            }) {
                throw ValidationError(
                    "--download-base-url \(downloadBaseURL) holds \"\(bad)\", which a URL cannot: percent-encode it (a "
                        + "space is %20, Ü is %C3%9C)"
                )
            }
        }
        for platform in platforms where DownloadManifest.platform(named: platform) == nil {
            throw ValidationError("--\(DownloadManifest.unknownPlatform(platform))")
        }
        guard manifestMaxAge >= 0 else { throw ValidationError("--manifest-max-age must be 0 or more seconds") }
        guard (1...64).contains(jobs) else { throw ValidationError("--jobs must be 1 to 64") }
        guard (5...5120).contains(partSize) else { throw ValidationError("--part-size must be 5 to 5120 (MiB)") }
        guard (0...20).contains(retries) else { throw ValidationError("--retries must be 0 to 20") }
        if let keep, keep < 1 { throw ValidationError("--keep must be 1 or more releases") }
        // Ten years: a bound that keeps the seconds a number of milliseconds, and refuses inf and nan.
        guard grace.isFinite, (0...315_360_000).contains(grace) else {
            throw ValidationError("--grace must be 0 to 315360000 seconds (ten years)")
        }
        guard grace >= Double(manifestMaxAge) else {
            throw ValidationError(
                "--grace \(grace) is shorter than --manifest-max-age \(manifestMaxAge): an edge could still serve a manifest naming what was deleted"
            )
        }
    }

    func run() async throws {
        let (folder, archives, destination) = try split()
        var options = Publisher.Options(
            folder: folder,
            destination: destination,
            environment: ProcessInfo.processInfo.environment
        )
        options.archives = archives
        options.archiveVersions = versions.assetPackVersions
        options.endpointURL = endpointURL
        options.region = region
        options.profile = profile
        options.addressing = addressing
        options.downloadBaseURL = downloadBaseURL
        options.manifestMaxAge = manifestMaxAge
        options.jobs = jobs
        options.check = check
        options.platforms = platforms.compactMap(DownloadManifest.platform(named:))
        options.partSize = Int64(partSize) << 20
        options.retries = retries
        options.keep = keep
        options.grace = .milliseconds(Int64(grace * 1000))
        options.dryRun = dryRun
        options.pinnedVersions = try PackVersionPins.parse(packVersions)
        options.packOptions = build.packOptions
        options.deltaDepth = deltas.deltaDepth
        let report = try await Publisher.publish(options, log: { Console.err($0) })
        if json {
            try Console.json(report)
        } else {
            Console.out(MockOutput.publishTable(report))
        }
    }
}

extension Publisher.Addressing: ExpressibleByArgument {}

import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import Hummingbird
import Logging
import Synchronization
import SystemPackage

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract:
            "Serve an asset folder's packs, and pack archives (.aar) as they are, over HTTP or HTTPS (the default command).",
        discussion: """
            Routes: GET /manifest (the download manifest; ?platform=iOS for that platform's packs only, any \
            case, 400 for an unknown platform: devices are said to add a platform query parameter, but its \
            name is third-party and UNCONFIRMED) and GET/HEAD /assets/<id> (a pack, with ranges, ETag and \
            Last-Modified). The first line on stdout is the URL; then a table of packs; then one line \
            per request. Files edited under the folder are picked up without a restart, and the pack's \
            version goes up by one. State (built packs, versions) lives in FOLDER/.ba-mock/, which no \
            manifest can select; --tls-self-signed keeps its CA outside the folder (--tls-dir).

            Pack archives given as files (`ba-mock serve Tutorial.aar Levels.aar`, as `ba-serve` takes them; \
            with or without a folder) are served byte for byte: each is read once at start and every file \
            checked against the SHA-256 it carries; its ID, policy and platforms come from the Manifest.json it \
            carries (else its ID from the file name, with a warning), its version from --asset-pack-versions \
            (by position, as ba-serve takes them; default 1). An archive is not re-read while serving.
            """
    )

    @Argument(
        help: ArgumentHelp(
            "An asset folder (packaging manifests at its top level; at most one) and pack archives to serve as they are (.aar from ba-package, or ba-mock's own). (default: Assets)",
            valueName: "folder-or-archive"
        )
    )
    var inputs: [FilePath] = []

    @OptionGroup var versions: ArchiveVersions

    /// The folder to serve and the archives, told apart by what is on disk.
    private func splitInputs() throws -> (folder: FilePath?, archives: [FilePath]) {
        inputs.isEmpty ? ("Assets", []) : try folderAndArchives(inputs, verb: "serve")
    }

    @Option(help: "Address or host name to listen on; also the name in a --tls-self-signed certificate.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on; 0 lets the system choose and prints the real URL first.")
    var port: Int = 8443

    @Option(help: "TLS certificate chain (PEM). Needs --tls-key.")
    var tlsCert: FilePath?

    @Option(help: "TLS private key (PEM, unencrypted). Needs --tls-cert.")
    var tlsKey: FilePath?

    @Flag(help: "Serve HTTPS with a local CA made once in --tls-dir (the CA file to trust is printed).")
    var tlsSelfSigned = false

    @Option(
        help: ArgumentHelp(
            "Where --tls-self-signed keeps its CA and certificates, one CA for every asset folder; never inside one. (default: $XDG_STATE_HOME/ba-mock/tls, else ~/.local/state/ba-mock/tls)",
            valueName: "dir"
        )
    )
    var tlsDir: FilePath?

    @Option(
        help: ArgumentHelp(
            "A name or IP address clients use, for the --tls-self-signed certificate; repeatable. Needed with --host 0.0.0.0, e.g. the LAN address a phone connects to. (default: --host)",
            valueName: "name-or-ip"
        )
    )
    var tlsName: [String] = []

    @Option(help: "Archives kept on disk per pack, the published one included; older ones are deleted.")
    var keepArchives = 2

    @Option(
        name: .customLong("pack-version"),
        help: ArgumentHelp(
            "Publish pack ID at version N whatever its content, like ba-serve --asset-pack-versions. Repeatable.",
            valueName: "ID=N"
        )
    )
    var packVersions: [String] = []

    @Option(help: "Base URL written into the manifest's pack URLs. (default: from each request's Host header)")
    var baseURL: String?

    @Option(help: "Seconds between checks of the folder for changes; 0 turns live updates off.")
    var watchInterval: Double = 1

    @Option(
        help:
            "Seconds the folder must have been quiet (no manifest or selected file changed, added or removed) before a change is built and published: a save under way, or the first of two edits close together, is not published."
    )
    var settle: Double = 1

    @Option(
        help:
            "Seconds a connection may accept no bytes of a response before it is closed (a client that stopped reading)."
    )
    var sendTimeout: Double = 60

    @Option(
        help:
            "Seconds that responses under way may take to finish after SIGINT or SIGTERM; then their connections are closed."
    )
    var shutdownGrace: Double = 5

    @Option(
        help: ArgumentHelp(
            "Connections open at once; one more is closed as soon as it is accepted, and stderr says so. (default: half the file descriptor limit, at most 4096; \(ServerConfiguration.defaultMaxConnections) here)",
            valueName: "n"
        )
    )
    var maxConnections: Int?

    @Flag(
        inversion: .prefixedNo,
        help:
            "Serve the live dashboard at /_mock/ (packs, downloads in flight, request log, faults; loopback only, and with a token printed at start when --host is not loopback)."
    )
    var dashboard = true

    @Flag(help: "Write request lines as JSON objects, one per line.")
    var jsonLog = false

    @Flag(help: "No request lines (for benchmarks and load tests); the URL, the pack table and errors still print.")
    var quiet = false

    @Option(
        name: .customLong("fault"),
        help: ArgumentHelp(
            "Misbehave on purpose: reset-after=BYTES, truncate, corrupt=OFFSET, wrong-length, status=CODE[,retry-after=S], latency=MS, throttle=BYTES_PER_SEC, stall=SECONDS, no-ranges, stale-manifest, bad-manifest; then ,pack=ID ,nth=N ,p=SHARE ,times=K. BYTES and OFFSET 0 to 2^40 (1 TiB), BYTES_PER_SEC 1 to 2^40, CODE 100 to 599, S and SECONDS 0 to 86400 (a day), MS 0 to 86400000, N and K 1 to 10^9, SHARE 0 to 1. Repeatable; also changed at run time through /_mock/faults.",
            valueName: "RULE"
        )
    )
    var faults: [String] = []

    @Option(help: "Seed for faults with p=, so that a run can be replayed. (default: random, printed)")
    var seed: UInt64?

    @OptionGroup var build: BuildOptions
    @OptionGroup var deltas: DeltaOptions

    func validate() throws {
        let archives = try splitInputs().archives
        try versions.check(archives: archives.count)
        if (tlsCert == nil) != (tlsKey == nil) {
            throw ValidationError("--tls-cert and --tls-key go together: give both, or use --tls-self-signed")
        }
        if tlsCert != nil && tlsSelfSigned {
            throw ValidationError("choose one of --tls-cert/--tls-key and --tls-self-signed")
        }
        if quiet && jsonLog { throw ValidationError("choose one of --quiet and --json-log") }
        if !tlsName.isEmpty && !tlsSelfSigned {
            throw ValidationError(
                "--tls-name names the --tls-self-signed certificate; with --tls-cert the names come from your certificate"
            )
        }
        guard keepArchives >= 1 else { throw ValidationError("--keep-archives must be 1 or more") }
        if let maxConnections, maxConnections < 1 { throw ValidationError("--max-connections must be 1 or more") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
        if let baseURL { try checkBaseURL(baseURL) }
        for (value, option, positive) in [
            (watchInterval, "--watch-interval", false), (settle, "--settle", false),
            (sendTimeout, "--send-timeout", true),
            (shutdownGrace, "--shutdown-grace", false),
        ] {
            if let problem = secondsProblem(value, option: option, positive: positive) {
                throw ValidationError(problem)
            }
        }
        do {
            _ = try PackVersionPins.parse(packVersions)
        } catch let error as AssetPackServerError {
            throw ValidationError(error.message)
        }
        for fault in faults {
            do {
                _ = try FaultRule(parsing: fault)
            } catch let error as AssetPackServerError {
                throw ValidationError(error.message)
            }
        }
    }

    func run() async throws {
        ProcessTuning.limitAllocatorRetention()
        let options = try serveOptions()
        let events = OutputQueue(.standardError, what: "messages")
        defer { events.flush() }  // what was queued is written before an error (or the end) is printed
        let prepared = Mutex(false)
        do {
            try await MockServer.with(options, log: { events.writeLine($0) }) { server in
                prepared.withLock { $0 = true }
                try await serve(server, events: events)
            }
        } catch let error as AssetPackServerError where error.code == .invalidOption && !prepared.withLock({ $0 }) {
            throw ValidationError(error.message)  // two archives of one pack, a pin or a fault naming no pack
        }
    }

    /// The options as the library takes them.
    func serveOptions() throws -> ServeOptions {
        let (folder, archives) = try splitInputs()
        var options = ServeOptions(folder: folder, archives: archives)
        options.archiveVersions = versions.assetPackVersions
        (options.host, options.port) = (host, port)
        options.tls =
            if let tlsCert, let tlsKey { .files(certificate: tlsCert, key: tlsKey) } else if tlsSelfSigned {
                .selfSigned
            } else { .none }
        (options.tlsFolder, options.tlsNames) = (tlsDir, tlsName)
        options.archivesKept = keepArchives
        options.pinnedVersions = try PackVersionPins.parse(packVersions)
        options.baseURL = baseURL
        options.watchInterval = watchInterval > 0 ? .milliseconds(Int64(watchInterval * 1000)) : nil
        options.settle = .milliseconds(Int64(settle * 1000))
        options.sendTimeout = .milliseconds(Int64(sendTimeout * 1000))
        options.shutdownGrace = .milliseconds(Int64(shutdownGrace * 1000))
        options.maxConnections = maxConnections ?? ServerConfiguration.defaultMaxConnections
        (options.dashboard, options.jsonLog) = (dashboard, jsonLog)
        options.faults = try faults.map(FaultRule.init(parsing:))
        options.seed = seed
        (options.packOptions, options.deltaDepth) = (build.packOptions, deltas.deltaDepth)
        return options
    }
}

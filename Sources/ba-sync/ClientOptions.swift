import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage

/// Where the app group is and how to print: what every ba-sync command takes.
struct AppGroupOptions: ParsableArguments {
    @Option(help: "The app-group directory packs are installed into; created when a pack is. (env: BA_SYNC_APP_GROUP)")
    var appGroup: String?

    @Flag(
        help:
            "Machine-readable output: JSON lines (progress events, then one {\"event\": \"result\"} line; a failure is an {\"event\": \"error\"} line with a code)."
    )
    var json = false

    @Option(
        help: ArgumentHelp(
            "The app's language (a BCP-47 tag: fr, pt-BR, zh-Hant-TW). Localized packs are installed and read for its best match among the packs' languages (en-GB takes an en pack, pt-PT takes pt before pt-BR, zh-TW takes zh-Hant), else --primary-language's; a sync, ensure or reconcile keeps it in the app group, as a device keeps an app's language. (default: BA_SYNC_LANGUAGE, else the language the app group keeps, else the LANGUAGE list, then LC_ALL or LANG, else en)",
            valueName: "tag"
        )
    )
    var language: String?

    @Option(
        help: ArgumentHelp(
            "The app's primary language (Apple's AssetPackManifest.primaryLanguage): its packs are used when no pack matches the app's language. (default: en; env: BA_SYNC_PRIMARY_LANGUAGE)",
            valueName: "tag"
        )
    )
    var primaryLanguage: String?

    @Option(
        help: ArgumentHelp(
            "Which pack a path held by several packs is read from: first (the ID that sorts first), fail (such a read fails, naming the packs), or shuffle[=SEED] (a winner per path drawn from the seed, printed so that a run can be replayed). Apple leaves it undefined.",
            valueName: "rule"
        )
    )
    var collisions: String = "first"

    func validate() throws {
        // Each tag as ClientSettings resolves it, named by where it came from.
        let environment = ProcessInfo.processInfo.environment
        let given = [
            (
                language == nil ? "BA_SYNC_LANGUAGE" : "--language",
                ClientSettings.language(flags, environment: environment)
            ),
            (
                primaryLanguage == nil ? "BA_SYNC_PRIMARY_LANGUAGE" : "--primary-language",
                ClientSettings.primaryLanguage(flags, environment: environment)
            ),
        ]
        for case (let name, let tag?) in given {
            do {
                _ = try LanguageTag(parsing: tag)
            } catch {
                throw ValidationError("\(name) \(tag): the tag \(error); e.g. fr, pt-BR or zh-Hant-TW")
            }
        }
        guard CollisionRule(parsing: collisions) != nil else {
            throw ValidationError(
                "--collisions \(collisions) is not first, fail, shuffle or shuffle=SEED (SEED a whole number from 0 to \(UInt64.max))"
            )
        }
    }

    /// The flags of this group, for ``ClientSettings``.
    var flags: ClientSettings.Flags {
        var flags = ClientSettings.Flags()
        (flags.appGroup, flags.language, flags.primaryLanguage) = (appGroup, language, primaryLanguage)
        return flags
    }

    /// The app's language as given (`--language`, else `BA_SYNC_LANGUAGE`); `nil` leaves it to the app group
    /// and the environment.
    var givenLanguage: LanguageTag? {
        ClientSettings.language(flags, environment: ProcessInfo.processInfo.environment)
            .flatMap { try? LanguageTag(parsing: $0) }
    }

    /// The primary language given (`--primary-language`, else `BA_SYNC_PRIMARY_LANGUAGE`, else en; validated).
    var primary: LanguageTag {
        (try? LanguageTag(
            parsing: ClientSettings.primaryLanguage(flags, environment: ProcessInfo.processInfo.environment)
        )) ?? .english
    }

    /// The collision rule given (a random shuffle seed is drawn here, once).
    var collisionRule: CollisionRule { CollisionRule(parsing: collisions) ?? .first }

    /// Says which seed a random shuffle drew, so that the run can be replayed: a JSON line (the seed as a
    /// string: it does not fit a double) or, when stdout carries a file's bytes or without --json, a line
    /// on stderr.
    func announce(_ rule: CollisionRule, bytesOnStdout: Bool) throws {
        guard case .shuffle(let seed) = rule, !collisions.contains("=") else { return }
        if json && !bytesOnStdout {
            try Console.json(SyncOutput.Collisions(seed: seed))
        } else {
            Console.err("collisions: shuffle with seed \(seed) (replay with --collisions shuffle=\(seed))")
        }
    }

    var appGroupPath: FilePath {
        get throws {
            let path: FilePath?
            do {
                path = try ClientSettings.appGroup(
                    flags,
                    environment: ProcessInfo.processInfo.environment,
                    infoPlist: nil
                )
            } catch {
                throw ValidationError(error.description)
            }
            guard let path else {
                throw ValidationError("no app group: pass --app-group DIR or set BA_SYNC_APP_GROUP")
            }
            return path
        }
    }

    /// Runs an offline command: reads of the app group only, no server, no lock.
    /// - Parameter bytesOnStdout: Whether stdout carries a file's bytes (`cat`): nothing else goes there.
    func read(bytesOnStdout: Bool = false, _ body: (AssetPackReader) throws -> Void) throws {
        let rule = collisionRule
        let root = try appGroupPath  // a usage error is printed by main
        // What is read is what was installed: a folder that does not exist (a mistyped path) has nothing to verify,
        // and "verified 0 files" there would pass a check that looked at nothing.
        guard FileManager.default.fileExists(atPath: root.string) else {
            throw ValidationError(
                "no app group at \(root): nothing was ever installed there (the first install makes it). Fix: check "
                    + "--app-group or BA_SYNC_APP_GROUP"
            )
        }
        let reader = AssetPackReader(
            appGroup: root,
            language: givenLanguage,
            primaryLanguage: primary,
            collisions: rule
        )
        try announce(rule, bytesOnStdout: bytesOnStdout)
        do {
            try body(reader)
        } catch {
            if json, !(error is ExitCode) { Console.jsonError(error) }
            throw error
        }
    }
}

/// How to reach the server: what the commands that talk to it take.
struct ServerOptions: ParsableArguments {
    @Option(
        help:
            "The server's base URL, e.g. http://127.0.0.1:8443: shorthand for --manifest-url <server>/manifest. (env: BA_SYNC_SERVER)"
    )
    var server: String?

    @Option(
        help:
            "The download manifest's full URL, at any path, as Apple's BAManifestURL, e.g. https://cdn.example.com/packs/catalog.json; relative pack URLs resolve against it. (env: BA_SYNC_MANIFEST_URL)"
    )
    var manifestURL: String?

    @Flag(
        help:
            "Fetch plain http from any host. By default only https, and plain http to this machine (127.0.0.0/8, ::1, localhost), are fetched: Background Assets uses HTTPS for all downloads."
    )
    var allowHTTP = false

    @Option(
        help:
            "A PEM CA certificate to trust, e.g. the one `ba-mock serve --tls-self-signed` prints. (env: BA_SYNC_CA_CERT)"
    )
    var caCert: String?

    /// The flags of this group, for ``ClientSettings``.
    var flags: ClientSettings.Flags {
        var flags = ClientSettings.Flags()
        (flags.server, flags.manifestURL, flags.platform, flags.caCertificate) = (server, manifestURL, platform, caCert)
        return flags
    }

    /// The CA certificate to trust: `--ca-cert`, else `BA_SYNC_CA_CERT`.
    var caCertificate: String? { ClientSettings.caCertificate(flags, environment: ProcessInfo.processInfo.environment) }

    @Option(
        help: ArgumentHelp(
            "The platform to play: iOS, macOS, tvOS or visionOS. Packs whose manifest entry lists other platforms are invisible, as on a device; any sees every pack. (default: iOS; env: BA_SYNC_PLATFORM)",
            valueName: "platform"
        )
    )
    var platform: String?

    /// The platform played, `nil` for `any` (every pack): `--platform`, else `BA_SYNC_PLATFORM`, else iOS.
    var playedPlatform: String? { platformSetting.played }

    /// The platform as ``ClientSettings`` resolves it: as given, where from, and played.
    private var platformSetting: (given: String, source: String, played: String?) {
        ClientSettings.platform(flags, environment: ProcessInfo.processInfo.environment)
    }

    @Option(
        help:
            "Retries of a download or the manifest after a transient failure (connection lost, stall, 5xx, 429), with exponential backoff and jitter, honouring Retry-After; a server that refuses the connection fails at once."
    )
    var retries: Int = ClientSettings.defaultRetries

    @Option(
        help:
            "Seconds for a connection attempt and for the whole manifest fetch; a download receiving nothing, or under 1 KiB/s, for this long counts as stalled."
    )
    var timeout: Double = ClientSettings.defaultTimeoutSeconds

    func validate() throws {
        guard retries >= 0 else { throw ValidationError("--retries must be 0 or more") }
        if let problem = secondsProblem(timeout, option: "--timeout", positive: true) { throw ValidationError(problem) }
        let setting = platformSetting
        if let platform = setting.played, !PackagingManifest.knownPlatforms.contains(platform) {
            let option = setting.source == "--platform" ? "--platform " : "\(setting.source)="
            let known = PackagingManifest.knownPlatforms.joined(separator: ", ") + " or any"
            let near =
                platform.lowercased() == "ipados"
                ? "iOS (it covers iPadOS)"
                : PackagingManifest.knownPlatforms.first { $0.lowercased() == platform.lowercased() }
            throw ValidationError(
                "\(option)\(platform) is not one of \(known)" + (near.map { "; did you mean \($0)?" } ?? "")
            )
        }
        if let caCert = caCertificate, !FileManager.default.fileExists(atPath: caCert) {
            throw ValidationError("\(self.caCert == nil ? "BA_SYNC_CA_CERT=" : "--ca-cert ")\(caCert) does not exist")
        }
        if server != nil && manifestURL != nil {
            throw ValidationError(
                "--server and --manifest-url both name the manifest; give one (--server URL means --manifest-url URL/manifest)"
            )
        }
        _ = try location
    }

    /// The server or manifest URL given (``ClientSettings/location(_:environment:infoPlist:)``: the options,
    /// else the environment, a manifest URL first), fetched only over https or loopback http unless
    /// `--allow-http`.
    var location: ClientSettings.Location? {
        get throws {
            let resolved: ClientSettings.Location?
            do {
                resolved = try ClientSettings.location(
                    flags,
                    environment: ProcessInfo.processInfo.environment,
                    infoPlist: nil
                )
            } catch {
                throw ValidationError(error.description)
            }
            guard let resolved else { return nil }
            if let problem = TransportSecurity.problem(with: resolved.manifest, allowHTTP: allowHTTP) {
                throw ValidationError("\(resolved.source): \(problem)")
            }
            return resolved
        }
    }

    /// The server or manifest, which this command needs.
    var requiredLocation: ClientSettings.Location {
        get throws {
            guard let location = try location else {
                throw ValidationError(
                    "no server: pass --server URL (e.g. http://127.0.0.1:8443) or --manifest-url URL, or set "
                        + "BA_SYNC_SERVER or BA_SYNC_MANIFEST_URL"
                )
            }
            return location
        }
    }
}

/// How downloads run: what the commands that install take.
struct DownloadOptions: ParsableArguments {
    @Option(help: "Packs downloaded at once.")
    var concurrency: Int = ClientSettings.defaultConcurrency

    @Flag(
        help:
            "Download each pack into a file before installing it, so that a killed run resumes where it stopped; by default a pack is extracted as it arrives (faster, half the disk writes; a cut connection still resumes within the run)."
    )
    var resumable = false

    @Flag(
        inversion: .prefixedNo,
        help:
            "Update through ba-mock's delta archives (ours, not Apple's: a device downloads whole packs): only the files that changed are downloaded when the manifest lists a delta from the installed version (the whole pack if the delta fails). (default: whole packs, the bytes your users download; env: BA_SYNC_DELTA=1)"
    )
    var delta: Bool?

    @OptionGroup var device: DeviceOptions

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be 1 or more") }
        do {
            _ = try ClientSettings.deltaUpdates(flags, environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The flags of this group, for ``ClientSettings``.
    var flags: ClientSettings.Flags {
        var flags = ClientSettings.Flags()
        flags.deltaUpdates = delta
        return flags
    }

    /// Whether updates go through deltas: `--delta` or `--no-delta`, else `BA_SYNC_DELTA`, else not.
    var deltaUpdates: Bool {
        (try? ClientSettings.deltaUpdates(flags, environment: ProcessInfo.processInfo.environment)) ?? false
    }
}

/// How long to wait for another process: what the commands that change the app group take.
struct LockOptions: ParsableArguments {
    @Option(
        help:
            "Seconds to wait for another ba-sync that holds the app group before giving up. (default: wait until it is done)"
    )
    var lockTimeout: Double?

    func validate() throws {
        if let lockTimeout, let problem = secondsProblem(lockTimeout, option: "--lock-timeout", positive: false) {
            throw ValidationError(problem)
        }
    }
}

/// The runner of one command (``SyncRunner``), made from its option groups.
struct Session {
    let app: AppGroupOptions
    var server: ServerOptions?
    var downloads: DownloadOptions?
    var lock: LockOptions?
    /// Whether the command cannot work without the server.
    var needsServer = true

    /// The runner the options describe.
    /// - Throws: `ValidationError` when no app group (or, when `needsServer`, no server) is given.
    func runner() throws -> SyncRunner {
        let location = needsServer ? try server?.requiredLocation : try server?.location
        var configuration = AssetPackManager.Configuration(
            server: location?.server,
            manifestURL: location?.manifestURL,
            appGroup: try app.appGroupPath
        )
        let timeout = Duration.milliseconds(Int64((server?.timeout ?? ClientSettings.defaultTimeoutSeconds) * 1000))
        configuration.maxConcurrentDownloads = downloads?.concurrency ?? ClientSettings.defaultConcurrency
        configuration.retryPolicy = RetryPolicy(retries: server?.retries ?? ClientSettings.defaultRetries)
        (configuration.manifestTimeout, configuration.stallTimeout) = (timeout, timeout)
        configuration.resumableDownloads = downloads?.resumable ?? false
        configuration.lockTimeout = lock?.lockTimeout.map { .milliseconds(Int64($0 * 1000)) }
        configuration.platform = server.map(\.playedPlatform) ?? ClientSettings.defaultPlatform
        configuration.language = app.givenLanguage?.description
        configuration.primaryLanguage = app.primary.description
        configuration.collisions = app.collisionRule
        configuration.deltaUpdates = downloads?.deltaUpdates ?? false
        configuration.allowInsecureHTTP = server?.allowHTTP ?? false
        configuration.conditions = try downloads?.device.conditions ?? DeviceConditions()
        return SyncRunner(configuration: configuration, json: app.json, caCertificate: server?.caCertificate) {
            $0 is ExitCode
        }
    }
}

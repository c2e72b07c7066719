import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AsyncHTTPClient
import Foundation
import NIOCore
import SystemPackage

/// Options every ba-sync command takes.
struct ClientOptions: ParsableArguments {
    @Option(help: "The server's base URL, e.g. http://127.0.0.1:8443. (env: BA_SYNC_SERVER)")
    var server: String?

    @Option(help: "The app-group directory packs are installed into; created if needed. (env: BA_SYNC_APP_GROUP)")
    var appGroup: String?

    @Option(help: "A PEM CA certificate to trust, e.g. the one `ba-mock serve --tls-self-signed` prints.")
    var caCert: String?

    @Flag(help: "Machine-readable output: JSON (JSON lines for progress).")
    var json = false

    @Option(help: "Packs downloaded at once.")
    var concurrency: Int = 3

    @Option(
        help:
            "Retries of a download or the manifest after a transient failure (connection error, stall, 5xx, 429), with exponential backoff and jitter, honouring Retry-After."
    )
    var retries: Int = 5

    @Option(help: "Seconds without a byte before a connection attempt or a download counts as stalled.")
    var timeout: Double = 30

    @Option(
        help:
            "Seconds to wait for another ba-sync that holds the app group before giving up. (default: wait until it is done)"
    )
    var lockTimeout: Double?

    @Flag(
        help:
            "Download each pack into a file before installing it, so that a killed run resumes where it stopped; by default a pack is extracted as it arrives (faster, half the disk writes; a cut connection still resumes within the run)."
    )
    var resumable = false

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be 1 or more") }
        guard retries >= 0 else { throw ValidationError("--retries must be 0 or more") }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
        if let lockTimeout, lockTimeout < 0 { throw ValidationError("--lock-timeout must be 0 or more seconds") }
    }

    var appGroupPath: FilePath {
        get throws {
            guard let value = appGroup ?? ProcessInfo.processInfo.environment["BA_SYNC_APP_GROUP"], !value.isEmpty
            else {
                throw ValidationError("no app group: pass --app-group DIR or set BA_SYNC_APP_GROUP")
            }
            return FilePath(value)
        }
    }

    var serverURL: URL {
        get throws {
            guard let value = server ?? ProcessInfo.processInfo.environment["BA_SYNC_SERVER"], !value.isEmpty else {
                throw ValidationError("no server: pass --server URL (e.g. http://127.0.0.1:8443) or set BA_SYNC_SERVER")
            }
            guard let url = URL(string: value), let scheme = url.scheme?.lowercased(),
                scheme == "http" || scheme == "https",
                url.host != nil
            else {
                throw ValidationError("--server \(value) is not an http:// or https:// URL")
            }
            return url
        }
    }

    /// Opens the manager, with a client that trusts --ca-cert, and says when another process holds the lock.
    func manager() throws -> (AssetPackManager, HTTPClient) {
        if let caCert, !FileManager.default.fileExists(atPath: caCert) {
            throw ValidationError("--ca-cert \(caCert) does not exist")
        }
        let appGroup = try appGroupPath
        let server = try serverURL
        let milliseconds = Int64(timeout * 1000)
        let client = AssetPackManager.makeHTTPClient(
            trusting: caCert,
            connectTimeout: .milliseconds(min(milliseconds, 5000)),
            readTimeout: .milliseconds(milliseconds)
        )
        let manager: AssetPackManager
        do {
            manager = try AssetPackManager(
                server: server,
                appGroup: appGroup,
                client: client,
                maxConcurrentDownloads: concurrency,
                retryPolicy: RetryPolicy(retries: retries),
                manifestTimeout: .milliseconds(milliseconds),
                stallTimeout: .milliseconds(milliseconds),
                resumableDownloads: resumable,
                lockTimeout: lockTimeout.map { .milliseconds(Int64($0 * 1000)) }
            ) { holder in
                let who = holder.map { "ba-sync (pid \($0))" } ?? "another ba-sync"
                Console.err("waiting for \(who), which holds \(appGroup)/.ba-sync/lock")
            }
        } catch {
            try? client.syncShutdown()
            throw error
        }
        return (manager, client)
    }

    /// Runs `body` with a manager and shows its downloads, then shuts the HTTP client down. Every update is
    /// shown before the command prints its result.
    func run<T: Sendable>(_ body: (AssetPackManager) async throws -> T) async throws -> T {
        let (manager, client) = try manager()
        let progress = ConsoleProgress(json: json)
        let updates = manager.statusUpdates
        let printer = Task { for await update in updates { progress.show(update) } }
        let result: Result<T, any Error>
        do {
            result = .success(try await body(manager))
        } catch {
            result = .failure(error)
        }
        manager.finishStatusUpdates()
        await printer.value
        progress.flush()
        try? await client.shutdown()
        if case .failure(let error) = result, json { Console.jsonError(error) }
        return try result.get()
    }
}

extension ClientOptions {
    /// Runs an offline command: reads of the app group only, no server.
    func offline(_ body: (AssetPackReader) throws -> Void) throws {
        do {
            try body(AssetPackReader(appGroup: try appGroupPath))
        } catch {
            if json { Console.jsonError(error) }
            throw error
        }
    }
}

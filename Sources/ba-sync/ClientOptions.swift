import ArgumentParser
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

    @Flag(
        help:
            "Download each pack into a file before installing it, so that a killed run resumes where it stopped; by default a pack is extracted as it arrives (faster, half the disk writes; a cut connection still resumes within the run)."
    )
    var resumable = false

    func validate() throws {
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be 1 or more") }
        guard retries >= 0 else { throw ValidationError("--retries must be 0 or more") }
        guard timeout > 0 else { throw ValidationError("--timeout must be more than 0 seconds") }
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
                stallTimeout: .milliseconds(milliseconds),
                resumableDownloads: resumable
            ) { holder in
                let who = holder.map { "ba-sync (pid \($0))" } ?? "another ba-sync"
                Output.err("waiting for \(who), which holds \(appGroup)/.ba-sync/lock")
            }
        } catch {
            try? client.syncShutdown()
            throw error
        }
        return (manager, client)
    }

    /// Runs `body` with a manager and shows its downloads, then shuts the HTTP client down.
    func run<T: Sendable>(_ body: (AssetPackManager) async throws -> T) async throws -> T {
        let (manager, client) = try manager()
        let progress = ConsoleProgress(json: json)
        let updates = manager.statusUpdates
        let printer = Task { for await update in updates { progress.show(update) } }
        defer { printer.cancel() }
        do {
            let result = try await body(manager)
            try? await Task.sleep(for: .milliseconds(20))  // let the last updates print
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            if json { Output.jsonError(error) }
            throw error
        }
    }
}

extension ClientOptions {
    /// Runs an offline command (reads of the app group only; the server is never asked).
    func offline(_ body: (AssetPackManager) throws -> Void) throws {
        do {
            let offline = URL(fileURLWithPath: "/dev/null")  // never used: nothing here talks to a server
            try body(try AssetPackManager(server: offline, appGroup: try appGroupPath))
        } catch {
            if json { Output.jsonError(error) }
            throw error
        }
    }
}

/// Output helpers: lines to stdout and stderr, JSON to stdout.
enum Output {
    static func out(_ line: String) {
        _ = try? FileDescriptor.standardOutput.writeAll(Array((line + "\n").utf8))
    }

    static func err(_ line: String) {
        _ = try? FileDescriptor.standardError.writeAll(Array((line + "\n").utf8))
    }

    static func json(_ object: Any) {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object,
                options: [.sortedKeys, .withoutEscapingSlashes]
            )
        else { return }
        _ = try? FileDescriptor.standardOutput.writeAll(Array(data) + [UInt8(ascii: "\n")])
    }

    /// An error as one JSON line on stdout, for scripts that read `--json` output only.
    static func jsonError(_ error: any Error) {
        var object: [String: Any] = ["event": "error", "message": "\(error)"]
        if let error = error as? AssetPackClientError {
            object["code"] = error.code.rawValue
            if let id = error.assetPackID { object["pack"] = id }
        }
        json(object)
    }

    /// Rewrites one status line on a terminal's stderr; `nil` clears it.
    static func progress(_ line: String?) {
        let text = "\r\u{1B}[K" + (line ?? "")
        _ = try? FileDescriptor.standardError.writeAll(Array(text.utf8))
    }

    /// Fixed-width columns.
    static func table(_ rows: [[String]]) {
        guard let first = rows.first else { return }
        let widths = first.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            out(
                row.enumerated().map { column, cell in
                    column == row.count - 1 ? cell : cell + String(repeating: " ", count: widths[column] - cell.count)
                }.joined(separator: "  ")
            )
        }
    }
}

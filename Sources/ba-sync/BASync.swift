import ArgumentParser
import AssetPackCLI

@main
struct BASync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ba-sync",
        abstract: "Mirror asset packs from a server into an app-group directory, as AssetPackManager does on a device.",
        discussion: """
            --server, --manifest-url, --app-group, --platform and --delta may also come from BA_SYNC_SERVER, \
            BA_SYNC_MANIFEST_URL, BA_SYNC_APP_GROUP, BA_SYNC_PLATFORM and BA_SYNC_DELTA. It plays an iOS device \
            (--platform any sees every pack) that downloads whole packs (--delta uses ba-mock's deltas). Packs and manifests are fetched over https, or plain http to this machine only, \
            unless --allow-http is given (Background Assets uses HTTPS for all downloads).
            Offline (no server needed): status (reports what the app group knows), remove, cat, url, verify, bench.
            upgrade-matrix serves the releases it is given itself, and plays every update between them.
            With --json every command prints JSON lines and ends with one {"event": "result"} line; a failure \
            is an {"event": "error", "code", "message"} line.
            Exit codes: 0 done; 1 failed (the message names the pack, URL and cause; what was installed \
            before is kept); 2 an essential pack failed for good during sync (the app launches without it and \
            must call ensureLocalAvailability); 64 bad usage.
            """,
        version: ToolVersion.current,
        subcommands: [
            List.self, Sync.self, Ensure.self, CheckUpdates.self, Reconcile.self, Remove.self, Status.self, Cat.self,
            URLCommand.self, Verify.self, Bench.self, UpgradeMatrixCommand.self,
        ]
    )

    // Declared here too, so that the options may come before the subcommand as well as after it
    // (`ba-sync --server URL --app-group DIR list`).
    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    /// Runs the command; with `--json`, a usage error is also a `{"event": "error", "code": "usage"}` line on
    /// stdout, as every other failure is, so that a script reading stdout alone learns why nothing happened.
    static func main() async {
        let json = CommandLine.arguments.dropFirst().contains("--json")
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch {
            if json,
                error is ValidationError
                    || !(error is ExitCode || error is CleanExit) && exitCode(for: error) == .validationFailure
            {
                do {
                    try Console.json(SyncOutput.Error(code: "usage", message: message(for: error)))
                } catch {
                    Console.err("error: the usage error could not be written as JSON: \(error)")
                }
            }
            exit(withError: error)
        }
    }
}

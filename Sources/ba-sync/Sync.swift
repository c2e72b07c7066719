import ArgumentParser
import AssetPackCLI
import AssetPackClient

extension InstallationEvent: ExpressibleByArgument {}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Do what the system does on an event: install, update or periodic.",
        discussion: """
            install: essential then prefetch packs whose installationEventTypes include firstInstallation. \
            update: packs with subsequentUpdate, plus updates of installed packs, and removal of obsolete ones. \
            periodic: checkForUpdates(). Exits 2 when an essential pack failed (the app would not launch).
            """
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    @Option(help: "The event: install, update or periodic.")
    var event: InstallationEvent = .install

    func run() async throws {
        let event = self.event
        var (app, server) = (self.app, self.server)
        let limits = try await plist.apply(to: &app, server: &server)
        let (report, shown) = try await Session(app: app, server: server, downloads: downloads, lock: lock).run {
            manager in
            if let limits { try await manager.enforceInitialDownloadLimits(limits, for: .event(event)) }
            return try await manager.sync(event: event)
        }
        if app.json {
            Console.json([
                "event": "result", "installed": report.installed, "alreadyLocal": report.alreadyLocal,
                "removed": report.removed, "essentialFailed": report.essentialFailed,
                "failures": report.failures.mapValues(Session.failure),
            ])
        } else {
            if !report.installed.isEmpty { Console.out("installed: \(report.installed.joined(separator: ", "))") }
            if !report.alreadyLocal.isEmpty {
                Console.out("already local: \(report.alreadyLocal.joined(separator: ", "))")
            }
            if !report.removed.isEmpty { Console.out("removed (obsolete): \(report.removed.joined(separator: ", "))") }
            // A failure the progress showed is not repeated; one it could not show (before any download) is.
            for (id, error) in report.failures.sorted(by: { $0.key < $1.key }) {
                Console.err(shown.contains(id) ? "failed: \(id) (above)" : "failed: \(id): \(error)")
            }
        }
        if report.essentialFailed { throw ExitCode(2) }
        if !report.failures.isEmpty { throw ExitCode.failure }
    }
}

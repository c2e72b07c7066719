import ArgumentParser
import AssetPackCLI
import AssetPackClient

extension InstallationEvent: ExpressibleByArgument {}

/// The App Store setting "in-app content": off, the system downloads no essential pack and runs no extension
/// before launch.
enum InAppContent: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Do what the system does on an event: install, update or periodic.",
        discussion: """
            install: essential then prefetch packs whose installationEventTypes include firstInstallation. \
            update: packs with subsequentUpdate, plus updates of installed packs, and removal of obsolete ones. \
            periodic: checkForUpdates(). An essential pack that fails for good does not block launch (the system \
            stops blocking it): the app launches without it and must call ensureLocalAvailability itself \
            (`ba-sync ensure ID`); exit code 2 says so. --in-app-content off plays a user who turned in-app \
            content off in App Store settings: nothing is downloaded by policy.
            """
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    @Option(help: "The event: install, update or periodic.")
    var event: InstallationEvent = .install

    @Option(
        help:
            "The App Store setting for in-app content: off downloads no essential or prefetch pack on install or update (no extension runs before launch); the app's own ensure still works. (default: on)"
    )
    var inAppContent: InAppContent = .on

    func run() async throws {
        let event = self.event
        let inAppContent = self.inAppContent == .on
        var (app, server) = (self.app, self.server)
        let limits = try await plist.apply(to: &app, server: &server)
        let (report, shown) = try await Session(app: app, server: server, downloads: downloads, lock: lock).runner()
            .sync(event: event, inAppContent: inAppContent, limits: limits)
        if app.json {
            try Console.json(SyncOutput.Sync(report))
        } else {
            if !report.installed.isEmpty { Console.out("installed: \(report.installed.joined(separator: ", "))") }
            if !report.alreadyLocal.isEmpty {
                Console.out("already local: \(report.alreadyLocal.joined(separator: ", "))")
            }
            if !report.removed.isEmpty { Console.out("removed (obsolete): \(report.removed.joined(separator: ", "))") }
            if report.installed.isEmpty, report.alreadyLocal.isEmpty, report.removed.isEmpty, report.failures.isEmpty {
                // Silence would read as "did not run": say why nothing came.
                Console.out(
                    inAppContent
                        ? "nothing downloaded: no pack's download policy asks for one on \(event.rawValue)"
                        : "nothing downloaded: in-app content is off, so no essential or prefetch pack comes by policy "
                            + "(ensure ID still does)"
                )
            }
            // A failure the progress showed is not repeated; one it could not show (before any download) is.
            for (id, error) in report.failures.sorted(by: { $0.key < $1.key }) {
                Console.err(shown.contains(id) ? "failed: \(id) (above)" : "failed: \(id): \(error)")
            }
            for id in report.launchesWithout {
                Console.err(
                    "the app launches without \(id): its essential download failed for good, so the system stops "
                        + "blocking launch; the app must call ensureLocalAvailability itself (`ba-sync ensure \(id)`)"
                )
            }
        }
        if report.essentialFailed { throw ExitCode(2) }
        if !report.failures.isEmpty { throw ExitCode.failure }
    }
}

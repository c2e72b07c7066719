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

    @OptionGroup var options: ClientOptions

    @Option(help: "The event: install, update or periodic.")
    var event: InstallationEvent = .install

    func run() async throws {
        let event = self.event
        let report = try await options.run { manager in try await manager.sync(event: event) }
        if options.json {
            Console.json([
                "event": "result", "installed": report.installed, "alreadyLocal": report.alreadyLocal,
                "removed": report.removed, "essentialFailed": report.essentialFailed,
                "failures": report.failures.mapValues { $0.description },
            ])
        } else {
            if !report.installed.isEmpty { Console.out("installed: \(report.installed.joined(separator: ", "))") }
            if !report.alreadyLocal.isEmpty {
                Console.out("already local: \(report.alreadyLocal.joined(separator: ", "))")
            }
            if !report.removed.isEmpty { Console.out("removed (obsolete): \(report.removed.joined(separator: ", "))") }
            for (id, error) in report.failures.sorted(by: { $0.key < $1.key }) {
                Console.err("failed: \(id): \(error)")
            }
        }
        if report.essentialFailed { throw ExitCode(2) }
        if !report.failures.isEmpty { throw ExitCode.failure }
    }
}

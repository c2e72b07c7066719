import ArgumentParser
import AssetPackCLI
import AssetPackClient
import AssetPackFormat

struct Reconcile: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reconcile",
        abstract: "reconcilePreferredLanguages(): make the localized packs follow --language.",
        discussion: """
            Resolves --language to its best match among the packs' languages (else --primary-language), \
            downloads the essential and prefetch localized packs of that language that are missing, waits for \
            them, then removes the localized packs of other languages that a sync or reconcile installed; one \
            installed by `ensure` stays, as Apple's "won't remove any localized asset packs that you've \
            downloaded manually" (on-demand ones of the new language are downloaded when ensured). When a \
            download fails, nothing is removed: the app keeps its language.
            """
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    func run() async throws {
        var (app, server) = (self.app, self.server)
        _ = try await plist.apply(to: &app, server: &server)
        let (result, shown) = try await Session(app: app, server: server, downloads: downloads, lock: lock).runner()
            .reconcile()
        if app.json {
            try Console.json(result)
        } else if let failures = result.failures {
            for (id, failure) in failures.sorted(by: { $0.key < $1.key }) {
                Console.err(shown.contains(id) ? "failed: \(id) (above)" : "failed: \(id): \(failure.message)")
            }
            Console.err("nothing removed: the packs of the languages installed before stay")
        } else {
            Console.out("language: \(result.language)")
            Console.out("downloaded: \(result.downloaded.isEmpty ? "none" : result.downloaded.joined(separator: ", "))")
            Console.out("removed: \(result.removed.isEmpty ? "none" : result.removed.joined(separator: ", "))")
            let local = result.locallyAvailableLanguages ?? []
            Console.out("local languages: \(local.isEmpty ? "none" : local.joined(separator: ", "))")
        }
        if result.failures != nil { throw ExitCode.failure }
    }
}

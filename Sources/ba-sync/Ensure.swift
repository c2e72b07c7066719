import ArgumentParser
import AssetPackCLI
import AssetPackClient
import Foundation

struct Ensure: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make packs local: ensureLocalAvailability(of:requireLatestVersion:).",
        discussion: "Returns at once for packs already installed (unless --latest finds a newer version)."
    )

    @OptionGroup var app: AppGroupOptions
    @OptionGroup var server: ServerOptions
    @OptionGroup var downloads: DownloadOptions
    @OptionGroup var lock: LockOptions
    @OptionGroup var plist: InfoPlistOptions

    @Argument(help: "Pack IDs, e.g. HighResTextures.")
    var ids: [String]

    @Flag(help: "Also download a newer version when the server has one.")
    var latest = false

    func validate() throws {
        guard !ids.isEmpty else { throw ValidationError("name at least one pack ID; `ba-sync list` shows them") }
    }

    func run() async throws {
        var seen: Set<String> = []
        let ids = self.ids.filter { seen.insert($0).inserted }  // `ensure Levels Levels` is one pack
        let latest = self.latest
        var (app, server) = (self.app, self.server)
        let limits = try await plist.apply(to: &app, server: &server)
        let (failures, shown) = try await Session(app: app, server: server, downloads: downloads, lock: lock).run {
            manager -> [AssetPack: AssetPackClientError] in
            if let limits { try await manager.enforceInitialDownloadLimits(limits, for: .packs(ids)) }
            do {
                try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ids, requireLatestVersions: latest)
                return [:]
            } catch let error as AssetPackManager.LocalAvailabilityError {
                return error.failures
            }
        }
        let failed = Set(failures.keys.map(\.id))
        if app.json {
            try Console.json(SyncOutput.Ensure(ids: ids, failures: failures))
        } else {
            let ok = ids.filter { !failed.contains($0) }
            if !ok.isEmpty { Console.out("local: \(ok.joined(separator: ", "))") }
            for (pack, failure) in failures.sorted(by: { $0.key.id < $1.key.id }) {
                Console.err(shown.contains(pack.id) ? "failed: \(pack.id) (above)" : "failed: \(pack.id): \(failure)")
            }
        }
        if !failures.isEmpty { throw ExitCode.failure }
    }
}

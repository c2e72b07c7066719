import AssetPackCLI
import AssetPackClient
import Foundation
import SystemPackage
import TestSupport
import Testing

/// `ba-sync`'s commands as library calls (``SyncRunner``): what each returns is what the tool prints as JSON,
/// checked here without a process, against a real server on loopback.
@Suite("ba-sync's commands as library calls")
struct SyncRunnerTests {
    func runner(_ server: LiveServer, _ appGroup: FilePath) -> SyncRunner {
        var configuration = AssetPackManager.Configuration(server: URL(string: server.url)!, appGroup: appGroup)
        configuration.platform = "iOS"
        return SyncRunner(configuration: configuration, json: true)
    }

    @Test func listEnsureStatusRemoveAndSyncReturnWhatTheToolPrints() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("AppGroup")
        try await LiveServer.with(folder: scratch.root) { server in
            let runner = runner(server, appGroup)
            let list = try await runner.list()
            // Textures is for visionOS only in the sample: invisible to the iOS played here, as on a device.
            #expect(list.platform == "iOS" && list.packs.map(\.id).sorted() == ["Levels", "Tutorial"])
            #expect(list.packs.allSatisfy { $0.installedVersion == nil && $0.status == ["downloadAvailable"] })

            let (ensured, shown) = try await runner.ensure(["Tutorial"], latest: false, limits: nil)
            #expect(ensured.ok == ["Tutorial"] && ensured.failures.isEmpty && shown.isEmpty)
            let status = try #require(try await runner.status(of: "Tutorial"))
            #expect(status.online && status.packs.map(\.id) == ["Tutorial"])
            #expect(status.packs.first?.installed?.version == 1 && status.primaryLanguage == "en")
            #expect(try await runner.status(of: "Nowhere") == nil, "neither installed nor on the server")

            #expect(try await runner.checkUpdates() == SyncOutput.CheckUpdates(updating: [], removed: []))
            #expect(try await runner.remove("Tutorial").removed == "Tutorial")
            let error = await #expect(throws: AssetPackClientError.self) { try await runner.remove("Tutorial") }
            #expect(error?.code == .assetPackNotFound)
            #expect(try await runner.status(of: nil)?.packs.isEmpty == true)

            let (report, _) = try await runner.sync(event: .install, inAppContent: true, limits: nil)
            #expect(report.installed == ["Levels", "Tutorial"] && report.failures.isEmpty)
            // No localized pack in the sample: nothing to download or remove, no failure.
            let (reconciled, _) = try await runner.reconcile()
            #expect(reconciled.language == "none" && reconciled.downloaded.isEmpty && reconciled.removed.isEmpty)
            #expect(reconciled.failures == nil && reconciled.locallyAvailableLanguages == [])
        }
    }

    @Test func aRunnerWithoutAServerStillReadsStatusOffline() async throws {
        let scratch = try Scratch()
        let runner = SyncRunner(configuration: .init(server: nil, appGroup: scratch.root.appending("AppGroup")))
        let status = try #require(try await runner.status(of: nil))
        #expect(status.packs.isEmpty && status.resolvedLanguage == nil)
        await #expect(throws: AssetPackClientError.self) { _ = try await runner.list() }
    }
}

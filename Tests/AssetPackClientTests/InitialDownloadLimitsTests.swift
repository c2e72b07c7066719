import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

/// The Info.plist's limits stop a first install that goes over them, as a device does, and nothing after it.
@Suite("Initial download limits")
struct InitialDownloadLimitsTests {
    /// A self-hosted plist whose limits are all far above the sample packs, for a test to lower one.
    static func roomy() -> AppInfoPlist {
        AppInfoPlist(
            appGroupID: "group.com.example.game",
            hasManagedAssetPacks: true,
            manifestURL: "http://127.0.0.1/manifest",
            initialDownloadRestrictions: .init(
                downloadAllowance: 1 << 40,
                essentialDownloadAllowance: 1 << 40,
                domainAllowList: ["127.0.0.1"]
            ),
            essentialMaxInstallSize: 1 << 40,
            maxInstallSize: 1 << 40
        )
    }

    func withSample(_ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> Void) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: scratch.root.appending("AppGroup"))
            )
            try await body(server, manager, scratch)
        }
    }

    @Test func anEssentialInstallSizeOverTheLimitStopsTheFirstInstallOnly() async throws {
        try await withSample { server, manager, _ in
            let tutorial = try #require(try await server.manifest().assetPacks.first { $0.id == "Tutorial" })
            let installSize = try #require(tutorial.installSize)
            var plist = Self.roomy()
            plist.essentialMaxInstallSize = installSize - 1
            let limits = InitialDownloadLimits(plist)
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.enforceInitialDownloadLimits(limits, for: .event(.install))
            }
            #expect(error?.code == .downloadWouldExceedAllowance)
            #expect(
                error?.message
                    == "the first install stopped before downloading anything, by the Info.plist's "
                    + "BAEssentialMaxInstallSize: the essential packs take \(ByteFormat.string(installSize)) "
                    + "(\(installSize) bytes) installed, over the \(ByteFormat.string(installSize - 1)) (\(installSize - 1) "
                    + "bytes) it allows: Tutorial \(ByteFormat.string(installSize)). Fix: raise "
                    + "BAEssentialMaxInstallSize to \(installSize) or more, or make those packs smaller or fewer (a "
                    + "device enforces these limits at the first install only)"
            )
            #expect(try manager.store.loadState().installed.isEmpty)
            // Within the limit it applies and lets the install go on; once a pack is installed it no longer applies.
            #expect(
                try await manager.enforceInitialDownloadLimits(
                    InitialDownloadLimits(Self.roomy()),
                    for: .event(.install)
                )
            )
            _ = try await manager.sync(event: .install)
            #expect(try await manager.enforceInitialDownloadLimits(limits, for: .event(.install)) == false)
        }
    }

    @Test func theManifestCountsWithTheEssentialPacks() async throws {
        try await withSample { server, manager, _ in
            let manifestBytes = Int64(try await server.get("/manifest").body.count)
            let tutorial = try #require(try await server.manifest().assetPacks.first { $0.id == "Tutorial" })
            var plist = Self.roomy()
            plist.initialDownloadRestrictions?.essentialDownloadAllowance = tutorial.downloadSize + manifestBytes
            #expect(try await manager.enforceInitialDownloadLimits(InitialDownloadLimits(plist), for: .event(.install)))
            plist.initialDownloadRestrictions?.essentialDownloadAllowance = tutorial.downloadSize + manifestBytes - 1
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.enforceInitialDownloadLimits(InitialDownloadLimits(plist), for: .event(.install))
            }
            #expect(error?.code == .downloadWouldExceedAllowance)
            #expect(error?.message.contains("BAInitialDownloadRestrictions.BAEssentialDownloadAllowance") == true)
            #expect(error?.message.contains("with the manifest's \(ByteFormat.string(manifestBytes))") == true)
        }
    }

    @Test func ensureCountsTheNamedPacksAgainstTheDownloadAllowance() async throws {
        try await withSample { server, manager, _ in
            let textures = try #require(try await server.manifest().assetPacks.first { $0.id == "Textures" })
            var plist = Self.roomy()
            plist.initialDownloadRestrictions?.downloadAllowance = textures.downloadSize - 1
            let limits = InitialDownloadLimits(plist)
            // Sync at install does not download the on-demand pack, so it is within the limit; an update or a
            // periodic check is no first install.
            #expect(try await manager.enforceInitialDownloadLimits(limits, for: .event(.install)))
            var tight = plist
            tight.initialDownloadRestrictions?.essentialDownloadAllowance = 0
            for event in [InstallationEvent.update, .periodic] {
                #expect(
                    try await manager.enforceInitialDownloadLimits(InitialDownloadLimits(tight), for: .event(event))
                        == false
                )
            }
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.enforceInitialDownloadLimits(limits, for: .packs(["Textures"]))
            }
            #expect(error?.code == .downloadWouldExceedAllowance)
            #expect(error?.message.contains("BAInitialDownloadRestrictions.BADownloadAllowance") == true)
            #expect(error?.message.contains("Textures \(ByteFormat.string(textures.downloadSize))") == true)
        }
    }

    @Test func aHostOutsideTheAllowListStopsTheFirstInstall() async throws {
        try await withSample { _, manager, _ in
            var plist = Self.roomy()
            plist.initialDownloadRestrictions?.domainAllowList = ["*.example.com", "127.0.0.2"]
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.enforceInitialDownloadLimits(InitialDownloadLimits(plist), for: .event(.install))
            }
            #expect(error?.code == .downloadDisallowedByDomain)
            #expect(
                error?.message.contains(
                    "does not allow 127.0.0.1 (manifest from 127.0.0.1, Levels from 127.0.0.1, Tutorial from 127.0.0.1); "
                        + "it allows *.example.com, 127.0.0.2"
                ) == true,
                "\(error?.message ?? "")"
            )
        }
    }
}

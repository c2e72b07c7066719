import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackCLI
@testable import AssetPackClient

/// `ba-sync --json` and `ba-mock --json` shapes as the README's "JSON output" section documents them: the
/// small ones byte for byte, `list` and `status` key by key on a real app group (the digests differ per run).
@Suite("CLI JSON shapes")
struct CLIJSONShapeTests {
    func text(_ value: some Encodable) throws -> String { try JSONOutput.line(value) }

    func object(_ value: some Encodable) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: JSONOutput.data(value)) as? [String: Any])
    }

    let failure = AssetPackClientError(code: .digestMismatch, message: "digest", assetPackID: "Levels")

    @Test func errorsAndFailures() throws {
        #expect(
            try text(SyncOutput.Error(failure))
                == #"{"code":"digestMismatch","event":"error","message":"digest","pack":"Levels"}"#
        )
        #expect(
            try text(SyncOutput.Error(code: "usage", message: "no"))
                == #"{"code":"usage","event":"error","message":"no"}"#
        )
        #expect(
            try text(SyncOutput.Error(ManagedBackgroundAssetsError.assetPackNotFound(withID: "X")))
                .hasPrefix(#"{"code":"assetPackNotFound","event":"error","message":"#)
        )
        #expect(
            try text(SyncOutput.Collisions(seed: .max))
                == #"{"event":"collisions","rule":"shuffle","seed":"18446744073709551615"}"#
        )
    }

    @Test func commandResults() throws {
        var report = SyncReport()
        report.installed = ["Tutorial"]
        report.failures = ["Levels": failure]
        #expect(
            try text(SyncOutput.Sync(report))
                == #"{"alreadyLocal":[],"essentialFailed":false,"event":"result","failures":{"Levels":{"code":"digestMismatch","message":"digest"}},"installed":["Tutorial"],"launchesWithout":[],"removed":[]}"#
        )
        #expect(
            try text(SyncOutput.Ensure(ids: ["B", "A"], failures: [:]))
                == #"{"event":"result","failures":{},"ok":["A","B"]}"#
        )
        var reconciled = LanguageReconciliation()
        reconciled.downloaded = ["Strings-fr"]
        #expect(
            try text(SyncOutput.Reconcile(language: "fr", reconciled))
                == #"{"downloaded":["Strings-fr"],"event":"result","language":"fr","locallyAvailableLanguages":[],"removed":[]}"#
        )
        #expect(
            try text(SyncOutput.CheckUpdates(updating: ["B", "A"], removed: []))
                == #"{"event":"result","removedIDs":[],"updatingIDs":["A","B"]}"#
        )
        #expect(try text(SyncOutput.Remove(removed: "Levels")) == #"{"event":"result","removed":"Levels"}"#)
        #expect(
            try text(SyncOutput.FileURL(path: "Über/a.json", url: "file:///g/a.json", assetPackID: nil))
                == #"{"assetPackID":null,"event":"result","exists":false,"path":"Über/a.json","url":"file:///g/a.json"}"#
        )
        #expect(
            try text(MockOutput.Validation(FolderValidation.Report(problems: [], manifests: 3, packs: 2, files: 9)))
                == #"{"checked":{"files":9,"manifests":3,"packs":2},"ok":true,"problems":[]}"#
        )
        let published = Publisher.Report(
            manifest: "s3://b/p/manifest",
            manifestURL: nil,
            endpoint: "http://127.0.0.1:9000",
            dryRun: true,
            steps: [
                Publisher.Step(
                    kind: .pack,
                    key: "p/packs/A/2-ab",
                    id: "A",
                    version: 2,
                    bytes: 5,
                    sha256: "ab",
                    action: .keep
                ),
                Publisher.Step(kind: .manifest, key: "p/manifest", bytes: 7, sha256: "cd"),
            ]
        )
        #expect(
            try text(published)
                == #"{"deletedBytes":0,"dryRun":true,"endpoint":"http://127.0.0.1:9000","manifest":"s3://b/p/manifest","manifestChanged":true,"#
                + #""steps":[{"action":"keep","bytes":5,"id":"A","key":"p/packs/A/2-ab","kind":"pack","sha256":"ab","version":2},"#
                + #"{"action":"upload","bytes":7,"key":"p/manifest","kind":"manifest","sha256":"cd"}],"uploadedBytes":7}"#
        )
    }

    @Test func progressLinesCarryTheirEventsKeysBesideEventAndPack() throws {
        #expect(
            try text(ProgressLine(event: "began", pack: "L", details: ProgressDetails.None()))
                == #"{"event":"began","pack":"L"}"#
        )
        #expect(
            try text(ProgressLine(event: "finished", pack: "L", details: ProgressDetails.Finished(deltaFrom: nil)))
                == #"{"deltaFrom":null,"event":"finished","pack":"L"}"#
        )
        #expect(
            try text(
                ProgressLine(
                    event: "delta",
                    pack: "L",
                    details: ProgressDetails.Delta(fromVersion: 1, fileCount: nil, downloadSize: 5, fullSize: 9)
                )
            ) == #"{"downloadSize":5,"event":"delta","fileCount":null,"fromVersion":1,"fullSize":9,"pack":"L"}"#
        )
        #expect(
            try text(WaitingLine(lock: "/g/.ba-sync/lock", holderPID: nil))
                == #"{"event":"waiting","lock":"/g/.ba-sync/lock"}"#
        )
    }

    /// `list` and `status` on an app group with one pack installed: every key, `null` where nothing applies.
    @Test func listAndStatusOnARealAppGroup() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let appGroup = scratch.root.appending("group")
        try await LiveServer.with(folder: scratch.root) { server in
            let manager = try AssetPackManager(
                configuration: .init(server: URL(string: server.url)!, appGroup: appGroup)
            )
            try await manager.ensureLocalAvailability(ofAssetPacksWithIDs: ["Tutorial"])
            let list = try object(
                SyncOutput.List(
                    entries: try await manager.statusOfAllAssetPacks(),
                    manifest: try await manager.manifest,
                    platform: "iOS"
                )
            )
            #expect(
                Set(list.keys) == [
                    "event", "resolvedLanguage", "language", "primaryLanguage", "platform", "availableLanguages",
                    "packs",
                ]
            )
            #expect(list["resolvedLanguage"] is NSNull && list["platform"] as? String == "iOS")
            let packs = try #require(list["packs"] as? [[String: Any]])
            #expect(packs.compactMap { $0["id"] as? String }.sorted() == ["Levels", "Textures", "Tutorial"])
            for pack in packs {
                #expect(
                    Set(pack.keys) == [
                        "id", "version", "downloadPolicy", "downloadSize", "installSize", "fileCount", "sha256",
                        "language", "platforms", "forResolvedLanguage", "installedVersion", "status", "statusRawValue",
                    ]
                )
                #expect(pack["language"] is NSNull)
                #expect((pack["installedVersion"] is NSNull) == (pack["id"] as? String != "Tutorial"))
            }
            let status = try object(
                SyncOutput.Status(
                    try await manager.statusReport(),
                    language: AppLanguage(manager.reader)
                )
            )
            #expect(
                Set(status.keys) == ["event", "online", "packs", "language", "resolvedLanguage", "primaryLanguage"]
            )
            let rows = try #require(status["packs"] as? [[String: Any]])
            let tutorial = try #require(rows.first { $0["id"] as? String == "Tutorial" })
            #expect(
                Set(tutorial.keys) == [
                    "id", "status", "statusRawValue", "path", "version", "installSize", "fileCount", "downloadPolicy",
                    "language", "installedFor", "sha256", "archiveDigestVerified", "fileDigestsCarried",
                ]
            )
            #expect(tutorial["language"] is NSNull && tutorial["installedFor"] is NSNull)
            #expect(tutorial["archiveDigestVerified"] as? Bool == true)
        }
    }
}

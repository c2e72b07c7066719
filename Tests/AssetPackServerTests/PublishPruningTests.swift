import AssetPackFormat
import Foundation
import Testing

@testable import AssetPackServer

/// Which old versions `publish --keep` deletes: the rule alone, on a hand-made release log.
@Suite("publish: pruning old versions")
struct PublishPruningTests {
    let start = Date(timeIntervalSince1970: 1_795_800_000)

    func object(_ key: String, _ modified: Date) -> Publisher.ListedObject {
        Publisher.ListedObject(key: key, size: 10, lastModified: modified)
    }

    /// Three releases an hour apart; the third is the one being published.
    var log: Publisher.ReleaseLog {
        Publisher.ReleaseLog(releases: [
            .init(publishedAt: start, manifestSHA256: "1", keys: ["g/packs/A/1-a", "g/packs/B/1-b"]),
            .init(publishedAt: start + 3600, manifestSHA256: "2", keys: ["g/packs/A/2-a", "g/packs/B/1-b"]),
            .init(publishedAt: start + 7200, manifestSHA256: "3", keys: ["g/packs/A/3-a", "g/packs/B/1-b"]),
        ])
    }

    var listed: [Publisher.ListedObject] {
        [
            object("g/packs/A/1-a", start), object("g/packs/A/2-a", start + 3600),
            object("g/packs/A/3-a", start + 7200),
            object("g/packs/B/1-b", start), object("g/deltas/A/3-from-1-d", start - 86_400),
            object("g/packs/C/1-interrupted", start + 7100), object("g/manifest", start + 7200),
            object("g/releases.json", start), object("g/other/notes.txt", start - 86_400),
            object("gx/packs/A/1-a", start - 86_400),
        ]
    }

    func deleted(keep: Int, grace: Duration, protected: Set<String> = [], at now: Date) -> [String] {
        Publisher.pruning(listed, log: log, protected: protected, prefix: "g", keep: keep, grace: grace, now: now)
            .map(\.key)
    }

    @Test func onlyArchivesOfOldReleasesWhoseReplacementIsOlderThanTheGraceGo() {
        let now = start + 7200 + 60
        // A/1 was replaced an hour and a minute ago; A/2 a minute ago; the delta no release names counts from
        // the log's first release; the interrupted upload is two minutes old; nothing outside packs/ and
        // deltas/ of this prefix is ever a candidate.
        #expect(deleted(keep: 1, grace: .seconds(1800), at: now) == ["g/packs/A/1-a", "g/deltas/A/3-from-1-d"])
        #expect(
            deleted(keep: 1, grace: .seconds(30), at: now)
                == ["g/packs/A/1-a", "g/packs/A/2-a", "g/deltas/A/3-from-1-d", "g/packs/C/1-interrupted"]
        )
        #expect(
            deleted(keep: 2, grace: .seconds(30), at: now) == [
                "g/packs/A/1-a", "g/deltas/A/3-from-1-d", "g/packs/C/1-interrupted",
            ]
        )
        #expect(deleted(keep: 3, grace: .zero, at: now) == ["g/deltas/A/3-from-1-d", "g/packs/C/1-interrupted"])
        // What the manifest being replaced names is never deleted, whatever the releases say.
        #expect(
            deleted(keep: 1, grace: .zero, protected: ["g/packs/A/1-a", "g/packs/A/2-a"], at: now)
                == ["g/deltas/A/3-from-1-d", "g/packs/C/1-interrupted"]
        )
        // Nothing is old enough an hour before.
        #expect(deleted(keep: 1, grace: .seconds(86_400), at: now).isEmpty)
    }

    @Test func theKeysAManifestNamesAreKnownOnlyForItsOwnURLs() throws {
        func manifest(_ urls: [String]) -> DownloadManifest {
            DownloadManifest(
                assetPacks: urls.enumerated().map { index, url in
                    DownloadManifest.Entry(
                        id: "P\(index)",
                        url: url,
                        version: 1,
                        downloadSize: 1,
                        downloadPolicy: .onDemand,
                        sha256: String(repeating: "0", count: 64),
                        installSize: 1,
                        fileCount: 1,
                        compression: nil
                    )
                }
            )
        }
        #expect(
            Publisher.keys(namedBy: manifest(["packs/A/1-a", "packs/B/1-b"]), prefix: "g", baseURL: nil)
                == ["g/packs/A/1-a", "g/packs/B/1-b"]
        )
        #expect(
            Publisher.keys(
                namedBy: manifest(["https://cdn.example/p/packs/A/1-a"]),
                prefix: "",
                baseURL: "https://cdn.example/p/"
            )
                == ["packs/A/1-a"]
        )
        #expect(Publisher.keys(namedBy: manifest(["https://elsewhere/packs/A"]), prefix: "g", baseURL: nil) == nil)
        #expect(Publisher.keys(namedBy: manifest(["/packs/A"]), prefix: "g", baseURL: nil) == nil)
    }
}

import AssetPackFormat
import AssetPackServer
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

/// `ba-mock publish` against a real S3-compatible store (moto's server), read back by an independent client
/// (boto3) and installed by `ba-sync` through a caching proxy (nginx `proxy_cache`, a CDN edge's stand-in).
@Suite("ba-mock publish end to end", .serialized)
struct PublishEndToEndTests {
    let tool = builtProduct("ba-mock")
    let sync = builtProduct("ba-sync")

    func publish(
        _ arguments: [String],
        _ store: S3Store,
        environment: [String: String?] = [:]
    ) throws -> (status: Int32, stdout: String, stderr: String) {
        try runTool(
            tool,
            ["publish"] + arguments + ["--endpoint-url", store.endpoint],
            environment: store.environment.merging(environment) { $1 },
            timeout: 300
        )
    }

    func report(_ run: (status: Int32, stdout: String, stderr: String)) throws -> Publisher.Report {
        #expect(run.status == 0, "\(run.stderr)")
        return try JSONDecoder().decode(Publisher.Report.self, from: Data(run.stdout.utf8))
    }

    /// nginx lines that pass a request to the store as it came (the Host header signed with it included).
    func proxy(to store: S3Store) -> String {
        """
        proxy_pass \(store.endpoint);
        proxy_set_header Host $http_host;
        """
    }

    func get(_ url: String) async throws -> (status: Int, headers: HTTPHeaders, body: Data) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), response.headers, Data(body.readableBytesView))
    }

    @Test func publishesThePacksThenOnlyWhatChangedAndDevicesInstallThroughACache() async throws {
        guard Nginx.installed else {
            Issue.record("nginx is not installed: run `make deps`")
            return
        }
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let store = try S3Store(buckets: ["packs-test"], publicRead: true)
        defer { store.stop() }
        // The edge caches what the store's Cache-Control allows: packs for a year, the manifest for its max-age.
        let edge = try await Nginx(
            scratch: scratch,
            server: """
                location / {
                    proxy_pass \(store.endpoint)/packs-test/game/;
                    proxy_cache edge;
                    add_header X-Cache-Status $upstream_cache_status;
                }
                """,
            http: "proxy_cache_path \(scratch.root.string)/edge keys_zone=edge:1m;"
        )
        defer { edge.stop() }

        // The manifest's URLs start with the edge's address, and publish checks what the edge serves.
        let arguments = [folder.string, "s3://packs-test/game", "--json", "--download-base-url", edge.base]
        let first = try report(try publish(arguments, store))
        #expect(first.steps.map(\.kind) == [.pack, .pack, .pack, .manifest])
        #expect(first.steps.allSatisfy { $0.action == .upload })
        #expect(first.manifestChanged)
        #expect(first.publicCheck?.objectsChecked == 3)
        #expect(first.publicCheck?.servesThisRelease == true)

        // What boto3 reads back: keys that carry the version and SHA-256 of the bytes, the headers a CDN needs.
        let objects = try store.objects("packs-test")
        #expect(objects.map(\.key).sorted() == first.steps.map(\.key).sorted())
        for object in objects where object.key != "game/manifest" {
            #expect(object.key.hasSuffix("/1-\(object.sha256)"), "\(object.key)")
            #expect(object.cacheControl == "public, max-age=31536000, immutable")
            #expect(object.contentType == "application/octet-stream")
        }
        let manifestObject = try #require(objects.first { $0.key == "game/manifest" })
        #expect(manifestObject.cacheControl == "public, max-age=60")
        #expect(manifestObject.contentType == "application/json")

        // A device installs through the edge; the second read of a pack is the edge's.
        let manifestURL = edge.base + "/manifest"
        let manifest = try DownloadManifest.decode(try await get(manifestURL).body, source: manifestURL)
        #expect(manifest.assetPacks.map(\.url).allSatisfy { $0.hasPrefix(edge.base + "/packs/") })
        let appGroup = scratch.root.appending("AppGroup")
        let common = ["--manifest-url", manifestURL, "--app-group", appGroup.string]
        let installed = try runTool(sync, ["ensure", "Levels", "Tutorial"] + common)
        #expect(installed.status == 0, "\(installed.stderr)")
        #expect(try runTool(sync, ["verify", "--app-group", appGroup.string]).status == 0)
        let levels = try #require(manifest.assetPacks.first { $0.id == "Levels" })
        #expect(try await get(levels.url).headers.first(name: "X-Cache-Status") == "HIT")

        // Nothing changed: nothing is sent.
        let again = try report(try publish(arguments, store))
        #expect(again.steps.allSatisfy { $0.action == .keep }, "\(again.steps)")
        #expect(again.uploadedBytes == 0)

        // One file of Levels changed: only Levels' new version, its delta and the manifest move.
        try scratch.write("Assets/Levels/README.txt", "changed after the first publish\n")
        let edited = try report(try publish(arguments, store))
        let moved = edited.steps.filter { $0.action == .upload }
        #expect(moved.map(\.kind) == [.pack, .delta, .manifest], "\(moved)")
        #expect(moved.dropLast().allSatisfy { $0.id == "Levels" && $0.version == 2 })
        let after = try store.objects("packs-test")
        #expect(Set(after.map(\.key)).isSuperset(of: objects.map(\.key)), "the old version stays")
        #expect(edited.publicCheck?.servesThisRelease == false, "the edge keeps the manifest for its max-age")
        #expect(edited.publicCheck?.objectsChecked == 3)

        // The edge still serves the manifest it cached (max-age=60), and the old version it names still
        // installs; the store's own manifest names version 2, which installs through its delta.
        let cached = try DownloadManifest.decode(try await get(manifestURL).body, source: manifestURL)
        #expect(cached.assetPacks.first { $0.id == "Levels" }?.version == 1)
        let fresh = scratch.root.appending("AppGroup-fresh")
        let old = try runTool(sync, ["ensure", "Levels", "--manifest-url", manifestURL, "--app-group", fresh.string])
        #expect(old.status == 0, "\(old.stderr)")
        let direct = store.endpoint + "/packs-test/game/manifest"
        let updated = try runTool(
            sync,
            [
                "ensure", "--latest", "--delta", "Levels", "--json", "--manifest-url", direct, "--app-group",
                appGroup.string,
            ]
        )
        #expect(updated.status == 0, "\(updated.stderr)")
        #expect(updated.stdout.contains(#""event":"delta""#), "\(updated.stdout)")
        let cat = try runTool(sync, ["cat", "Levels/README.txt", "--app-group", appGroup.string])
        #expect(cat.stdout == "changed after the first publish\n")
    }

    /// A store that checks every signature: wrong credentials, none at all and a missing bucket stop before
    /// anything is sent, with a message that says what to fix and never shows the secret; a dry run sends
    /// nothing. (moto 5.2.1 refuses signatures of non-ASCII keys, boto3's own too, so the prefix is ASCII here;
    /// the signing of such keys is checked against botocore in PublishSigningTests.)
    @Test func credentialsBucketsAndDryRunsAreCheckedBeforeAnythingIsSent() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let store = try S3Store(buckets: ["packs-test"], auth: true)
        defer { store.stop() }
        let destination = "s3://packs-test/game"

        let wrong = try publish([folder.string, destination], store, environment: ["AWS_SECRET_ACCESS_KEY": "not-it"])
        #expect(wrong.status == 1)
        #expect(
            wrong.stderr.contains(
                "refused access key \(store.accessKeyID) (from environment) (403 SignatureDoesNotMatch"
            )
        )
        #expect(wrong.stderr.contains("Fix: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"))
        #expect(wrong.stderr.contains("; the live manifest s3://packs-test/game/manifest was not changed. Fix: "))
        #expect(!(wrong.stdout + wrong.stderr).contains("not-it"))

        let none = try publish(
            [folder.string, destination],
            store,
            environment: ["AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil]
        )
        #expect(none.status == 1)
        #expect(none.stderr.contains("no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"))

        let missing = try publish([folder.string, "s3://no-such-bucket/x"], store)
        #expect(missing.status == 1)
        #expect(
            missing.stderr.contains("there is no bucket \"no-such-bucket\" at \(store.endpoint)"),
            "\(missing.stderr)"
        )
        #expect(!(wrong.stdout + wrong.stderr + none.stderr + missing.stderr).contains(store.secretAccessKey))
        #expect(try store.objects("packs-test").isEmpty)

        let dry = try publish([folder.string, destination, "--dry-run"], store)
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("would upload 4 objects"), "\(dry.stdout)")
        #expect(dry.stdout.contains("dry run: nothing was changed"))
        #expect(try store.objects("packs-test").isEmpty)

        // With a manifest per platform, as export --platform writes them: after the packs, before the manifest.
        let real = try report(
            try publish([folder.string, destination, "--json", "--platform", "ios", "--platform", "macOS"], store)
        )
        #expect(real.steps.map(\.kind) == [.pack, .pack, .pack, .platformManifest, .platformManifest, .manifest])
        let objects = try store.objects("packs-test")
        #expect(objects.map(\.key).sorted() == real.steps.map(\.key).sorted())
        #expect(objects.map(\.key).allSatisfy { $0.hasPrefix("game/") }, "\(objects.map(\.key))")
        for step in real.steps where step.kind == .platformManifest {
            #expect(["game/manifest-iOS.json", "game/manifest-macOS.json"].contains(step.key))
            #expect(objects.first { $0.key == step.key }?.sha256 == step.sha256)
            #expect(objects.first { $0.key == step.key }?.contentType == "application/json")
        }

        // A bucket no one may read, named as the public address: the check after publishing says so.
        let unreadable = try publish(
            [folder.string, destination, "--download-base-url", store.endpoint + "/packs-test/game"],
            store
        )
        #expect(unreadable.status == 1)
        #expect(
            unreadable.stderr.contains(
                "published, but \(store.endpoint)/packs-test/game/manifest answered 403: a device could not install from it"
            ),
            "\(unreadable.stderr)"
        )
    }

    /// A store that answers 503 to every upload of one pack (nginx in front of it): publish retries with
    /// backoff, then fails naming the object, and the live manifest still names the last version, whose
    /// objects are all there. The prefix is not ASCII, as real folders' names are not.
    @Test func aPackTheStoreKeepsRefusingLeavesTheLiveManifestAlone() async throws {
        guard Nginx.installed else {
            Issue.record("nginx is not installed: run `make deps`")
            return
        }
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let store = try S3Store(buckets: ["packs-test"])
        defer { store.stop() }
        let failing = try await Nginx(
            scratch: scratch,
            server: """
                client_max_body_size 0;
                location ~ /packs/Levels/ {
                    if ($request_method = PUT) { return 503; }
                    \(proxy(to: store))
                }
                location / {
                    \(proxy(to: store))
                }
                """
        )
        defer { failing.stop() }
        #expect(try publish([folder.string, "s3://packs-test/Über/日本語 🎮"], store).status == 0)
        let before = try store.objects("packs-test")

        try scratch.write("Assets/Levels/README.txt", "a change the store will not take\n")
        try scratch.write("Assets/Tutorial/added.txt", "a change it would take\n")
        let run = try runTool(
            tool,
            ["publish", folder.string, "s3://packs-test/Über/日本語 🎮", "--endpoint-url", failing.base, "--retries", "2"],
            environment: store.environment,
            timeout: 300
        )
        #expect(run.status == 1)
        #expect(run.stderr.contains("retrying PUT s3://packs-test/Über/日本語 🎮/packs/Levels/2-"), "\(run.stderr)")
        #expect(run.stderr.contains("retry 2 of 2"))
        #expect(run.stderr.contains("answered PUT s3://packs-test/Über/日本語 🎮/packs/Levels/2-"))
        #expect(
            run.stderr.contains(
                "with 503 (after 3 attempts); the live manifest s3://packs-test/Über/日本語 🎮/manifest was not changed. "
                    + "Fix: try again later"
            ),
            "\(run.stderr)"
        )
        let after = try store.objects("packs-test")
        let manifest = try #require(after.first { $0.key == "Über/日本語 🎮/manifest" })
        #expect(manifest.sha256 == before.first { $0.key == "Über/日本語 🎮/manifest" }?.sha256)
        #expect(Set(after.map(\.key)).isSuperset(of: before.map(\.key)))
        #expect(before.count == 4 && before.allSatisfy { $0.key.hasPrefix("Über/日本語 🎮/") }, "\(before.map(\.key))")
    }

    /// A pack larger than a part goes in parts; a publish cut off after its second part (the store refuses
    /// the third, nginx in front of it) leaves no manifest naming it, and the next run sends only the part
    /// that is missing: the two in the store are checked (size and digest) and kept. boto3 reads back the
    /// whole object, byte for byte.
    @Test func aLargePackGoesInPartsAndAnInterruptedUploadResumes() async throws {
        guard Nginx.installed else {
            Issue.record("nginx is not installed: run `make deps`")
            return
        }
        let scratch = try Scratch()
        let folder = scratch.root.appending("Big")
        var noise = SplitMix64(seed: 32)
        let bytes = Data((0..<(12 << 20) / 8).flatMap { _ in withUnsafeBytes(of: noise.next()) { Array($0) } })
        try scratch.write("Big/Movies/Über 🎮.bin", bytes)
        try scratch.write(
            "Big/Movies.json",
            #"{"assetPackID": "Movies", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Movies"}], "platforms": ["iOS"]}"#
        )
        let store = try S3Store(buckets: ["packs-test"])
        defer { store.stop() }
        let cutting = try await Nginx(
            scratch: scratch,
            server: """
                client_max_body_size 0;
                location / {
                    if ($arg_partNumber = 3) { return 503; }
                    \(proxy(to: store))
                }
                """
        )
        defer { cutting.stop() }
        let options = ["--part-size", "5", "--jobs", "1", "--delta-depth", "0"]
        let cut = try runTool(
            tool,
            ["publish", folder.string, "s3://packs-test/game", "--endpoint-url", cutting.base, "--retries", "0"]
                + options,
            environment: store.environment,
            timeout: 300
        )
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("answered PUT s3://packs-test/game/packs/Movies/1-"), "\(cut.stderr)")
        #expect(try store.objects("packs-test").isEmpty, "nothing is complete, and no manifest")

        let resumed = try report(try publish([folder.string, "s3://packs-test/game", "--json"] + options, store))
        let movies = try #require(resumed.steps.first { $0.kind == .pack })
        #expect(movies.parts == 3)
        #expect(movies.resumedBytes == 10 << 20, "parts 1 and 2 were in the store")
        let manifestBytes = resumed.steps.last?.bytes ?? 0
        #expect(resumed.uploadedBytes == movies.bytes - (10 << 20) + manifestBytes, "what this run sent")
        let objects = try store.objects("packs-test")
        let object = try #require(objects.first { $0.key == movies.key })
        #expect(object.size == movies.bytes)
        #expect(object.sha256 == movies.sha256)
        #expect(object.cacheControl == "public, max-age=31536000, immutable")
        #expect(objects.contains { $0.key == "game/manifest" })

        // And again: the object in parts is recognised as held (its metadata digest), nothing is sent.
        let again = try report(try publish([folder.string, "s3://packs-test/game", "--json"] + options, store))
        #expect(again.uploadedBytes == 0, "\(again.steps)")
    }

    /// `--keep 1`: an old version stays while it is within the grace of the release that replaced it, and
    /// while the manifest being replaced names it; then it goes, and every object the live manifest names is
    /// still there. A dry run lists the deletions and deletes nothing.
    @Test func oldVersionsGoOnlyAfterTheGraceAndNeverWhatTheLiveManifestNames() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let store = try S3Store(buckets: ["packs-test"])
        defer { store.stop() }
        let pruning = ["--keep", "1", "--grace", "3600"]
        func publish(_ edit: String?, _ options: [String]) throws -> Publisher.Report {
            if let edit { try scratch.write("Assets/Levels/README.txt", edit) }
            return try report(try self.publish([folder.string, "s3://packs-test/game", "--json"] + options, store))
        }
        func levels(_ objects: [S3Store.Object]) -> [String] {
            objects.map(\.key).filter { $0.hasPrefix("game/packs/Levels/") }.sorted()
        }
        _ = try publish(nil, pruning)
        let version1 = levels(try store.objects("packs-test"))
        _ = try publish("version 2\n", pruning)
        let third = try publish("version 3\n", pruning)
        #expect(third.steps.allSatisfy { $0.action != .delete }, "within the grace: \(third.steps)")
        let all = levels(try store.objects("packs-test"))
        #expect(all.count == 3 && all.contains(version1[0]), "\(all)")

        // The grace has passed (0 s here, with a manifest no edge keeps): versions 1 and 2 go, with the deltas
        // only they named; first a dry run, which deletes nothing.
        let passed = ["--keep", "1", "--grace", "0", "--manifest-max-age", "0"]
        let before = try store.objects("packs-test")
        let dry = try runTool(
            tool,
            ["publish", folder.string, "s3://packs-test/game", "--endpoint-url", store.endpoint, "--dry-run"] + passed,
            environment: store.environment
        )
        #expect(dry.status == 0, "\(dry.stderr)")
        // Levels 1 and 2, and the delta from 1 to 2 (version 3's deltas, from 1 and from 2, are named).
        #expect(dry.stdout.contains("would delete 3 old versions"), "\(dry.stdout)")
        #expect(try store.objects("packs-test").map(\.key) == before.map(\.key))

        let pruned = try publish(nil, passed)
        let deleted = pruned.steps.filter { $0.action == .delete }.map(\.key)
        #expect(deleted.filter { $0.hasPrefix("game/packs/") }.sorted() == Array(all.prefix(2)), "\(deleted)")
        #expect(deleted.filter { $0.hasPrefix("game/deltas/Levels/2-from-1-") }.count == 1, "\(deleted)")
        #expect(deleted.count == 3)
        let after = try store.objects("packs-test")
        #expect(levels(after).count == 1)
        #expect(after.contains { $0.key == "game/releases.json" })
        #expect(Set(after.map(\.key)).isDisjoint(with: deleted))
        // Every object the live manifest names is there, with the bytes it says.
        let manifestBytes = try #require(try store.objects("packs-test").first { $0.key == "game/manifest" })
        #expect(manifestBytes.cacheControl == "public, max-age=0")
        let named = third.steps.filter { $0.kind != .manifest && $0.action != .delete }.map(\.key)
        let present = Set(after.map(\.key))
        #expect(named.allSatisfy(present.contains), "\(named.filter { !present.contains($0) })")
    }

    /// Three stores that misbehave, through nginx in front of moto: one that sheds load (503 past 2 PUTs a
    /// second) is retried until every object is in; a full one (507) fails at once, not retried; one that cuts
    /// the connection is retried, then fails naming the object. The live manifest never names what is missing.
    @Test func aBusyStoreIsRetriedAFullOneIsNotAndACutConnectionIsReported() async throws {
        guard Nginx.installed else {
            Issue.record("nginx is not installed: run `make deps`")
            return
        }
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let store = try S3Store(buckets: ["packs-test"])
        defer { store.stop() }
        let proxy = proxy(to: store)
        let faulty = try await Nginx(
            scratch: scratch,
            server: """
                client_max_body_size 0;
                location ~ ^/packs-test/busy/packs/ {
                    limit_req zone=puts;
                    limit_req_status 503;
                    \(proxy)
                }
                location ~ ^/packs-test/full/packs/Tutorial/ {
                    if ($request_method = PUT) { return 507; }
                    \(proxy)
                }
                location ~ ^/packs-test/cut/packs/Levels/ {
                    if ($request_method = PUT) { return 444; }
                    \(proxy)
                }
                location / { \(proxy) }
                """,
            http: "limit_req_zone $request_method zone=puts:1m rate=2r/s;"
        )
        defer { faulty.stop() }
        func publish(_ prefix: String, _ more: [String] = []) throws -> (status: Int32, stdout: String, stderr: String)
        {
            try runTool(
                tool,
                ["publish", folder.string, "s3://packs-test/\(prefix)", "--endpoint-url", faulty.base, "--jobs", "3"]
                    + more,
                environment: store.environment,
                timeout: 300
            )
        }

        let busy = try publish("busy")
        #expect(busy.status == 0, "\(busy.stderr)")
        #expect(busy.stderr.contains("retrying PUT s3://packs-test/busy/packs/"), "\(busy.stderr)")
        #expect(try store.objects("packs-test").filter { $0.key.hasPrefix("busy/") }.count == 4)

        let full = try publish("full")
        #expect(full.status == 1)
        #expect(full.stderr.contains("is full: PUT s3://packs-test/full/packs/Tutorial/1-"), "\(full.stderr)")
        #expect(full.stderr.contains("answered 507; the live manifest s3://packs-test/full/manifest was not changed"))
        #expect(full.stderr.contains("Fix: free space in the store, or raise its quota"))
        #expect(
            !full.stderr.contains("retrying PUT s3://packs-test/full/packs/Tutorial/"),
            "a full store is not retried"
        )

        let cut = try publish("cut", ["--retries", "2"])
        #expect(cut.status == 1)
        #expect(cut.stderr.contains("retrying PUT s3://packs-test/cut/packs/Levels/1-"), "\(cut.stderr)")
        #expect(cut.stderr.contains("got no answer from the store at \(faulty.base)"), "\(cut.stderr)")
        #expect(
            cut.stderr.contains("(after 3 attempts); the live manifest s3://packs-test/cut/manifest was not changed")
        )

        let keys = try store.objects("packs-test").map(\.key)
        #expect(!keys.contains("full/manifest") && !keys.contains("cut/manifest"), "\(keys)")
    }

    /// Archives built elsewhere (ba-package's .aar, here ba-mock package's) are published byte for byte at the
    /// versions given, as ba-serve takes them, and a device installs them from the store.
    @Test func archivesArePublishedByteForByteAtTheirVersions() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        var archives: [FilePath] = []
        for id in ["Tutorial", "Levels"] {
            let archive = scratch.root.appending("\(id).aar")
            let packaged = try runTool(
                tool,
                ["package", folder.appending("\(id).json").string, "--root", folder.string, "-o", archive.string]
            )
            #expect(packaged.status == 0, "\(packaged.stderr)")
            archives.append(archive)
        }
        let store = try S3Store(buckets: ["packs-test"], publicRead: true)
        defer { store.stop() }
        let published = try report(
            try publish(
                archives.map(\.string) + ["s3://packs-test/apple", "--json", "--asset-pack-versions", "3", "1"],
                store
            )
        )
        let objects = try store.objects("packs-test")
        for (archive, version) in zip(archives, [3, 1]) {
            let digest = try FileDigest.sha256(of: archive)
            let id = archive.stem ?? ""
            let step = try #require(published.steps.first { $0.id == id })
            #expect(step.key == "apple/packs/\(id)/\(version)-\(digest)")
            #expect(objects.first { $0.key == step.key }?.sha256 == digest, "the archive's own bytes")
        }
        let manifestURL = store.endpoint + "/packs-test/apple/manifest"
        let appGroup = scratch.root.appending("AppGroup")
        let installed = try runTool(
            sync,
            ["ensure", "Tutorial", "--manifest-url", manifestURL, "--app-group", appGroup.string]
        )
        #expect(installed.status == 0, "\(installed.stderr)")

        let mixed = try publish([folder.string, archives[0].string, "s3://packs-test/apple"], store)
        #expect(mixed.status == 1)
        #expect(mixed.stderr.contains("\(archives[0]) is pack Tutorial, which \(folder) builds too"), "\(mixed.stderr)")
    }

    /// Options that cannot work are refused before anything is built or sent, and a store that is not there is
    /// named as such.
    @Test func optionsThatCannotWorkAreRefusedFirst() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        func run(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
            try runTool(
                tool,
                ["publish", folder.string, "s3://packs-test/game"] + arguments,
                environment: ["AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"]
            )
        }
        let infinite = try run(["--keep", "1", "--grace", "inf"])
        #expect(infinite.status == 64)
        #expect(infinite.stderr.contains("--grace must be 0 to 315360000 seconds"), "\(infinite.stderr)")
        let spaced = try run(["--download-base-url", "https://cdn.example.com/Über 🎮"])
        #expect(spaced.status == 64)
        #expect(spaced.stderr.contains("which a URL cannot: percent-encode it"), "\(spaced.stderr)")
        let port = try freeLoopbackPort()
        let nobody = try run(["--endpoint-url", "http://127.0.0.1:\(port)", "--retries", "0"])
        #expect(nobody.status == 1)
        #expect(
            nobody.stderr.contains(
                "got no answer from the store at http://127.0.0.1:\(port): nothing is listening there"
            ),
            "\(nobody.stderr)"
        )
    }
}

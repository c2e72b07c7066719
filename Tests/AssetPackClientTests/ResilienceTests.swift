import AssetPackFormat
import AssetPackServer
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackClient

@Suite("Surviving a misbehaving ba-mock")
struct ResilienceTests {
    /// A live ba-mock with `rules`, and a manager with quick backoff and a 1 s stall timeout.
    func withFaults<T: Sendable>(
        _ rules: [String],
        retries: Int = 5,
        format: PackFormat = .tar,
        _ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> T
    ) async throws -> T {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Textures/big.bin", Scratch.noise(400_000, seed: 21))
        let plan = FaultPlan(rules: try rules.map(FaultRule.init(parsing:)), seed: 3)
        let client = AssetPackManager.makeHTTPClient(connectTimeout: .seconds(2), readTimeout: .seconds(5))
        do {
            let result = try await run(scratch, plan, client, retries, format, body)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func run<T: Sendable>(
        _ scratch: Scratch,
        _ plan: FaultPlan,
        _ client: HTTPClient,
        _ retries: Int,
        _ format: PackFormat,
        _ body: @Sendable (LiveServer, AssetPackManager, Scratch) async throws -> T
    ) async throws -> T {
        try await LiveServer.with(folder: scratch.root, faults: plan, format: format) { server in
            let manager = try AssetPackManager(
                configuration: .init(
                    server: URL(string: server.url)!,
                    appGroup: scratch.root.appending("AppGroup"),
                    retryPolicy: RetryPolicy(retries: retries, baseDelay: .milliseconds(10), maximumDelay: .seconds(3)),
                    stallTimeout: .seconds(2)
                ),
                client: client
            )
            return try await body(server, manager, scratch)
        }
    }

    /// The request lines for `path`, waiting up to 8 s for at least `count` of them (a line is written when
    /// its body ends, which can be after the client has what it needs: a stalled body ends when the stall
    /// does).
    func lines(_ server: LiveServer, _ path: String, atLeast count: Int = 1) async throws -> [String] {
        var found: [String] = []
        for _ in 0..<160 {
            found = server.requestLines.withLock { $0.filter { $0.contains(" \(path) ") } }
            if found.count >= count { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        return found
    }

    /// Each transient fault, and the requests the client must make to get past it: how many, and which of
    /// them resume with a range.
    @Test(
        arguments: [
            ("reset-after=50000,pack=Textures,times=2", 3, [false, true, true]),
            ("truncate,pack=Textures,times=1", 2, [false, true]),
            ("stall=5,pack=Textures,times=1", 2, [false, true]),
            ("status=500,pack=Textures,times=2", 3, [false, false, false]),
            ("status=429,pack=Textures,times=1", 2, [false, false]),
            ("no-ranges,pack=Textures", 1, [false]),
        ],
        PackFormat.allCases
    )
    func transientFaultsAreRetriedAndTheResultIsExact(
        _ fault: (rule: String, count: Int, ranged: [Bool]),
        format: PackFormat
    ) async throws {
        let (rule, count, ranged) = fault
        try await withFaults([rule], format: format) { server, manager, scratch in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            #expect(
                try manager.contents(at: "Textures/big.bin") == scratch.read(scratch.root.appending("Textures/big.bin"))
            )
            #expect(try manager.verify(assetPackWithID: "Textures") == 2)
            // A cut, short or stalled download resumes with a Range request; an error status is fetched again
            // whole. (A stalled request's line comes when the stall ends.)
            let requests = try await lines(server, "/assets/Textures", atLeast: count)
            #expect(requests.count == count, "\(requests)")
            let order = requests.sorted { ($0.contains(" bytes=") ? 1 : 0) < ($1.contains(" bytes=") ? 1 : 0) }
            #expect(order.map { $0.contains(" bytes=") } == ranged, "\(requests)")
        }
    }

    @Test func retryAfterIsHonoured() async throws {
        try await withFaults(["status=503,retry-after=1,pack=Textures,times=2"]) { server, manager, _ in
            let start = ContinuousClock.now
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            #expect(ContinuousClock.now - start >= .seconds(2))
            let requests = try await lines(server, "/assets/Textures", atLeast: 3)
            #expect(requests.count >= 3, "\(requests)")
            #expect(requests.prefix(2).allSatisfy { $0.contains(" 503 ") }, "\(requests)")
            #expect(requests.dropFirst(2).allSatisfy { !$0.contains(" 503 ") }, "\(requests)")
        }
    }

    @Test(arguments: PackFormat.allCases)
    func aCorruptDownloadIsDiscardedAndFetchedAgain(_ format: PackFormat) async throws {
        try await withFaults(["corrupt=1000,pack=Textures,times=1"], format: format) { server, manager, _ in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Textures"))
            #expect(try manager.verify() == 2)
            let requests = try await lines(server, "/assets/Textures", atLeast: 2)
            #expect(requests.count == 2)
            #expect(requests.allSatisfy { $0.contains("/assets/Textures - 200") }, "a refetch starts over: \(requests)")
        }
    }

    @Test func permanentFailuresFailFastAndSayWhy() async throws {
        try await withFaults(["status=404,pack=Textures"]) { server, manager, _ in
            let pack = try await manager.assetPack(withID: "Textures")
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            #expect(error?.httpStatus == 404)
            #expect(
                error?.message.contains("\(server.url)/assets/Textures answered 404") == true,
                "\(error?.message ?? "")"
            )
            let requests = try await lines(server, "/assets/Textures")
            #expect(!requests.isEmpty && requests.allSatisfy { $0.contains(" 404 ") }, "\(requests)")
        }
        try await withFaults(["corrupt=10,pack=Textures"]) { server, manager, _ in
            let pack = try await manager.assetPack(withID: "Textures")
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.ensureLocalAvailability(of: pack)
            }
            // The extraction meets the flipped byte first: the download stops there (it is not read on for a
            // digest) and starts over, twice, before the pack is reported.
            #expect(error?.code == .corruptPack)
            #expect(error?.message.contains("after 3 attempts") == true, "\(error?.message ?? "")")
            #expect(try await lines(server, "/assets/Textures", atLeast: 3).count == 3)
        }
        try await withFaults(["bad-manifest"]) { _, manager, _ in
            let error = await #expect(throws: AssetPackClientError.self) {
                try await manager.assetPack(withID: "Textures")
            }
            #expect(error?.code == .badManifest)
        }
    }

    @Test func aFailedUpdateKeepsThePreviousVersion() async throws {
        try await withFaults([], retries: 1) { server, manager, scratch in
            try await manager.ensureLocalAvailability(of: try await manager.assetPack(withID: "Levels"))
            let before = try manager.contents(at: "Levels/World1/level1.json")
            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 12}"#)
            try await server.catalog.refresh()
            _ = try await server.get("/_mock/faults", method: .POST, body: "reset-after=10,pack=Levels")
            await #expect(throws: (any Error).self) { try await manager.checkForUpdatesAndWait() }
            #expect(manager.installedPack(withID: "Levels")?.version == 1)
            #expect(try manager.contents(at: "Levels/World1/level1.json") == before)
            #expect(try manager.verify() == 3)
            #expect(await manager.localStatus(ofAssetPackWithID: "Levels").contains(.outOfDate))
            _ = try await server.get("/_mock/faults", method: .DELETE)
            let (updated, _) = try await manager.checkForUpdatesAndWait()
            #expect(updated == ["Levels"])
        }
    }

    @Test func retryAfterParsesSecondsAndDates() {
        #expect(Backoff.retryAfter("3") == .seconds(3))
        let now = Date(timeIntervalSince1970: 784_111_777)
        #expect(Backoff.retryAfter("Sun, 06 Nov 1994 08:49:47 GMT", now: now) == .seconds(10))
        // RFC 9110 has a recipient read the two obsolete forms too, as the server does.
        #expect(Backoff.retryAfter("Sunday, 06-Nov-94 08:49:47 GMT", now: now) == .seconds(10))
        #expect(Backoff.retryAfter("Sun Nov  6 08:49:47 1994", now: now) == .seconds(10))
        #expect(Backoff.retryAfter("soon") == nil)
    }
}

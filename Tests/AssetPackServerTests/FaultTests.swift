import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

@Suite("Faults on purpose")
struct FaultTests {
    @Test(arguments: [
        ("reset-after=100,pack=Levels,nth=2", "reset-after=100,pack=Levels,nth=2"),
        ("status=503, retry-after=2", "status=503,retry-after=2"),
        ("latency=50,p=0.5,times=3", "latency=50,p=0.5,times=3"),
        ("bad-manifest", "bad-manifest"),
    ])
    func rulesParseAndPrint(_ text: String, _ printed: String) throws {
        #expect(try FaultRule(parsing: text).description == printed)
    }

    @Test(arguments: [
        ("explode", "is not a fault"), ("reset-after", "needs a whole number"), ("status=99", "from 100 to 599"),
        ("latency=5,p=2", "share from 0 to 1"), ("truncate,retry-after=3", "goes with status"),
        ("truncate,color=red", "is not a rule option"),
    ])
    func badRulesSayWhatIsWrong(_ text: String, _ problem: String) {
        let error = #expect(throws: AssetPackServerError.self) { try FaultRule(parsing: text) }
        #expect(error?.message.contains(problem) == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("Fix: ") == true)
    }

    /// Each of these crashed `ba-mock` (an item without a name) or was accepted and crashed the next request
    /// (a stall too long for the clock); each is refused with the range a number may take.
    @Test(arguments: [
        ("=", "has no name"), ("=,=", "has no name"), ("truncate,=", "has no name"), (" = ", "has no name"),
        ("stall=", "stall needs a whole number from 0 to 86400"),
        ("stall=-1", "stall needs a whole number from 0 to 86400"),
        ("stall=9223372036854775807", "stall needs a whole number from 0 to 86400"),
        ("stall=86401", "from 0 to 86400"), ("latency=86400001", "latency needs a whole number from 0 to 86400000"),
        ("latency=-5", "from 0 to 86400000"),
        ("throttle=0", "throttle needs a whole number from 1 to 1099511627776"),
        ("corrupt=-5", "corrupt needs a whole number from 0 to 1099511627776"),
        ("reset-after=99999999999999999999", "from 0 to 1099511627776"),
        ("status=500,retry-after=86401", "retry-after needs a whole number from 0 to 86400"),
        ("status=600", "from 100 to 599"), ("truncate,nth=0", "nth needs a whole number from 1 to 1000000000"),
        ("truncate,times=-1", "times needs a whole number from 1 to 1000000000"),
        ("truncate,nth=1000000001", "from 1 to 1000000000"), ("truncate,p=nan", "share from 0 to 1"),
        ("truncate,p=inf", "share from 0 to 1"), ("truncate,p=-0.5", "share from 0 to 1"),
        ("truncate=5", "truncate takes no value"), ("stall=٣", "stall needs a whole number"),
        ("status=500,retry-after=1,retry-after=2", "retry-after is given twice"),
        ("truncate,,", "an empty item"), ("truncate,", "an empty item"), (",truncate", "an empty item"),
    ])
    func numbersOutOfRangeAndNamelessItemsAreRefused(_ text: String, _ problem: String) {
        // (Empty items, accepted quietly, were found by an attack run on this fix.)
        let error = #expect(throws: AssetPackServerError.self, "\(text)") { try FaultRule(parsing: text) }
        #expect(error?.message.contains(problem) == true, "\(text): \(error?.message ?? "")")
        #expect(error?.message.contains("Fix: ") == true)
    }

    /// A share written as -0 is 0, and prints as 0 (it was listed as -0.0).
    @Test func aNegativeZeroShareIsZero() throws {
        let rule = try FaultRule(parsing: "truncate,p=-0")
        #expect(!rule.description.contains("-0"), "\(rule.description)")
    }

    /// Random rules built from the pieces that broke the parser: each gives an error or a rule that prints as
    /// it parses, with every number in its range; none crashes.
    @Test func fuzzedRulesParseOrAreRefused() throws {
        let pieces = [
            "", "=", ",", " ", "stall", "latency", "reset-after", "corrupt", "throttle", "status", "retry-after",
            "nth", "times", "p", "pack", "truncate", "wrong-length", "no-ranges", "stale-manifest", "bad-manifest",
            "-", "+", "0", "1", "-1", "100", "503", "86400", "86401", "1099511627776", "1099511627777",
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "99999999999999999999", "nan",
            "inf", "-inf", "1e308", "0.5", "1e-300", "0x10", "é", "\u{0}", "٣", "Levels", "💥", "\u{301}",
        ]
        var random = SplitMix64(seed: 91)
        var parsed = 0
        // `make fuzz` raises the count with BA_FUZZ_ITERATIONS.
        let count = max(30_000, Int(ProcessInfo.processInfo.environment["BA_FUZZ_ITERATIONS"] ?? "") ?? 0)
        for _ in 0..<count {
            var text = ""
            for _ in 0..<(random.next() % 8) {
                if random.next() % 10 == 0, let scalar = Unicode.Scalar(UInt32(random.next() % 0x11_0000)) {
                    text.unicodeScalars.append(scalar)
                } else {
                    text += pieces[Int(random.next() % UInt64(pieces.count))]
                }
            }
            guard let rule = try? FaultRule(parsing: text) else { continue }
            parsed += 1
            #expect(try FaultRule(parsing: rule.description) == rule, "\(text) printed as \(rule)")
            #expect(Self.numbersInRange(rule), "\(text) gave \(rule)")
        }
        #expect(parsed > 100, "\(parsed) random rules parsed")
    }

    static func numbersInRange(_ rule: FaultRule) -> Bool {
        let bytes = 0...(1 << 40)
        let numbersOK: Bool =
            switch rule.kind {
            case .resetAfter(let count): bytes.contains(count)
            case .corrupt(let offset): bytes.contains(offset)
            case .status(let code, let retryAfter): (100...599).contains(code) && (0...86400).contains(retryAfter ?? 0)
            case .latency(let milliseconds): (0...86_400_000).contains(milliseconds)
            case .throttle(let rate): (1...(1 << 40)).contains(rate)
            case .stall(let seconds): (0...86400).contains(seconds)
            default: true
            }
        return numbersOK && (1...1_000_000_000).contains(rule.nth ?? 1) && (1...1_000_000_000).contains(rule.times ?? 1)
            && (0...1).contains(rule.probability ?? 0)
    }

    /// Rules that crashed the server (an item without a name when added, a stall too long for the clock on the
    /// next request) are answered 400 with the range, and the server keeps serving.
    @Test func theControlEndpointRefusesRulesThatCrashedIt() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            for (body, problem) in [
                ("=", "has no name"), ("=,=", "has no name"), ("stall=9223372036854775807", "from 0 to 86400"),
                ("latency=9223372036854775807", "from 0 to 86400000"), ("truncate,p=nan", "share from 0 to 1"),
            ] {
                let refused = try await server.get("/_mock/faults", method: .POST, body: body)
                #expect(refused.status == 400, "\(body)")
                #expect(refused.errorCode == "invalidOption", "\(body)")
                let message = String(decoding: refused.body, as: UTF8.self)
                #expect(message.contains(problem), "\(body): \(message)")
            }
            let listed = try await server.get("/_mock/faults")
            #expect(listed.json?["faults"] as? [String] == [])
            #expect(try await server.get("/assets/Tutorial").status == 200)
        }
    }

    /// A control body sent a byte at a time held its connection (and its handler) for as long as the client
    /// liked; it now gets 408 once the deadline passes, the connection is closed, and no rule is added.
    @Test func aControlBodyDrippedByteByByteGets408AndTheConnectionClosed() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, controlBodyTimeout: .seconds(1)) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let (answer, closedAfter) = try await onThreadOfItsOwn {
                try Self.drip(port: port, body: "reset-after=65536", seconds: 6)
            }
            #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer.prefix(300))")
            #expect(answer.contains("requestTimeout"), "\(answer)")
            #expect(closedAfter != nil, "the server kept a dripping control connection open for 6 s")
            #expect((closedAfter ?? 99) < 3.5, "closed after \(closedAfter ?? 99) s")
            let listed = try await server.get("/_mock/faults")
            #expect(listed.json?["faults"] as? [String] == [], "a rule cut short is not added")
            #expect(try await server.get("/assets/Tutorial").status == 200)  // others are still served
        }
    }

    /// Sends a `POST /_mock/faults` head whole, then its body one byte every 200 ms; returns what the server
    /// answered and the seconds after which it closed the connection (`nil` if it never did within `seconds`).
    static func drip(port: Int, body: String, seconds: Double) throws -> (String, Double?) {
        let head = "POST /_mock/faults HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.utf8.count)\r\n\r\n"
        let (answer, closedAfter) = try RawConnection(port: port).drip(body, after: head, seconds: seconds)
        return (String(decoding: answer, as: UTF8.self), closedAfter)
    }

    @Test func nthTimesAndProbabilityAreReplayable() throws {
        let rules = [try FaultRule(parsing: "truncate,nth=2"), try FaultRule(parsing: "latency=1,p=0.5")]
        func run() -> [[String]] {
            let plan = FaultPlan(rules: rules, seed: 42)
            return (0..<20).map { _ in plan.draw(pack: "A").map(\.description) }
        }
        let first = run()
        #expect(first == run())  // the same seed gives the same faults
        #expect(first.filter { $0.contains("truncate,nth=2") }.count == 1)
        #expect(first[1].contains("truncate,nth=2"))
        let latencies = first.filter { $0.contains("latency=1,p=0.5") }.count
        #expect(latencies > 3 && latencies < 17)
        let limited = FaultPlan(rules: [try FaultRule(parsing: "status=500,times=2")], seed: 1)
        #expect((0..<5).map { _ in limited.draw(pack: "A").count } == [1, 1, 0, 0, 0])
        #expect(FaultPlan(rules: [try FaultRule(parsing: "no-ranges,pack=B")], seed: 1).draw(pack: "A").isEmpty)
    }

    func withFault<T: Sendable>(_ rule: String, _ body: @Sendable (LiveServer, Scratch) async throws -> T) async throws
        -> T
    {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let plan = FaultPlan(rules: [try FaultRule(parsing: rule)], seed: 7)
        return try await LiveServer.with(folder: scratch.root, faults: plan) { server in try await body(server, scratch)
        }
    }

    @Test func resetAfterAndTruncateCutTheBody() async throws {
        for rule in ["reset-after=1000,pack=Tutorial", "truncate,pack=Tutorial"] {
            try await withFault(rule) { server, scratch in
                let size = try scratch.archive(of: "Tutorial", in: server.catalog).count
                await #expect(throws: (any Error).self, "\(rule)") { _ = try await server.get("/assets/Tutorial") }
                try await waitForLines(server, count: 1)
                let line = try #require(server.requestLines.withLock { $0.first })
                let expected = rule.hasPrefix("reset") ? 1000 : size / 2
                #expect(line.contains(" 200 \(expected)B "), "\(line)")
                #expect(line.contains("fault=\(rule)"), "\(line)")
                #expect(try await server.get("/assets/Levels").status == 200)  // other packs are fine
            }
        }
    }

    @Test func corruptFlipsOneByte() async throws {
        try await withFault("corrupt=5000,pack=Tutorial") { server, scratch in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            let fetched = try await server.get("/assets/Tutorial")
            #expect(fetched.body.count == archive.count)
            let differing = zip(fetched.body, archive).enumerated().filter { $0.element.0 != $0.element.1 }.map(
                \.offset
            )
            #expect(differing == [5000])
            // A range that holds the offset is corrupted at the same pack offset.
            let ranged = try await server.get("/assets/Tutorial", headers: [("Range", "bytes=4000-5999")])
            #expect(ranged.body[1000] == archive[5000] ^ 0xFF)
        }
    }

    @Test func wrongLengthStatusAndNoRanges() async throws {
        try await withFault("wrong-length,pack=Tutorial") { server, scratch in
            let size = try scratch.archive(of: "Tutorial", in: server.catalog).count
            let fetched = try await server.get("/assets/Tutorial")
            #expect(fetched.header("Content-Length") == String(size + 1))
            #expect(fetched.body.count == size + 1)
        }
        try await withFault("status=503,retry-after=2,pack=Levels") { server, _ in
            let fetched = try await server.get("/assets/Levels")
            #expect(fetched.status == 503)
            #expect(fetched.header("Retry-After") == "2")
            #expect(fetched.errorCode == "injectedFault")
        }
        try await withFault("no-ranges") { server, scratch in
            let fetched = try await server.get("/assets/Levels", headers: [("Range", "bytes=0-9")])
            #expect(fetched.status == 200)
            #expect(fetched.body == (try scratch.archive(of: "Levels", in: server.catalog)))
        }
    }

    @Test func latencyThrottleAndStallTakeTime() async throws {
        for (rule, atLeast) in [
            ("latency=300", 0.3), ("throttle=200000,pack=Tutorial", 0.8), ("stall=1,pack=Tutorial", 1.0),
        ] {
            try await withFault(rule) { server, _ in
                let start = ContinuousClock.now
                let fetched = try await server.get("/assets/Tutorial")
                let elapsed = ContinuousClock.now - start
                #expect(fetched.status == 200)
                #expect(elapsed >= .milliseconds(Int(atLeast * 1000)), "\(rule): \(elapsed)")
            }
        }
    }

    @Test func manifestFaults() async throws {
        try await withFault("bad-manifest,nth=1") { server, _ in
            let bad = try await server.get("/manifest")
            #expect(bad.status == 200)
            #expect(bad.header("X-Mock-Fault") == "bad-manifest,nth=1")
            #expect((try? JSONSerialization.jsonObject(with: bad.body)) == nil)
            #expect(try await server.manifest().assetPacks.count == 3)  // only the first one
        }
        try await withFault("stale-manifest") { server, scratch in
            let before = try #require(server.catalog.snapshot.pack(withID: "Textures"))
            try scratch.write("Textures/rock.ktx2", Scratch.noise(50_000, seed: 8))
            try await server.catalog.refresh()
            let entry = try #require(try await server.manifest().assetPacks.first { $0.id == "Textures" })
            #expect(entry.version == 1)  // lags by one version
            #expect(entry.sha256 == before.sha256)
            let served = try await server.get("/assets/Textures")
            #expect(served.header("X-Asset-Pack-Version") == "2")
        }
    }

    @Test func controlEndpointChangesFaultsVersionsAndObsoletePacks() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let added = try await server.get("/_mock/faults", method: .POST, body: "status=500,pack=Levels")
            #expect(added.status == 201)
            #expect(try await server.get("/assets/Levels").status == 500)
            let bad = try await server.get("/_mock/faults", method: .POST, body: "nonsense")
            #expect(bad.status == 400)
            #expect(String(decoding: bad.body, as: UTF8.self).contains("is not a fault"))
            let huge = try await server.get("/_mock/faults", method: .POST, body: String(repeating: "x", count: 10_000))
            #expect(huge.status == 413 && huge.errorCode == "tooLarge")
            for refused in ["status=503,pack=Nope", "status=503,pack=Levels,pack=Tutorial"] {
                #expect(try await server.get("/_mock/faults", method: .POST, body: refused).status == 400, "\(refused)")
            }
            #expect(try await server.get("/_mock/faults", method: .DELETE).status == 200)
            #expect(try await server.get("/assets/Levels").status == 200)

            #expect(try await server.get("/_mock/packs/Levels/version/5", method: .PUT).status == 200)
            #expect(try await server.manifest().assetPacks.first { $0.id == "Levels" }?.version == 5)
            #expect(try await server.get("/_mock/packs/Levels/obsolete", method: .PUT).status == 200)
            #expect(try await server.manifest().assetPacks.map(\.id) == ["Textures", "Tutorial"])
            #expect(try await server.get("/assets/Levels").status == 404)
            #expect(try await server.get("/_mock/packs/Levels/obsolete", method: .DELETE).status == 200)
            #expect(try await server.manifest().assetPacks.count == 3)
            #expect(try await server.get("/_mock/packs/Nope/obsolete", method: .PUT).status == 404)
            for bad in ["0", "-1", "seven"] {
                #expect(
                    try await server.get("/_mock/packs/Levels/version/\(bad)", method: .PUT).status == 400,
                    "\(bad)"
                )
            }
            // The pins and marks are visible, and a pin can be removed.
            let listed = try await server.get("/_mock/packs")
            let packs = try #require(listed.json?["packs"] as? [[String: Any]])
            let levels = try #require(packs.first { $0["id"] as? String == "Levels" })
            #expect(levels["publishedVersion"] as? Int == 5 && levels["contentVersion"] as? Int == 1)
            #expect(levels["pinnedBy"] as? String == "control" && levels["obsolete"] as? Bool == false)
            #expect(try await server.get("/_mock/packs/Levels/version", method: .DELETE).status == 200)
            #expect(try await server.manifest().assetPacks.first { $0.id == "Levels" }?.version == 1)
            try await waitForLines(server) { $0.contains { $0.contains("fault=status=500,pack=Levels") } }
            #expect(server.requestLines.withLock { $0 }.contains { $0.contains("fault=status=500,pack=Levels") })
        }
    }

    @Test func contentThatChangesUnderAPinIsSaidAndOldArchivesAreDeleted() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        // A build killed earlier left its files in the state folder.
        try scratch.write(".ba-mock/packs/Levels.building", "half a pack")
        try scratch.write(".ba-mock/packs/.Levels.building.tmp-99-1", "half a pack")
        try await LiveServer.with(folder: scratch.root, pinnedVersions: ["Levels": 7]) { server in
            let packs = scratch.root.appending(".ba-mock/packs")
            let names = { try FileManager.default.contentsOfDirectory(atPath: packs.string) }
            let atStart = try names()
            #expect(!atStart.contains { $0.contains("building") }, "\(atStart)")

            try scratch.write("Levels/World1/level1.json", #"{"name": "1-1", "enemies": 4}"#)
            let report = try await server.catalog.refresh()
            #expect(report.warnings.contains { $0.hasPrefix("Levels changed, but it is published as version 7") })
            // LiveServer keeps one archive per pack: the superseded one is gone, the published one stays.
            #expect(try names().filter { $0.hasPrefix("Levels-") }.count == 1)
        }
    }

    @Test func aHostHeaderThatIsNotAHostIsRefused() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            for host in ["evil.example/\"x", ""] {
                let answer = try await onThreadOfItsOwn {
                    let peer = try RawConnection(port: port, receiveBuffer: 1 << 16)
                    peer.send("GET /manifest HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                    return String(decoding: peer.readAll(timeout: 5), as: UTF8.self)
                }
                #expect(answer.hasPrefix("HTTP/1.1 400"), "Host \(host): \(answer.prefix(200))")
                #expect(!answer.contains("\"url\""), "no manifest is made from it")
            }
            #expect(try await server.get("/manifest").status == 200)
        }
    }

    @Test func anHTTP10RequestGetsConnectionClose() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let (answer, closed) = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                peer.send("GET /assets/Tutorial HTTP/1.0\r\n\r\n")
                let answer = peer.readAll(timeout: 5)
                return (answer, peer.readToEnd(timeout: 0.5).closed)
            }
            let head = try #require(String(decoding: answer, as: UTF8.self).components(separatedBy: "\r\n\r\n").first)
            let lines = head.components(separatedBy: "\r\n")
            #expect(lines.first == "HTTP/1.1 200 OK", "\(head)")
            #expect(lines.contains { $0.lowercased() == "connection: close" }, "\(head)")
            #expect(closed, "the server closes an HTTP/1.0 connection after the response")
            // One that asks to keep the connection gets that, and the connection stays open.
            let (kept, open) = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                peer.send("GET /assets/Tutorial HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
                let answer = peer.readAll(timeout: 1)
                return (answer, !peer.readToEnd(timeout: 0.2).closed)
            }
            let keptHead = String(decoding: kept, as: UTF8.self).components(separatedBy: "\r\n\r\n").first ?? ""
            #expect(!keptHead.lowercased().contains("connection: close"), "\(keptHead)")
            #expect(open, "a keep-alive HTTP/1.0 connection is kept")
        }
    }

    @Test func controlEndpointIsLoopbackOnly() throws {
        #expect(LoopbackOnlyMiddleware.isLoopback(try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        #expect(LoopbackOnlyMiddleware.isLoopback(try SocketAddress(ipAddress: "127.9.8.7", port: 1)))
        #expect(LoopbackOnlyMiddleware.isLoopback(try SocketAddress(ipAddress: "::1", port: 1)))
        #expect(!LoopbackOnlyMiddleware.isLoopback(try SocketAddress(ipAddress: "10.0.0.1", port: 1)))
        #expect(!LoopbackOnlyMiddleware.isLoopback(try SocketAddress(ipAddress: "192.168.1.2", port: 1)))
        #expect(!LoopbackOnlyMiddleware.isLoopback(try SocketAddress(ipAddress: "fe80::1", port: 1)))
        #expect(!LoopbackOnlyMiddleware.isLoopback(nil))
    }
}

import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

@Suite("Hostile requests")
struct HostileRequestTests {
    @Test func oddRangeHeadersNeverBreakTheServer() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            let many = "bytes=" + (0..<500).map { "\($0)-\($0)" }.joined(separator: ",")
            let cases: [(String, Int)] = [
                ("bytes=0-99999999999999999999999", 200), ("bytes=99999999999999999999999-", 200),
                ("bytes=5-1", 200), ("bytes=0-10,5-20", 200), (many, 200), ("bytes=--5", 200), ("bytes=", 200),
                ("bytes=\(archive.count)-", 416), ("bytes=a-b;c", 200),
            ]
            for (header, status) in cases {
                let fetched = try await server.get("/assets/Tutorial", headers: [("Range", header)])
                #expect(fetched.status == status, "\(header.prefix(40))")
                if status == 200 { #expect(fetched.body == archive) }
            }
        }
    }

    @Test func oversizedHeadersAreRefusedAndTheServerKeepsServing() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let huge = String(repeating: "x", count: 200 * 1024)
            let result = try? await server.get("/manifest", headers: [("X-Huge", huge)], timeout: .seconds(5))
            #expect(result == nil || result?.status == 431 || result?.status == 400)
            let numerous = (0..<2000).map { ("X-Field-\($0)", "v") }
            let second = try? await server.get("/manifest", headers: numerous, timeout: .seconds(5))
            #expect(second == nil || second?.status != 200)
            let after = try await server.get("/manifest")
            #expect(after.status == 200)
        }
    }

    @Test func manyConnectionsAtOnceAreAllServed() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let archive = try scratch.archive(of: "Levels", in: server.catalog)
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 100
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let results = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        try await server.get("/assets/Levels", client: client).body == archive
                    }
                }
                var ok = 0
                for try await matched in group where matched { ok += 1 }
                return ok
            }
            try await client.shutdown()
            #expect(results == 100)
        }
    }
}

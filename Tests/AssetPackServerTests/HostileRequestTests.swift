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
            // A header of 200 KiB, and 2 000 header fields: NIO's decoder refuses both, and the server
            // answers 400 and closes the connection.
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let numerous = (0..<2000).map { "X-Field-\($0): v\r\n" }.joined()
            for head in ["X-Huge: " + String(repeating: "x", count: 200 * 1024) + "\r\n", numerous] {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 16)
                peer.send("GET /manifest HTTP/1.1\r\nHost: 127.0.0.1\r\n" + head + "\r\n")
                let answer = String(decoding: peer.readAll(timeout: 5), as: UTF8.self)
                #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(answer.prefix(80))")
                #expect(answer.lowercased().contains("connection: close"))
            }
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

    @Test func aClientThatTricklesItsRequestIsCutOff() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, requestHeadTimeout: .seconds(1)) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            // On a thread of its own: the socket calls block, and the test pool's threads are few.
            let closedAfter: Double? = try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread {
                    continuation.resume(with: Result { try Self.trickle(port: port, seconds: 6) })
                }
            }
            #expect(closedAfter != nil, "the server kept a trickling connection open for 6 s")
            #expect((closedAfter ?? 99) < 4)
            #expect(try await server.get("/manifest").status == 200)  // others are still served
        }
    }

    /// The deadline moves with each answer: a connection that asks again and again, each time well within the
    /// timeout, is served for longer than it; one that then trickles its next request is cut off.
    @Test func theHeadTimeoutCountsFromTheLastAnswer() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, requestHeadTimeout: .seconds(1)) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let (answered, closedAfter) = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                var answered = 0
                for _ in 0..<8 {  // 8 × 300 ms: 2.4 s on one connection
                    Thread.sleep(forTimeInterval: 0.3)
                    peer.send("GET /manifest HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    answered += peer.readResponses(1, timeout: 5).count
                }
                let request =
                    "GET /manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 100)
                return (answered, peer.drip(request, seconds: 6).closedAfter)
            }
            #expect(answered == 8, "requests every 300 ms with a 1 s timeout")
            #expect(closedAfter != nil, "the server kept a trickling connection open for 6 s")
            #expect((closedAfter ?? 99) < 2)
        }
    }

    /// Sends a request head one byte every 200 ms; returns the seconds after which the server closed the
    /// connection, or `nil` if it never did within `seconds`.
    static func trickle(port: Int, seconds: Double) throws -> Double? {
        let request = "GET /manifest HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + String(repeating: "a", count: 100)
        return try RawConnection(port: port).drip(request, seconds: seconds).closedAfter
    }
}

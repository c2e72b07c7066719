import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Synchronization
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

/// Packs over the 1 MiB kept in memory: their bodies come from the file, by `sendfile` on plain HTTP and
/// through ``FileBody``'s buffers with TLS or a fault. Every case compares the bytes received with the
/// archive on disk and says, through `X-Mock-Body`, which path served them.
@Suite("Packs served from their file")
struct LargePackTests {
    /// 3 MiB and change: four `sendfile` regions, thirteen `FileBody` chunks (so its four buffers go round
    /// more than three times), and a length that is a multiple of neither.
    static let size = (3 << 20) + 777

    struct RangeCase: Sendable, CustomTestStringConvertible {
        var name: String
        var header: String?
        var expected: @Sendable (Int) -> ClosedRange<Int>
        var testDescription: String { name }
    }

    static let ranges: [RangeCase] = [
        RangeCase(name: "whole", header: nil, expected: { 0...($0 - 1) }),
        RangeCase(name: "start", header: "bytes=0-99", expected: { _ in 0...99 }),
        // Across the first 1 MiB region and the 256 KiB chunks around it.
        RangeCase(name: "middle", header: "bytes=1000000-2200000", expected: { _ in 1_000_000...2_200_000 }),
        RangeCase(name: "suffix", header: "bytes=-1500000", expected: { ($0 - 1_500_000)...($0 - 1) }),
        RangeCase(name: "open-ended", header: "bytes=1048577-", expected: { 1_048_577...($0 - 1) }),
    ]

    @Test(arguments: ranges)
    func plainHTTPSendsTheFileBySendfile(_ range: RangeCase) async throws {
        let scratch = try Self.bigPackFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let archive = try scratch.archive(of: "Big", in: server.catalog)
            try await Self.expectServed(range, of: archive, by: "sendfile", from: server)
        }
    }

    @Test(arguments: ranges)
    func tlsStreamsTheFileThroughBuffers(_ range: RangeCase) async throws {
        let scratch = try Self.bigPackFolder()
        let tls = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: scratch.root.appending("tls-home"))
        )
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(try #require(tls.caFile).string)
        let client = HTTPClient(configuration: .init(tlsConfiguration: configuration))
        defer { _ = client.shutdown() }
        try await LiveServer.with(folder: scratch.root, tls: tls) { server in
            let archive = try scratch.archive(of: "Big", in: server.catalog)
            try await Self.expectServed(range, of: archive, by: "stream", from: server, client: client)
        }
    }

    /// A fault changes the bytes, so it needs them in buffers: a corrupted byte lands at its pack offset,
    /// in a range too, and every other byte is the file's.
    @Test func aFaultStreamsTheFileThroughBuffers() async throws {
        let scratch = try Self.bigPackFolder()
        let plan = FaultPlan(rules: [try FaultRule(parsing: "corrupt=2000000,pack=Big")], seed: 7)
        try await LiveServer.with(folder: scratch.root, faults: plan) { server in
            var archive = try scratch.archive(of: "Big", in: server.catalog)
            archive[2_000_000] ^= 0xFF
            for range in Self.ranges {
                try await Self.expectServed(range, of: archive, by: "stream", from: server)
            }
        }
    }

    /// `truncate` cuts a large pack's body at half: the client sees a short body, and the request line
    /// says what its socket took.
    @Test func aTruncatedLargePackStopsAtHalf() async throws {
        let scratch = try Self.bigPackFolder()
        let plan = FaultPlan(rules: [try FaultRule(parsing: "truncate,pack=Big")], seed: 7)
        try await LiveServer.with(folder: scratch.root, faults: plan) { server in
            let archive = try scratch.archive(of: "Big", in: server.catalog)
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let answer = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                peer.send("GET /assets/Big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                return peer.readAll(timeout: 10)
            }
            let (head, body) = try Self.split(answer)
            #expect(head.contains("x-mock-body: stream"), "\(head)")
            #expect(head.contains("content-length: \(archive.count)"), "\(head)")
            #expect(firstDifference(body, archive.prefix(archive.count / 2)) == nil, "\(body.count) bytes")
            try await waitForLines(server, count: 1)
            let line = try #require(server.requestLines.withLock { $0.first })
            #expect(line.contains(" 200 \(archive.count / 2)B "), "\(line)")
        }
    }

    /// Were Hummingbird's HTTP/1 codec not where ba-mock looks for it (an update moved it), `sendfile`
    /// markers would go out as body bytes. The server says so and streams every body through buffers
    /// instead: exact bytes, `X-Mock-Body: stream`.
    @Test func withoutTheHTTP1CodecBodiesStreamAndTheServerSaysSo() async throws {
        let scratch = try Self.bigPackFolder()
        let events = LiveServer.Lines()
        try await LiveServer.with(
            folder: scratch.root,
            adjust: { configuration in
                configuration.locateHTTP1Codec = { _ in nil }
                configuration.eventLog = { events.append($0) }
            }
        ) { server in
            let archive = try scratch.archive(of: "Big", in: server.catalog)
            for range in Self.ranges {
                try await Self.expectServed(range, of: archive, by: "stream", from: server)
            }
            let said = events.withLock { $0 }
            #expect(said.filter { $0.contains("sendfile is off") }.count == 1, "\(said)")
        }
    }

    /// An asset folder with one pack, `Big`, of ``size`` bytes of noise (which does not compress).
    static func bigPackFolder() throws -> Scratch {
        let scratch = try Scratch()
        try scratch.write("Big/data.bin", Scratch.noise(size, seed: 23))
        try scratch.write(
            "Big.json",
            #"{"assetPackID": "Big", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Big"}], "platforms": ["iOS"]}"#
        )
        return scratch
    }

    /// Fetches `range` of `Big` and checks status, length, range and bytes against `archive`, and the path
    /// (`X-Mock-Body`) that served them.
    static func expectServed(
        _ range: RangeCase,
        of archive: Data,
        by path: String,
        from server: LiveServer,
        client: HTTPClient = .shared
    ) async throws {
        #expect(archive.count > SmallPackCache.largestPack)
        let headers = range.header.map { [("Range", $0)] } ?? []
        let fetched = try await server.get("/assets/Big", headers: headers, client: client)
        let expected = range.expected(archive.count)
        #expect(fetched.header("X-Mock-Body") == path, "\(range.name)")
        #expect(fetched.header("Content-Length") == String(expected.count), "\(range.name)")
        if range.header == nil {
            #expect(fetched.status == 200)
            #expect(fetched.header("Content-Range") == nil)
        } else {
            #expect(fetched.status == 206, "\(range.name)")
            #expect(
                fetched.header("Content-Range")
                    == "bytes \(expected.lowerBound)-\(expected.upperBound)/\(archive.count)",
                "\(range.name)"
            )
        }
        #expect(fetched.body.count == expected.count, "\(range.name)")
        #expect(
            firstDifference(fetched.body, archive[expected]) == nil,
            "\(range.name): bytes differ from the file (\(fetched.body.count) bytes)"
        )
    }

    /// A raw answer's head (lowercased) and body.
    static func split(_ answer: Data) throws -> (String, Data) {
        let separator = Data("\r\n\r\n".utf8)
        let end = try #require(answer.range(of: separator))
        return (String(decoding: answer[..<end.lowerBound], as: UTF8.self).lowercased(), answer[end.upperBound...])
    }
}

import AssetPackFormat
import AsyncHTTPClient
import Foundation
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

@Suite("Serving packs over HTTP")
struct ServingTests {
    @Test func manifestDescribesTheFolder() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let fetched = try await server.get("/manifest")
            #expect(fetched.status == 200)
            #expect(fetched.header("Content-Type") == "application/json")
            #expect(String(decoding: fetched.body, as: UTF8.self).contains(#""onDemand" : {}"#))
            let raw = try #require(fetched.json?["assetPacks"] as? [[String: Any]])
            #expect(raw.map { $0["id"] as? String } == ["Levels", "Textures", "Tutorial"])
            for entry in raw {
                #expect((entry["host"] as? [String: Any])?["thirdParty"] != nil)
            }
            let manifest = try JSONDecoder().decode(DownloadManifest.self, from: fetched.body)
            let sources: [String: (policy: DownloadPolicy, files: [String])] = [
                "Tutorial": (.essential(installationEventTypes: [.firstInstallation]), ["Videos/Intro.m4v"]),
                "Levels": (
                    .prefetch(installationEventTypes: [.firstInstallation, .subsequentUpdate]),
                    ["Levels/World1/deep/nested/tiles.bin", "Levels/World1/level1.json", "Levels/World2/level1.json"]
                ),
                "Textures": (.onDemand, ["Textures/rock.ktx2"]),
            ]
            for entry in manifest.assetPacks {
                let expected = try #require(sources[entry.id])
                #expect(entry.url == server.url + "/assets/" + entry.id)
                #expect(entry.version == 1)
                #expect(entry.downloadPolicy == expected.policy)
                #expect(entry.fileCount == expected.files.count)
                let installSize = try expected.files.reduce(Int64(0)) {
                    $0 + Int64(try scratch.read(scratch.root.appending($1)).count)
                }
                #expect(entry.installSize == installSize)
                #expect(entry.compression == .zstd)
                let pack = try await server.get("/assets/\(entry.id)")
                #expect(Int64(pack.body.count) == entry.downloadSize)
                #expect(FileDigest.sha256(of: pack.body) == entry.sha256)
            }
        }
    }

    @Test func fullGetAndHead() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            let full = try await server.get("/assets/Tutorial")
            #expect(full.status == 200)
            #expect(full.body == archive)
            #expect(full.header("Content-Length") == String(archive.count))
            #expect(full.header("Accept-Ranges") == "bytes")
            #expect(full.header("ETag") == "\"\(FileDigest.sha256(of: archive))\"")
            #expect(full.header("Last-Modified").flatMap(HTTPDate.parse) != nil)
            #expect(full.header("X-Asset-Pack-Version") == "1")

            let head = try await server.get("/assets/Tutorial", method: .HEAD)
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.header("Content-Length") == String(archive.count))
            #expect(head.header("ETag") == full.header("ETag"))
        }
    }

    struct RangeCase: Sendable, CustomTestStringConvertible {
        var name: String
        var header: @Sendable (Int) -> String
        var expected: @Sendable (Int) -> ClosedRange<Int>?
        var testDescription: String { name }
    }

    static let ranges: [RangeCase] = [
        RangeCase(name: "first byte", header: { _ in "bytes=0-0" }, expected: { _ in 0...0 }),
        RangeCase(name: "last byte", header: { "bytes=\($0 - 1)-\($0 - 1)" }, expected: { ($0 - 1)...($0 - 1) }),
        RangeCase(name: "suffix", header: { _ in "bytes=-100" }, expected: { ($0 - 100)...($0 - 1) }),
        RangeCase(name: "suffix longer than the pack", header: { "bytes=-\($0 * 2)" }, expected: { 0...($0 - 1) }),
        RangeCase(name: "open-ended", header: { _ in "bytes=1000-" }, expected: { 1000...($0 - 1) }),
        RangeCase(name: "middle", header: { _ in "bytes=4096-8191" }, expected: { _ in 4096...8191 }),
        RangeCase(name: "end past the pack", header: { "bytes=10-\($0 + 5000)" }, expected: { 10...($0 - 1) }),
        RangeCase(name: "several ranges are served whole", header: { _ in "bytes=0-1,5-6" }, expected: { _ in nil }),
        RangeCase(name: "another unit is ignored", header: { _ in "items=0-1" }, expected: { _ in nil }),
        RangeCase(name: "malformed is ignored", header: { _ in "bytes=abc-def" }, expected: { _ in nil }),
    ]

    @Test(arguments: ranges)
    func rangedGet(_ range: RangeCase) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            let size = archive.count
            let fetched = try await server.get("/assets/Tutorial", headers: [("Range", range.header(size))])
            if let expected = range.expected(size) {
                #expect(fetched.status == 206)
                #expect(
                    fetched.header("Content-Range") == "bytes \(expected.lowerBound)-\(expected.upperBound)/\(size)"
                )
                #expect(fetched.body == archive[expected])
                #expect(fetched.header("Content-Length") == String(expected.count))
            } else {
                #expect(fetched.status == 200)
                #expect(fetched.body == archive)
            }
        }
    }

    @Test func unsatisfiableRangeIs416() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let size = try scratch.archive(of: "Tutorial", in: server.catalog).count
            for header in ["bytes=\(size)-", "bytes=\(size + 10)-\(size + 20)", "bytes=-0"] {
                let fetched = try await server.get("/assets/Tutorial", headers: [("Range", header)])
                #expect(fetched.status == 416, "\(header)")
                #expect(fetched.header("Content-Range") == "bytes */\(size)")
                #expect(fetched.errorCode == "rangeNotSatisfiable")
            }
        }
    }

    @Test func conditionalRequests() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            let first = try await server.get("/assets/Tutorial")
            let etag = try #require(first.header("ETag"))
            let lastModified = try #require(first.header("Last-Modified"))

            let notModified = try await server.get("/assets/Tutorial", headers: [("If-None-Match", etag)])
            #expect(notModified.status == 304)
            #expect(notModified.body.isEmpty)
            #expect(notModified.header("ETag") == etag)
            let other = try await server.get("/assets/Tutorial", headers: [("If-None-Match", "\"stale\"")])
            #expect(other.status == 200)
            #expect(other.body == archive)

            let staleIfRange = try await server.get(
                "/assets/Tutorial",
                headers: [("Range", "bytes=100-199"), ("If-Range", "\"0000\"")]
            )
            #expect(staleIfRange.status == 200)
            #expect(staleIfRange.body == archive)
            let freshIfRange = try await server.get(
                "/assets/Tutorial",
                headers: [("Range", "bytes=100-199"), ("If-Range", etag)]
            )
            #expect(freshIfRange.status == 206)
            #expect(freshIfRange.body == archive[100...199])
            let dateIfRange = try await server.get(
                "/assets/Tutorial",
                headers: [("Range", "bytes=100-199"), ("If-Range", lastModified)]
            )
            #expect(dateIfRange.status == 206)
        }
    }

    @Test(arguments: [
        "/assets/..%2F..%2Fetc%2Fpasswd", "/assets/%2e%2e%2f.ba-mock%2fstate.json", "/assets/../.ba-mock/state.json",
        "/.ba-mock/state.json", "/assets/", "/assets/Tutorial/extra", "/assets/Tutorial%00", "/Levels.json",
        "/assets/nope", "/", "/assets/Tutorial.json",
    ])
    func anythingOutsideTheRoutesIs404WithJSON(_ path: String) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let fetched = try await server.get(path)
            #expect(fetched.status == 404)
            #expect(fetched.header("Content-Type") == "application/json")
            #expect(["packNotFound", "routeNotFound"].contains(fetched.errorCode ?? ""), "\(path)")
            #expect(!String(decoding: fetched.body, as: UTF8.self).contains("formatVersion"))
        }
    }

    @Test func requestLinesSayWhatWasSent() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            _ = try await server.get("/assets/Tutorial", headers: [("Range", "bytes=0-99")])
            _ = try await server.get("/assets/nope")
            _ = try await server.get("/assets/Levels", method: .HEAD)
            try await waitForLines(server, count: 3)
            let lines = server.requestLines.withLock { $0 }
            #expect(lines.count == 3)
            #expect(lines.contains { $0.hasPrefix("HEAD /assets/Levels - 200 0B ") }, "\(lines)")
            #expect(lines.first?.hasPrefix("GET /assets/Tutorial bytes=0-99 206 100B ") == true, "\(lines)")
            #expect(lines.contains { $0.hasPrefix("GET /assets/nope - 404 ") }, "\(lines)")
        }
        try await LiveServer.with(folder: scratch.root, jsonLog: true) { server in
            _ = try await server.get("/assets/Levels")
            try await waitForLines(server, count: 1)
            let line = try #require(server.requestLines.withLock { $0.first })
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["method"] as? String == "GET")
            #expect(object["path"] as? String == "/assets/Levels")
            #expect(object["status"] as? Int == 200)
            #expect(object["bytes"] as? Int == (try scratch.archive(of: "Levels", in: server.catalog).count))
            #expect(object["ms"] is Double)
        }
    }
}

extension ServingTests {
    /// A client that read a few hundred bytes and reset was logged as if it had the whole pack (`200 856060B`,
    /// no mark). The line now says what the socket took (writes that completed) and that it was aborted: for
    /// a pack served from memory (up to 1 MiB) and one sent by `sendfile`, in text and in JSON.
    @Test(arguments: [("Mid", 1_000_000, false), ("Big", 8 << 20, true)])
    func aClientThatResetsIsLoggedWithWhatTheSocketTookAndAborted(_ id: String, _ size: Int, _ json: Bool)
        async throws
    {
        let scratch = try Scratch()
        try scratch.write("\(id)/data.bin", Scratch.noise(size, seed: 5))
        try scratch.write(
            "\(id).json",
            #"{"assetPackID": "\#(id)", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "\#(id)"}], "platforms": ["iOS"]}"#
        )
        try await LiveServer.with(folder: scratch.root, jsonLog: json) { server in
            let archive = try scratch.archive(of: id, in: server.catalog).count
            // Mid is served from memory, Big by sendfile: each path is the one under test.
            #expect((archive <= SmallPackCache.largestPack) == (id == "Mid"), "\(archive) bytes")
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let read = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 4096, maximumSegment: 1400)
                peer.send("GET /assets/\(id) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let read = peer.read(atLeast: 400, timeout: 10)
                peer.reset()
                return read
            }
            #expect(String(decoding: read.prefix(15), as: UTF8.self) == "HTTP/1.1 200 OK")
            #expect(read.count < 64 << 10, "\(read.count) bytes read")
            try await waitForLines(server) { $0.contains { $0.contains("/assets/\(id)") } }
            let line = try #require(server.requestLines.withLock { $0.first { $0.contains("/assets/\(id)") } })
            let (bytes, aborted) = try Self.loggedBytesAndAborted(line, json: json)
            #expect(aborted, "\(line)")
            // At most what fits in the two sockets' buffers, far less than the pack (or one sendfile region).
            #expect(bytes < min(archive, SendfileTransport.chunkLength), "\(line) for a pack of \(archive) bytes")
        }
    }

    /// The bytes and the aborted mark of a request line, text (`... 200 1234B 5.6ms aborted`) or JSON.
    static func loggedBytesAndAborted(_ line: String, json: Bool) throws -> (Int, Bool) {
        if json {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return (try #require(object["bytes"] as? Int), object["aborted"] as? Bool == true)
        }
        let words = line.split(separator: " ")
        let bytes = try #require(words.first { $0.hasSuffix("B") && Int($0.dropLast()) != nil }?.dropLast())
        return (try #require(Int(bytes)), words.last == "aborted")
    }
}

/// Waits up to 2 s for `count` request lines: a line is written when its body has been sent, which can be
/// after the client has read it.
func waitForLines(_ server: LiveServer, count: Int) async throws {
    try await waitForLines(server) { $0.count >= count }
}

/// Waits up to 2 s until the request lines satisfy `condition`.
func waitForLines(_ server: LiveServer, until condition: @escaping @Sendable ([String]) -> Bool) async throws {
    for _ in 0..<40 where !server.requestLines.withLock({ condition($0) }) {
        try await Task.sleep(for: .milliseconds(50))
    }
}

@Suite("Range header parsing")
struct ByteRangeTests {
    @Test func parses() {
        #expect(ByteRange.parse(nil, size: 10) == .full)
        #expect(ByteRange.parse("bytes=0-4", size: 10) == .partial(0...4))
        #expect(ByteRange.parse("bytes= 2 - ", size: 10) == .partial(2...9))
        #expect(ByteRange.parse("bytes=-3", size: 10) == .partial(7...9))
        #expect(ByteRange.parse("bytes=5-2", size: 10) == .full)
        #expect(ByteRange.parse("bytes=10-", size: 10) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 10) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=99999999999999999999-", size: 10) == .full)
        #expect(ByteRange.parse("bytes=+1-2", size: 10) == .full)
        #expect(ByteRange.parse("BYTES=1-2", size: 10) == .partial(1...2))
    }
}

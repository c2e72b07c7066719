import AssetPackFormat
import Foundation
import TestSupport
import Testing

@testable import AssetPackServer

/// ``DirectPackResponder``: small packs answered on the event loop, before the router, must be the router's
/// answers byte for byte, in order, on the request log and the board as the router's, and only where nothing
/// (a fault rule, a range, a `HEAD`, `Connection: close`) would change them.
@Suite("Small packs answered before the router")
struct DirectPackTests {
    /// Sends `requests` in one write on one connection and reads `count` responses.
    static func exchange(_ server: LiveServer, _ requests: [String], count: Int? = nil) async throws -> [RawResponse] {
        let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
        return try await onThreadOfItsOwn {
            let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
            peer.send(requests.joined())
            return peer.readResponses(count ?? requests.count, timeout: 10)
        }
    }

    static func get(_ path: String, _ headers: String = "") -> String {
        "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)\r\n"
    }

    /// The head without its `Date` and with `X-Mock-Body: memory`: what the two paths must agree on.
    static func comparable(_ response: RawResponse) -> [String] {
        response.head.filter { !$0.lowercased().hasPrefix("date:") }
            .map { $0 == "X-Mock-Body: direct" ? "X-Mock-Body: memory" : $0 }
    }

    @Test func aSmallPackIsAnsweredBeforeTheRouterWithTheRoutersBytes() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, adjust: { $0.requestLog = nil }) { server in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            // The first request reads the pack into memory through the router; the next ones find it there.
            let first = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            let browser =
                "User-Agent: app/1 CFNetwork/1\r\nAccept: */*\r\nAccept-Language: de-DE,de;q=0.9\r\n"
                + "Accept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\n"
            let direct = try await Self.exchange(
                server,
                [Self.get("/assets/Tutorial"), Self.get("/assets/Tutorial", browser)]
            )
            let routed = try await Self.exchange(server, [Self.get("/assets/Tutorial", "X-Client: test\r\n")])
            let all = first + direct + routed
            try #require(all.count == 4)
            #expect(all.map { $0.header("X-Mock-Body") } == ["memory", "direct", "direct", "memory"])
            for response in all {
                #expect(response.head.first == "HTTP/1.1 200 OK")
                #expect(firstDifference(response.body, archive) == nil)
                #expect(Self.comparable(response) == Self.comparable(all[0]))
                #expect(response.header("Date").flatMap(HTTPDate.parse) != nil)
            }
            #expect(all[0].header("ETag") == "\"\(FileDigest.sha256(of: archive))\"")
        }
    }

    /// A connection's answers reuse its last head only while the pack is the same: after a rebuild, the next
    /// answer on that connection has the new pack's `ETag`, version and bytes.
    @Test func aRebuiltPackIsAnsweredWithItsNewHeadOnTheSameConnection() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, adjust: { $0.requestLog = nil }) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
            let ask = { @Sendable (count: Int) in
                try await onThreadOfItsOwn { () -> [RawResponse] in
                    (0..<count).flatMap { _ in
                        peer.send(Self.get("/assets/Tutorial"))
                        return peer.readResponses(1, timeout: 10)
                    }
                }
            }
            let before = try await ask(2)
            try scratch.write("Videos/Intro.m4v", Scratch.noise(200_000, seed: 9))
            _ = try await server.catalog.refresh()
            let rebuilt = try scratch.archive(of: "Tutorial", in: server.catalog)
            let after = try await ask(2)
            try #require(before.count == 2 && after.count == 2)
            #expect((before + after).map { $0.header("X-Mock-Body") } == ["memory", "direct", "memory", "direct"])
            #expect(
                after.map { $0.header("ETag") } == Array(repeating: "\"\(FileDigest.sha256(of: rebuilt))\"", count: 2)
            )
            #expect(after[1].header("X-Asset-Pack-Version") == after[0].header("X-Asset-Pack-Version"))
            #expect(after[1].header("X-Asset-Pack-Version") != before[1].header("X-Asset-Pack-Version"))
            #expect(firstDifference(after[1].body, rebuilt) == nil)
        }
    }

    @Test func answersKeepTheirOrderWhenTheRouterAnswersTheOneBefore() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, adjust: { $0.requestLog = nil }) { server in
            let tutorial = try scratch.archive(of: "Tutorial", in: server.catalog)
            let levels = try scratch.archive(of: "Levels", in: server.catalog)
            _ = try await Self.exchange(server, [Self.get("/assets/Tutorial"), Self.get("/assets/Levels")])
            // In one write: the router's answer to the first is not made yet when the second is read.
            let responses = try await Self.exchange(
                server,
                [
                    Self.get("/assets/Levels", "X-Client: test\r\n"), Self.get("/assets/Tutorial"),
                    Self.get("/assets/Levels"), Self.get("/assets/Tutorial", "Range: bytes=0-9\r\n"),
                    Self.get("/assets/Tutorial"),
                ]
            )
            try #require(responses.count == 5)
            let statuses = responses.map { $0.head.first ?? "" }
            let expectedStatuses = ["200 OK", "200 OK", "200 OK", "206 Partial Content", "200 OK"]
            #expect(statuses == expectedStatuses.map { "HTTP/1.1 \($0)" })
            let expected = [levels, tutorial, levels, tutorial.prefix(10), tutorial]
            for (response, bytes) in zip(responses, expected) {
                #expect(firstDifference(response.body, Data(bytes)) == nil, "\(response.head)")
            }
        }
    }

    @Test func whatWouldChangeAnAnswerSendsItToTheRouter() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let faults = FaultPlan(seed: 1)
        try await LiveServer.with(folder: scratch.root, faults: faults, adjust: { $0.requestLog = nil }) { server in
            // The first answer reads the pack into memory (the router's); the next is made here.
            var warm = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            warm += try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            #expect(warm.map { $0.header("X-Mock-Body") } == ["memory", "direct"])

            // A HEAD answer has a Content-Length and no body: read to the close the second request asks for.
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let answer = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                peer.send("HEAD /assets/Tutorial HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                peer.send(Self.get("/assets/Tutorial", "Connection: close\r\n"))
                return String(decoding: peer.readAll(timeout: 10), as: UTF8.self)
            }
            let heads = answer.components(separatedBy: "\r\n\r\n")
            #expect(heads.first?.contains("\r\nX-Mock-Body: memory\r\n") == true, "HEAD: \(heads.first ?? "")")
            #expect(heads.dropFirst().first?.contains("\r\nX-Mock-Body: memory\r\n") == true, "Connection: close")

            faults.add(try FaultRule(parsing: "latency=1"))
            let faulty = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            #expect(faulty.first?.header("X-Mock-Fault") == "latency=1", "a fault rule")
            faults.clear()
            let cleared = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            #expect(cleared.first?.header("X-Mock-Body") == "direct", "no rule left")
        }
    }

    /// The request log's lines of answers made here are the router's lines, but for the time taken.
    @Test func directAnswersAreOnTheRequestLog() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let size = try scratch.archive(of: "Tutorial", in: server.catalog).count
            var answers = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            answers += try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            #expect(answers.map { $0.header("X-Mock-Body") } == ["memory", "direct"])
            // A line is written once its answer's last write completed, which may be after the client read it.
            var lines: [String] = []
            for _ in 0..<200 {
                lines = server.requestLines.withLock { $0 }
                if lines.count == 2 { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            let untimed = lines.map { $0.split(separator: " ").dropLast().joined(separator: " ") }  // less `12.3ms`
            #expect(untimed == Array(repeating: "GET /assets/Tutorial - 200 \(size)B", count: 2), "\(lines)")
        }
    }

    /// With a dashboard page open (and no request log), answers made here are on its board, with their bytes.
    @Test(.timeLimit(.minutes(1))) func directAnswersAreOnTheDashboardsBoard() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, adjust: { $0.requestLog = nil }) { server in
            let size = try scratch.archive(of: "Tutorial", in: server.catalog).count
            _ = try await Self.exchange(server, [Self.get("/assets/Tutorial")])  // read into memory, not on a board
            let event = try await firstFinishedRows(
                on: server,
                once: {
                    let answers = try await Self.exchange(
                        server,
                        [Self.get("/assets/Tutorial"), Self.get("/assets/Tutorial")]
                    )
                    #expect(answers.map { $0.header("X-Mock-Body") } == ["direct", "direct"])
                },
                until: { $0.count == 2 }
            )
            guard let (finished, block) = event else {
                Issue.record("the stream ended without the two answers")
                return
            }
            #expect(finished.map { $0["path"] as? String } == ["/assets/Tutorial", "/assets/Tutorial"])
            #expect(finished.map { $0["sent"] as? Int } == [size, size], "\(block)")
            #expect(finished.map { $0["pack"] as? String } == ["Tutorial", "Tutorial"])
            #expect(finished.map { $0["client"] as? String } == ["127.0.0.1", "127.0.0.1"])
            #expect(finished.map { $0["aborted"] as? Bool } == [false, false], "\(block)")
        }
    }

    /// A request that comes in a few pieces is answered here once its head is whole; one dripped a byte at a
    /// time goes to the decoder (which reads on where it stopped, where this would read the head again each
    /// time); bytes this does not delimit (a body) send that request and every later one on the connection to
    /// the router. The bytes are right every way.
    @Test func requestsInPiecesAndRequestsWithABody() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, adjust: { $0.requestLog = nil }) { server in
            let archive = try scratch.archive(of: "Tutorial", in: server.catalog)
            _ = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let (pieces, bodies) = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                var pieces: [RawResponse] = []
                for size in [20, 1] {  // 3 pieces, then a piece a byte
                    var request = Substring(Self.get("/assets/Tutorial", "Accept: */*\r\n"))
                    while !request.isEmpty {
                        peer.send(String(request.prefix(size)))
                        request = request.dropFirst(size)
                        Thread.sleep(forTimeInterval: 0.005)
                    }
                    pieces += peer.readResponses(1, timeout: 10)
                }
                peer.send(
                    "GET /assets/Tutorial HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 22\r\n\r\n"
                        + Self.get("/assets/Levels").prefix(22) + Self.get("/assets/Tutorial")
                )
                return (pieces, peer.readResponses(2, timeout: 10))
            }
            #expect(pieces.map { $0.header("X-Mock-Body") } == ["direct", "memory"])
            for response in pieces { #expect(firstDifference(response.body, archive) == nil) }
            // The body looks like a request: were it read as one, the first answer would be Levels'.
            try #require(bodies.count == 2)
            #expect(bodies.map { $0.header("X-Mock-Body") } == ["memory", "memory"])
            for response in bodies { #expect(firstDifference(response.body, archive) == nil) }
        }
    }

    /// The request head timeout counts from the last answer made here too: a connection that asks every
    /// 300 ms is not closed by a 1 s timeout, however long it keeps asking.
    @Test func theHeadTimeoutCountsFromTheLastDirectAnswer() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, requestHeadTimeout: .seconds(1)) { server in
            _ = try await Self.exchange(server, [Self.get("/assets/Tutorial")])
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let answers = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                var answers: [RawResponse] = []
                for _ in 0..<8 {  // 8 × 300 ms: 2.4 s on one connection
                    Thread.sleep(forTimeInterval: 0.3)
                    peer.send(Self.get("/assets/Tutorial"))
                    answers += peer.readResponses(1, timeout: 5)
                }
                return answers
            }
            #expect(answers.map { $0.header("X-Mock-Body") } == Array(repeating: "direct", count: 8))
        }
    }

    /// A graceful shutdown closes a connection idle after answers made here at once, as it closes any idle
    /// connection (Hummingbird's handler that does it knows nothing of these answers): it is not held until
    /// the head timeout.
    @Test func aShutdownClosesAConnectionIdleAfterDirectAnswers() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let (peer, answers, bodyEnded) = try await LiveServer.with(
            folder: scratch.root,
            requestHeadTimeout: .seconds(20),
            adjust: { $0.requestLog = nil }
        ) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let (peer, answers) = try await onThreadOfItsOwn {
                let peer = try RawConnection(port: port, receiveBuffer: 1 << 20)
                peer.send(Self.get("/assets/Tutorial"))
                var answers = peer.readResponses(1, timeout: 10)
                peer.send(Self.get("/assets/Tutorial"))
                answers += peer.readResponses(1, timeout: 10)
                return (peer, answers)
            }
            return (peer, answers, Date())
        }
        let shutdown = Date().timeIntervalSince(bodyEnded)
        #expect(answers.map { $0.header("X-Mock-Body") } == ["memory", "direct"])
        #expect(shutdown < 5, "the shutdown waited \(shutdown) s for an idle connection")
        let closed = try await onThreadOfItsOwn { peer.readAll(timeout: 2) }
        #expect(closed.isEmpty, "nothing but the close after the answers")
    }
}

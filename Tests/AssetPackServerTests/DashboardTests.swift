import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import TestSupport
import Testing

@testable import AssetPackServer

/// The dashboard's page and event stream, and the control API it calls, without a browser (the browser
/// tests are in EndToEndTests).
@Suite("Dashboard")
struct DashboardTests {
    /// The first event of `/_mock/events` on `server`: its name and JSON data.
    func firstEvent(_ server: LiveServer, path: String = "/_mock/events") async throws -> (String, [String: Any]) {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: server.url + path),
            timeout: .seconds(30)
        )
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "Content-Type") == "text/event-stream")
        var text = ""
        for try await chunk in response.body {
            text += String(buffer: chunk)
            // Only blocks whose blank line arrived are whole.
            let blocks = text.components(separatedBy: "\n\n").dropLast().filter { $0.hasPrefix("event: ") }
            guard let block = blocks.first else { continue }
            let lines = block.split(separator: "\n")
            let name = String(lines[0].dropFirst("event: ".count))
            let data = Data(lines[1].dropFirst("data: ".count).utf8)
            return (name, try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]))
        }
        throw CancellationError()
    }

    @Test func thePageIsOneDocumentThatFetchesNothingElsewhere() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            for path in ["/_mock/", "/_mock"] {
                let page = try await server.get(path)
                #expect(page.status == 200, "\(path)")
                #expect(page.header("Content-Type") == "text/html; charset=utf-8")
                let html = String(decoding: page.body, as: UTF8.self)
                #expect(html.contains("new EventSource(\"/_mock/events\""))
                #expect(!html.contains("/*STYLE*/") && !html.contains("/*SCRIPT*/"), "style and script inline")
                #expect(!html.contains("src=") && !html.contains("href=\"http"), "nothing fetched from elsewhere")
            }
        }
    }

    @Test func theStreamStartsWithTheSnapshotOfPacksAndFaults() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let faults = FaultPlan(rules: [try FaultRule(parsing: "status=503,pack=Levels")], seed: 7)
        try await LiveServer.with(folder: scratch.root, faults: faults) { server in
            let (name, snapshot) = try await firstEvent(server)
            #expect(name == "snapshot")
            let packs = try #require(snapshot["packs"] as? [[String: Any]])
            #expect(packs.compactMap { $0["id"] as? String } == ["Levels", "Textures", "Tutorial"])
            #expect(packs.allSatisfy { $0["build"] as? String == "published" })
            #expect(packs.first?["policy"] as? String == "prefetch")
            #expect(snapshot["faults"] as? [String] == ["status=503,pack=Levels"])
        }
    }

    @Test func oneFaultRuleIsRemovedByItsIndex() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            _ = try await server.get("/_mock/faults", method: .POST, body: "latency=1")
            _ = try await server.get("/_mock/faults", method: .POST, body: "status=503")
            let removed = try await server.get("/_mock/faults/0", method: .DELETE)
            #expect(removed.status == 200)
            #expect(removed.json?["removed"] as? String == "latency=1")
            #expect(removed.json?["faults"] as? [String] == ["status=503"])
            let missing = try await server.get("/_mock/faults/5", method: .DELETE)
            #expect(missing.status == 400)
        }
    }

    /// A web page open in a browser on this machine can send requests to 127.0.0.1: the control API refuses
    /// any that a page of another origin sent (`Origin`, `Sec-Fetch-Site`), and any whose `Host` is not this
    /// machine (a DNS-rebinding name), while `curl` and the dashboard's own page keep working.
    @Test func aPageOfAnotherSiteCannotSteerTheMock() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let authority = String(server.url.dropFirst("http://".count))
            for headers in [
                [("Origin", "http://evil.example")], [("Origin", "null")],
                [("Origin", "http://localhost:3000")],
                [("Sec-Fetch-Site", "cross-site")], [("Sec-Fetch-Site", "same-site")],
                [("Host", "rebound.evil.example:\(authority.split(separator: ":").last ?? "")")],
            ] {
                let refused = try await server.get("/_mock/faults", method: .POST, headers: headers, body: "status=500")
                #expect(refused.status == 403, "\(headers)")
                #expect(refused.errorCode == "crossSite", "\(headers)")
                #expect(
                    (refused.json?["error"] as? [String: Any])?["message"] as? String
                        == "refused a request to /_mock/ from a web page of another site; a page may not steer "
                        + "ba-mock. Fix: use the dashboard at the URL ba-mock printed, or a tool such as curl",
                    "\(headers)"
                )
            }
            #expect(try await server.get("/_mock/faults").json?["faults"] as? [String] == [], "nothing was added")
            // The dashboard's own page (same origin), and tools that send no Origin, are served.
            let ownPage = [("Origin", server.url), ("Sec-Fetch-Site", "same-origin")]
            #expect(
                try await server.get("/_mock/faults", method: .POST, headers: ownPage, body: "latency=1").status == 201
            )
            #expect(try await server.get("/_mock/faults", method: .POST, body: "latency=2").status == 201)
            let typed = [
                ("Sec-Fetch-Site", "none"), ("Host", "localhost:\(authority.split(separator: ":").last ?? "")"),
            ]
            #expect(try await server.get("/_mock/", headers: typed).status == 200)
            #expect(try await server.get("/manifest", headers: [("Origin", "http://evil.example")]).status == 200)
        }
    }

    @Test func aTokenIsNeededWhenOneIsSet() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, controlToken: "s3cret") { server in
            let refused = try await server.get("/_mock/")
            #expect(refused.status == 401)
            #expect(refused.errorCode == "unauthorized")
            #expect(try await server.get("/_mock/faults").status == 401)
            #expect(try await server.get("/_mock/?token=wrong").status == 401)
            #expect(try await server.get("/_mock/?token=s3cret").status == 200)
            #expect(try await server.get("/_mock/faults", headers: [("X-BA-Mock-Token", "s3cret")]).status == 200)
            #expect(try await firstEvent(server, path: "/_mock/events?token=s3cret").0 == "snapshot")
            #expect(try await server.get("/manifest").status == 200, "packs need no token")
        }
        #expect(ServerConfiguration.token(forHost: "127.0.0.1") == nil)
        #expect(ServerConfiguration.token(forHost: "localhost") == nil)
        #expect(ServerConfiguration.token(forHost: "::1") == nil)
        #expect(
            ServerConfiguration.dashboardURL(served: "https://192.168.1.20:8443", host: "0.0.0.0", token: "t")
                == "https://127.0.0.1:8443/_mock/?token=t"
        )
        #expect(
            ServerConfiguration.dashboardURL(served: "http://[::]:80", host: "::", token: nil)
                == "http://[::1]:80/_mock/"
        )
        #expect(
            ServerConfiguration.dashboardURL(served: "http://127.0.0.1:9", host: "127.0.0.1", token: nil)
                == "http://127.0.0.1:9/_mock/"
        )
        let token = try #require(ServerConfiguration.token(forHost: "0.0.0.0"))
        #expect(token.count == 32)
        #expect(token != ServerConfiguration.token(forHost: "0.0.0.0"))
    }

    /// The request log keeps the last `capacity` responses whatever the rate: a ring, oldest dropped.
    @Test func theRequestLogIsBounded() {
        let board = DownloadBoard(capacity: 3)
        for _ in 1...10 {
            let id = board.reserveID()
            let request = DownloadBoard.InFlight(
                id: id,
                client: "127.0.0.1",
                method: "GET",
                path: "/assets/Levels",
                pack: "Levels",
                range: nil,
                status: 200,
                total: 10,
                fault: nil,
                sent: 0,
                started: Date()
            )
            board.begin(request, entry: ResponseTally.Entry { _, _ in })
            #expect(board.inFlight.map(\.id) == [id])
            board.finish(id, bytes: 10, aborted: false)
        }
        #expect(board.inFlight.isEmpty)
        #expect(board.finished(after: 0).map(\.sequence) == [8, 9, 10])
        #expect(board.finished(after: 9).map(\.sequence) == [10])
        // A tick takes at most its limit, the newest: a reader far behind skips the rest.
        #expect(board.finished(after: 0, limit: 2).map(\.sequence) == [9, 10])
        #expect(board.finished(after: 10, limit: 2).isEmpty)
        #expect(board.finishedCount == 10)
        #expect(DownloadBoard.pack(inPath: "/deltas/Levels/0123456789abcdef") == "Levels")
        #expect(DownloadBoard.pack(inPath: "/manifest") == nil)
        #expect(DownloadBoard.pack(inPath: "/assets/%C3%9Cber%20Pack") == "Über Pack")
        #expect(DownloadBoard.pack(inPath: "/assets/Über") == "Über")
        #expect(DownloadBoard.pack(inPath: "//assets//Levels//x") == "Levels")
        #expect(DownloadBoard.pack(inPath: "/assets/50%") == "50%")  // not an escape: kept as it is
    }

    /// The first `downloads` event of a new stream, as sent: its bytes.
    func firstDownloadsEvent(_ server: LiveServer) async throws -> String {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: server.url + "/_mock/events"),
            timeout: .seconds(60)
        )
        var text = ""
        for try await chunk in response.body {
            text += String(buffer: chunk)
            let blocks = text.components(separatedBy: "\n\n").dropLast()
            if let block = blocks.first(where: { $0.hasPrefix("event: downloads") }) { return block }
        }
        throw CancellationError()
    }

    /// What one stream holds is one event, awaited until the socket takes it; that event is bounded whatever
    /// the requests were: paths of 60 KB (each 404) are kept shortened, and at most 100 finished rows travel
    /// in one event, so 200 slow pages cannot hold 200 copies of megabytes. (A page is open while the requests
    /// are made, so they are on the board; a second page's first event carries them.)
    @Test func anEventIsBoundedWhateverThePathsRequested() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root) { server in
            let port = try #require(server.url.split(separator: ":").last.flatMap { Int($0) })
            let page = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: server.url + "/_mock/events"),
                timeout: .seconds(60)
            )
            var pageBody = page.body.makeAsyncIterator()
            _ = try await pageBody.next()  // its snapshot: the page is open
            let long = "/assets/" + String(repeating: "x", count: 60_000)
            for _ in 0...DashboardFeed.finishedPerEvent {  // one more than an event carries
                let connection = try RawConnection(port: port, receiveBuffer: 1 << 20)
                connection.send("GET \(long) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                _ = connection.readAll(timeout: 10)
            }
            let event = try await firstDownloadsEvent(server)
            let data = Data(try #require(event.split(separator: "\n").last?.dropFirst("data: ".count)).utf8)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let finished = try #require(object["finished"] as? [[String: Any]])
            #expect(finished.count == 100)
            let paths = finished.compactMap { $0["path"] as? String }
            #expect(paths.allSatisfy { $0.utf8.count <= 1100 && $0.contains("60008 bytes") }, "\(paths.first ?? "")")
            #expect(event.utf8.count < 300_000, "one event: \(event.utf8.count) bytes")
            withExtendedLifetime(pageBody) {}
        }
    }

    /// Nothing is put on the board while no page is open (under `--quiet`, no request log, nothing counts a
    /// response's bytes then): it starts when a page connects. A response made before shows on no page; one
    /// made while it is open does.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func onlyResponsesWhileAPageIsOpenAreOnTheBoard(withRequestLog: Bool) async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try await LiveServer.with(folder: scratch.root, adjust: { if !withRequestLog { $0.requestLog = nil } }) {
            server in
            _ = try await server.get("/assets/made-before-any-page")
            // The first downloads event that lists a finished response (an earlier one may show it in flight).
            let event = try await firstFinishedRows(
                on: server,
                once: { _ = try await server.get("/manifest") },
                until: { !$0.isEmpty }
            )
            guard let (finished, block) = event else {
                Issue.record("the stream ended without a downloads event")
                return
            }
            #expect(finished.map { $0["path"] as? String } == ["/manifest"], "\(block)")
            #expect(finished.map { $0["sequence"] as? Int } == [1])
        }
    }

    /// A page left open does not hold a shutdown: its event stream ends, whole, when the server stops (with
    /// no grace period set here, a stream that went on would hang this test until its time limit).
    @Test(.timeLimit(.minutes(1))) func anOpenStreamEndsWhenTheServerShutsDown() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let reading = try await LiveServer.with(folder: scratch.root) { server in
            let response = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: server.url + "/_mock/events"),
                timeout: .seconds(60)
            )
            return Task {
                var text = ""
                for try await chunk in response.body { text += String(buffer: chunk) }
                return text
            }
        }
        let text = try await reading.value
        #expect(text.contains("event: snapshot"), "\(text)")
    }
}

/// Opens a dashboard page's event stream on `server`, runs `once` when its first snapshot arrived (the page is
/// open by then), and returns the `finished` rows of the first `downloads` event they satisfy `enough` in,
/// with that event's text; `nil` if the stream ended first.
func firstFinishedRows(
    on server: LiveServer,
    once: () async throws -> Void,
    until enough: ([[String: Any]]) -> Bool
) async throws -> (rows: [[String: Any]], event: String)? {
    let response = try await HTTPClient.shared.execute(
        HTTPClientRequest(url: server.url + "/_mock/events"),
        timeout: .seconds(60)
    )
    var text = ""
    var asked = false
    for try await chunk in response.body {
        text += String(buffer: chunk)
        if !asked, text.contains("event: snapshot") {
            asked = true
            try await once()
        }
        for block in text.components(separatedBy: "\n\n").dropLast() where block.hasPrefix("event: downloads") {
            let data = Data(try #require(block.split(separator: "\n").last?.dropFirst("data: ".count)).utf8)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let finished = try #require(object["finished"] as? [[String: Any]])
            if enough(finished) { return (finished, block) }
        }
    }
    return nil
}

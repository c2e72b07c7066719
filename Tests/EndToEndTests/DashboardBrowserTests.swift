import AssetPackFormat
import AssetPackServer
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import SystemPackage
import TestSupport
import Testing

/// The dashboard at `/_mock/` in a real browser (headless Chromium through chromedriver) against the built
/// `ba-mock serve`: what a person watching it sees, and what its form does to the next download.
@Suite(
    "dashboard in a browser",
    .serialized,
    .disabled(if: WebDriver.unavailable != nil, Comment(rawValue: WebDriver.unavailable ?? ""))
)
struct DashboardBrowserTests {
    let tool = builtProduct("ba-mock")

    /// Serves a copy of the sample folder, watched every 0.1 s, and opens its dashboard.
    func withDashboard(
        _ extra: [String] = [],
        _ body: @Sendable (_ browser: WebDriver, _ url: String, _ scratch: Scratch) async throws -> Void
    ) async throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        let server = try RunningTool(
            tool,
            ["serve", folder.string, "--port", "0", "--watch-interval", "0.1", "--settle", "0.2"] + extra
        )
        defer { server.interrupt(signal: SIGTERM, timeout: 15) }
        let url = try #require(server.waitForFirstLine(), "no URL on stdout; stderr: \(server.stderr)")
        try await WebDriver.with { browser in
            try await browser.open(url + "/_mock/")
            try await browser.wait(for: "return document.getElementById('status').textContent === 'live'")
            // Said on stderr (written by a queue of its own, so looked at once the page is up).
            #expect(server.stderr.contains("dashboard: \(url)/_mock/ (from this machine only)"), "\(server.stderr)")
            try await body(browser, url, scratch)
        }
    }

    static let packIDs = "return [...document.querySelectorAll('#packs tbody tr[data-pack]')].map(r => r.dataset.pack)"

    static func cell(_ pack: String, _ field: String) -> String {
        "const c = document.querySelector('#packs tr[data-pack=\"\(pack)\"] td[data-field=\"\(field)\"]');"
            + " return c ? c.textContent : null"
    }

    func get(_ url: String) async throws -> (status: Int, fault: String?) {
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: url), timeout: .seconds(60))
        _ = try await response.body.collect(upTo: 512 << 20)
        return (Int(response.status.code), response.headers.first(name: "X-Mock-Fault"))
    }

    /// The page lists every pack with its build state, and a file added on disk shows as the next version
    /// without a reload.
    @Test func listsThePacksAndShowsAnEditWithoutAReload() async throws {
        try await withDashboard { browser, _, scratch in
            let ids = try await browser.wait(for: Self.packIDs) { ($0 as? [String])?.count == 3 }
            #expect(ids as? [String] == ["HighResTextures", "Levels", "Tutorial"])
            #expect(try await browser.run(Self.cell("Levels", "build")) as? String == "published")
            #expect(try await browser.run(Self.cell("Levels", "policy")) as? String == "prefetch")
            #expect(try await browser.run(Self.cell("Levels", "version")) as? String == "1")
            try await browser.run("window.sameDocument = true")
            _ = try scratch.write("Assets/Levels/added-while-watching.txt", "new level")
            try await browser.wait(for: Self.cell("Levels", "version")) { ($0 as? String)?.hasPrefix("2") == true }
            #expect(try await browser.run("return window.sameDocument === true") as? Bool == true, "no reload")
            // On a phone's width every row is a card: nothing wider than the screen.
            try await browser.resize(width: 390, height: 844)
            try await browser.wait(for: "return window.innerWidth < 500")
            let overflow = try await browser.run(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            #expect(overflow as? Int == 0, "the page scrolls sideways by \(String(describing: overflow)) px")
        }
    }

    /// The first paint already shows the packs (the page carries the first snapshot) and says "loading" where
    /// the stream has not spoken yet, instead of empty tables beside "live"; each pack shows its format.
    @Test func theFirstPaintShowsThePacksAndTheirFormat() async throws {
        try await withDashboard { browser, _, _ in
            // What the script had drawn before it opened the event stream, kept by the page for this check.
            let first = try await browser.run("return document.body.dataset.firstPaint || null")
            #expect(first as? String == "HighResTextures,Levels,Tutorial|loading…", "\(String(describing: first))")
            try await browser.wait(for: Self.cell("Levels", "format")) { $0 as? String == "aar lzfse" }
            #expect(try await browser.run(Self.cell("Levels", "language")) as? String == "–")
            try await browser.wait(for: "return document.getElementById('downloads-empty').textContent === 'none'")
        }
    }

    /// A manifest broken on disk shows its problem (message, file, fix) while the last good version stays.
    @Test func aBrokenManifestShowsItsProblem() async throws {
        try await withDashboard { browser, _, scratch in
            try await browser.wait(for: Self.cell("Levels", "build")) { $0 as? String == "published" }
            _ = try scratch.write(
                "Assets/Levels.json",
                #"{"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}}"#
            )
            try await browser.wait(for: Self.cell("Levels", "build")) { $0 as? String == "broken" }
            let problem = try await browser.run(
                "return document.querySelector('#packs tr[data-problems=\"Levels\"]').textContent"
            )
            let text = try #require(problem as? String)
            #expect(text.contains("fileSelectors"), "\(text)")
            #expect(text.contains("Levels.json"), "\(text)")
            #expect(text.contains("Fix: "), "\(text)")
            #expect(text.contains("version 1 stays published"), "\(text)")
        }
    }

    /// A fault added with the page's form is applied to the next download, and gone once removed on the page.
    @Test func aFaultFromTheFormAppliesToTheNextDownloadUntilRemoved() async throws {
        try await withDashboard { browser, url, _ in
            try await browser.wait(for: Self.packIDs) { ($0 as? [String])?.count == 3 }
            try await browser.choose("status", in: "#fault-kind")
            try await browser.type("503", into: "#fault-value")
            try await browser.choose("Tutorial", in: "#fault-pack")
            try await browser.click("#fault-add")
            try await browser.wait(
                for: "return [...document.querySelectorAll('#faults li')].map(l => l.dataset.rule)"
            ) { ($0 as? [String]) == ["status=503,pack=Tutorial"] }
            let faulted = try await get(url + "/assets/Tutorial")
            #expect(faulted.status == 503)
            #expect(faulted.fault == "status=503,pack=Tutorial")
            #expect(try await get(url + "/assets/Levels").status == 200, "limited to Tutorial")
            try await browser.click("#faults li button.fault-remove")
            try await browser.wait(for: "return document.querySelectorAll('#faults li').length === 0")
            let after = try await get(url + "/assets/Tutorial")
            #expect(after.status == 200)
            #expect(after.fault == nil)
            // The finished downloads reach the request log, which filters by status.
            try await browser.type("503", into: "#log-status")
            try await browser.wait(
                for: "return [...document.querySelectorAll('#log tbody tr')].map(r => r.dataset.status)"
            ) { ($0 as? [String]) == ["503"] }
            // Paused, the log shown stays put while new entries arrive; resumed, they show.
            try await browser.type("2", into: "#log-status")
            let shown = "return document.querySelectorAll('#log tbody tr').length"
            try await browser.wait(for: shown) { $0 as? Int == 2 }
            try await browser.click("#log-pause")
            let kept = try #require(try await browser.run("return state.log.length") as? Int)
            #expect(try await get(url + "/assets/Levels").status == 200)
            try await browser.wait(for: "return state.log.length") { ($0 as? Int ?? 0) > kept }
            #expect(try await browser.run(shown) as? Int == 2, "paused")
            try await browser.click("#log-pause")
            try await browser.wait(for: shown) { $0 as? Int == 3 }
        }
    }

    /// Pin, Unpin, Mark obsolete and Publish again on the page change what the manifest publishes.
    @Test func pinAndObsoleteFromThePageChangeTheManifest() async throws {
        try await withDashboard { browser, url, _ in
            try await browser.wait(for: Self.cell("Levels", "version")) { $0 as? String == "1" }
            try await browser.type("7", into: "#packs tr[data-pack=\"Levels\"] td.steer input")
            try await browser.click("#packs tr[data-pack=\"Levels\"] button.pin")
            try await browser.wait(for: Self.cell("Levels", "version")) { $0 as? String == "7 (content 1)" }
            #expect(try await browser.run(Self.cell("Levels", "pin")) as? String == "pinned (control)")
            #expect(try await manifestVersions(url)["Levels"] == 7)
            try await browser.click("#packs tr[data-pack=\"Levels\"] button.unpin")
            try await browser.wait(for: Self.cell("Levels", "version")) { $0 as? String == "1" }
            try await browser.click("#packs tr[data-pack=\"Levels\"] button.obsolete")
            try await browser.wait(for: Self.cell("Levels", "obsolete")) { $0 as? String == "obsolete" }
            #expect(try await manifestVersions(url)["Levels"] == nil, "no longer published")
            try await browser.click("#packs tr[data-pack=\"Levels\"] button.publish")
            try await browser.wait(for: Self.cell("Levels", "obsolete")) { $0 as? String == "–" }
            #expect(try await manifestVersions(url)["Levels"] == 1)
        }
    }

    /// A version being typed in a row's Pin box survives the table being drawn again (here a fault added
    /// through the control API, which every open page is sent), focus included, and Pin publishes it: the table
    /// was rebuilt from each snapshot, and what was typed went back to the published version.
    @Test func aVersionBeingTypedSurvivesARedraw() async throws {
        try await withDashboard { browser, url, _ in
            try await browser.wait(for: Self.cell("Levels", "version")) { $0 as? String == "1" }
            let input = "#packs tr[data-pack=\"Levels\"] td.steer input"
            try await browser.type("7", into: input)
            var request = HTTPClientRequest(url: url + "/_mock/faults")
            request.method = .POST
            request.body = .bytes(ByteBuffer(string: "latency=1,pack=Tutorial"))
            _ = try await HTTPClient.shared.execute(request, timeout: .seconds(30)).body.collect(upTo: 1 << 20)
            try await browser.wait(for: "return document.querySelectorAll('#faults li').length === 1")
            #expect(try await browser.run("return document.querySelector('\(input)').value") as? String == "7")
            let focused = "return document.activeElement === document.querySelector('\(input)')"
            #expect(try await browser.run(focused) as? Bool == true)
            try await browser.click("#packs tr[data-pack=\"Levels\"] button.pin")
            try await browser.wait(for: Self.cell("Levels", "version")) { $0 as? String == "7 (content 1)" }
            #expect(try await manifestVersions(url)["Levels"] == 7)
        }
    }

    func manifestVersions(_ url: String) async throws -> [String: Int] {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: url + "/manifest"),
            timeout: .seconds(30)
        )
        let body = try await response.body.collect(upTo: 16 << 20)
        let manifest = try JSONDecoder().decode(DownloadManifest.self, from: Data(body.readableBytesView))
        return Dictionary(uniqueKeysWithValues: manifest.assetPacks.map { ($0.id, $0.version) })
    }

    /// A download kept in flight by `throttle=` shows in "Downloads now" with its bytes going up, then moves to
    /// the log. With `BA_DASHBOARD_SCREENSHOT=path` the page is saved as a PNG there meanwhile
    /// (`scripts/screenshots.sh` writes docs/dashboard.png so).
    @Test func aDownloadInFlightShowsItsProgress() async throws {
        try await withDashboard(["--fault", "throttle=100000,pack=Levels"]) { browser, url, scratch in
            try await browser.wait(for: Self.packIDs) { ($0 as? [String])?.count == 3 }
            // A broken manifest next to it, for the picture: its pack's last good version stays published.
            _ = try scratch.write(
                "Assets/Tutorial.json",
                #"{"assetPackID": "Tutorial", "downloadPolicy": {"essential": {"installationEventTypes": []}}}"#
            )
            try await browser.wait(for: Self.cell("Tutorial", "build")) { $0 as? String == "broken" }
            let download = Task { try await get(url + "/assets/Levels") }
            let sent =
                "const c = document.querySelector('#downloads tr[data-pack=\"Levels\"] td[data-field=\"sent\"]');"
                + " return c ? Number(c.dataset.sent) : -1"
            let first = try await browser.wait(for: sent) { ($0 as? Int ?? -1) > 0 } as? Int ?? 0
            try await browser.wait(for: sent) { ($0 as? Int ?? -1) > first }
            let row = try await browser.run(
                "return document.querySelector('#downloads tr[data-pack=\"Levels\"]').textContent"
            )
            #expect((row as? String)?.contains("throttle=100000,pack=Levels") == true, "\(String(describing: row))")
            #expect((row as? String)?.contains("127.0.0.1") == true, "\(String(describing: row))")
            let png = try await browser.screenshot()
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]), "a PNG")
            if let path = ProcessInfo.processInfo.environment["BA_DASHBOARD_SCREENSHOT"] {
                try png.write(to: URL(fileURLWithPath: path))
            }
            #expect(try await download.value.status == 200)
            try await browser.wait(for: "return document.querySelectorAll('#downloads tbody tr').length === 0")
            try await browser.wait(
                for: "return [...document.querySelectorAll('#log tbody tr')].some(r => r.dataset.pack === 'Levels')"
            )
        }
    }

    /// Over TLS and with a token (as `--host` off loopback sets one): the page opened with `?token=` streams
    /// and steers (its script sends the token on the event stream and on each control call); without it,
    /// 401.
    @Test func overTLSWithATokenThePageStreamsAndSteers() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let tls = try #require(
            try TLSSetup.make(mode: .selfSigned, host: "127.0.0.1", folder: scratch.root.appending("tls-home"))
        )
        try await LiveServer.with(folder: scratch.root, tls: tls, controlToken: "t0ken") { server in
            #expect(server.url.hasPrefix("https://"))
            try await WebDriver.with(acceptInsecureCerts: true) { browser in
                try await browser.open(server.url + "/_mock/")
                let refused = try await browser.run("return document.body.textContent") as? String
                #expect(refused?.contains("unauthorized") == true, "\(String(describing: refused))")
                try await browser.open(server.url + "/_mock/?token=t0ken")
                try await browser.wait(for: "return document.getElementById('status').textContent === 'live'")
                try await browser.wait(for: Self.packIDs) { ($0 as? [String]) == ["Levels", "Textures", "Tutorial"] }
                try await browser.type("latency=5,pack=Levels", into: "#fault-raw")
                try await browser.click("#fault-raw-form button[type=submit]")
                try await browser.wait(
                    for: "return [...document.querySelectorAll('#faults li')].map(l => l.dataset.rule)"
                ) { ($0 as? [String]) == ["latency=5,pack=Levels"] }
                #expect(
                    try await browser.run("return document.getElementById('fault-error').textContent") as? String == ""
                )
            }
        }
    }
}

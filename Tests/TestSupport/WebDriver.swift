import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// A small W3C WebDriver client over `chromedriver` and headless Chromium, for tests that open the dashboard
/// in a real browser: start a session, open a page, run a script, click, type, take a screenshot.
public final class WebDriver: Sendable {
    /// Why a browser test cannot run here, or `nil` when Chromium and chromedriver are installed (`make deps`).
    public static let unavailable: String? = {
        let missing = [chromium, chromedriver].filter { !FileManager.default.isExecutableFile(atPath: $0) }
        guard !missing.isEmpty else { return nil }
        return "browser tests need \(missing.joined(separator: " and ")): run make deps (apt: chromium chromium-driver)"
    }()

    static let chromium = ProcessInfo.processInfo.environment["BA_CHROMIUM"] ?? "/usr/bin/chromium"
    static let chromedriver = ProcessInfo.processInfo.environment["BA_CHROMEDRIVER"] ?? "/usr/bin/chromedriver"

    /// A failed WebDriver command: what was asked and what the driver said.
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        /// The driver's error code (WebDriver's `error`, e.g. `stale element reference`), when it gave one.
        public var code: String?

        public init(description: String, code: String? = nil) {
            self.description = description
            self.code = code
        }
    }

    /// WebDriver's code for a handle to an element the page has since replaced (a table drawn again).
    static let staleElement = "stale element reference"

    private let driver: RunningTool
    private let base: String
    private let session: String

    private init(driver: RunningTool, base: String, session: String) {
        self.driver = driver
        self.base = base
        self.session = session
    }

    /// Starts chromedriver on a free loopback port and a headless Chromium session of `width` × `height`
    /// pixels, runs `body`, then ends both. `acceptInsecureCerts` takes any certificate (a self-signed CA the
    /// browser does not trust).
    public static func with<T: Sendable>(
        width: Int = 1280,
        height: Int = 1100,
        acceptInsecureCerts: Bool = false,
        _ body: @Sendable (WebDriver) async throws -> T
    ) async throws -> T {
        let port = try freeLoopbackPort()
        let driver = try RunningTool(URL(fileURLWithPath: chromedriver), ["--port=\(port)"])
        defer { driver.interrupt(signal: SIGTERM, timeout: 5) }
        let base = "http://127.0.0.1:\(port)"
        try await waitUntilReady(base, driver: driver)
        let capabilities: [String: Any] = [
            "capabilities": [
                "alwaysMatch": [
                    "browserName": "chrome",
                    "acceptInsecureCerts": acceptInsecureCerts,
                    "goog:chromeOptions": [
                        "binary": chromium,
                        "args": [
                            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                            "--window-size=\(width),\(height)", "--no-first-run", "--no-default-browser-check",
                        ],
                    ],
                ]
            ]
        ]
        let created = try await command(base, .POST, "/session", capabilities)
        guard let session = (created as? [String: Any])?["sessionId"] as? String else {
            throw Failure(description: "chromedriver gave no session: \(String(describing: created))")
        }
        let browser = WebDriver(driver: driver, base: base, session: session)
        do {
            let result = try await body(browser)
            _ = try? await command(base, .DELETE, "/session/\(session)", nil)
            return result
        } catch {
            _ = try? await command(base, .DELETE, "/session/\(session)", nil)
            throw error
        }
    }

    /// Opens `url` and waits for its load event.
    public func open(_ url: String) async throws {
        _ = try await Self.command(base, .POST, "/session/\(session)/url", ["url": url])
    }

    /// Runs `script` (a function body: `return ...`) in the page, with `arguments`, and returns its value.
    @discardableResult
    public func run(_ script: String, _ arguments: [Any] = []) async throws -> Any? {
        let value = try await Self.command(
            base,
            .POST,
            "/session/\(session)/execute/sync",
            ["script": script, "args": arguments]
        )
        return value is NSNull ? nil : value
    }

    /// Runs `script` every 100 ms until it returns a value `accept` takes, for up to `seconds`; returns it.
    /// - Throws: ``Failure`` with the last value when time runs out.
    @discardableResult
    public func wait(
        seconds: Double = 20,
        for script: String,
        until accept: (Any?) -> Bool = { ($0 as? Bool) == true }
    ) async throws -> Any? {
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        var last: Any?
        while ContinuousClock.now < deadline {
            last = try await run(script)
            if accept(last) { return last }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "after \(seconds) s, `\(script)` is still \(String(describing: last))")
    }

    /// The element `selector` (CSS) finds first.
    public func element(_ selector: String) async throws -> String {
        let found = try await Self.command(
            base,
            .POST,
            "/session/\(session)/element",
            ["using": "css selector", "value": selector]
        )
        guard let id = (found as? [String: Any])?.values.first as? String else {
            throw Failure(description: "no element \(selector)")
        }
        return id
    }

    /// Clicks the element `selector` finds, as a user would.
    public func click(_ selector: String) async throws {
        try await withElement(selector) { id in
            _ = try await Self.command(base, .POST, "/session/\(session)/element/\(id)/click", [String: Any]())
        }
    }

    /// Types `text` into the element `selector` finds, after clearing it.
    public func type(_ text: String, into selector: String) async throws {
        try await withElement(selector) { id in
            _ = try await Self.command(base, .POST, "/session/\(session)/element/\(id)/clear", [String: Any]())
            _ = try await Self.command(base, .POST, "/session/\(session)/element/\(id)/value", ["text": text])
        }
    }

    /// Runs `body` with the element `selector` finds; when the page replaced that element in between (a live
    /// table drawn again), finds it again and runs `body` once more, as a person would aim again; 5 tries.
    private func withElement(_ selector: String, _ body: (String) async throws -> Void) async throws {
        for attempt in 1...5 {
            do {
                return try await body(try await element(selector))
            } catch let failure as Failure where failure.code == Self.staleElement && attempt < 5 {
                continue
            }
        }
    }

    /// Chooses the option of value `value` in the `<select>` `selector` finds, as a user would.
    public func choose(_ value: String, in selector: String) async throws {
        try await click("\(selector) option[value=\"\(value)\"]")
    }

    /// A PNG of the viewport.
    public func screenshot() async throws -> Data {
        let value = try await Self.command(base, .GET, "/session/\(session)/screenshot", nil)
        guard let text = value as? String, let png = Data(base64Encoded: text) else {
            throw Failure(description: "the screenshot is not base64")
        }
        return png
    }

    /// Sets the window's size in CSS pixels.
    public func resize(width: Int, height: Int) async throws {
        _ = try await Self.command(base, .POST, "/session/\(session)/window/rect", ["width": width, "height": height])
    }

    private static func waitUntilReady(_ base: String, driver: RunningTool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let value = try? await command(base, .GET, "/status", nil),
                (value as? [String: Any])?["ready"] as? Bool == true
            {
                return
            }
            guard driver.process.isRunning else {
                throw Failure(description: "chromedriver ended: \(driver.stderr)\(driver.stdout)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw Failure(description: "chromedriver was not ready within 30 s: \(driver.stdout)")
    }

    /// One WebDriver command: JSON in, the reply's `value` out.
    private static func command(_ base: String, _ method: HTTPMethod, _ path: String, _ body: Any?) async throws -> Any
    {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let bytes = try await response.body.collect(upTo: 64 << 20)
        let json = try JSONSerialization.jsonObject(with: Data(bytes.readableBytesView), options: [.fragmentsAllowed])
        let value = (json as? [String: Any])?["value"] ?? NSNull()
        guard response.status == .ok else {
            throw Failure(
                description: "\(method) \(path): \(response.status.code) \(value)",
                code: (value as? [String: Any])?["error"] as? String
            )
        }
        return value
    }
}

import Foundation

/// One way for `ba-mock` to misbehave on purpose, with where and when it applies.
///
/// Written as comma-separated `key=value` items, the fault first:
/// `reset-after=65536`, `status=503,retry-after=2,pack=Levels`, `corrupt=100,nth=1`, `latency=200,p=0.5`.
/// `pack=ID` limits it to one pack (default: every pack), `nth=N` to the Nth matching request only, `p=P` to a
/// share of requests (drawn from `--seed`), `times=K` to at most K injections.
public struct FaultRule: Sendable, Hashable, CustomStringConvertible {
    /// What goes wrong.
    public enum Kind: Sendable, Hashable {
        /// Close the connection after this many body bytes.
        case resetAfter(Int)
        /// Promise the whole body in the headers, send half of it, close.
        case truncate
        /// Flip the byte at this offset of the pack.
        case corrupt(Int)
        /// Send a `Content-Length` (and body) one byte longer than the manifest's size.
        case wrongLength
        /// Answer this HTTP status (with `Retry-After` when given).
        case status(Int, retryAfter: Int?)
        /// Wait this many milliseconds before the first byte.
        case latency(Int)
        /// Send at most this many bytes per second.
        case throttle(Int)
        /// Stop for this many seconds halfway through the body.
        case stall(Int)
        /// Ignore `Range` and answer 200 with the whole pack.
        case noRanges
        /// Publish each pack's previous version in the manifest while serving the current bytes.
        case staleManifest
        /// Answer the manifest with invalid JSON.
        case badManifest
    }

    /// What goes wrong.
    public var kind: Kind
    /// The pack it is limited to, or `nil` for every pack.
    public var pack: String?
    /// Only the Nth matching request (1-based), or `nil`.
    public var nth: Int?
    /// The share of matching requests it applies to, or `nil` for all.
    public var probability: Double?
    /// At most this many injections, or `nil`.
    public var times: Int?

    /// Whether the rule is about the manifest rather than pack downloads.
    public var targetsManifest: Bool {
        switch kind {
        case .staleManifest, .badManifest: true
        default: false
        }
    }

    public var description: String {
        var parts: [String] = []
        switch kind {
        case .resetAfter(let bytes): parts.append("reset-after=\(bytes)")
        case .truncate: parts.append("truncate")
        case .corrupt(let offset): parts.append("corrupt=\(offset)")
        case .wrongLength: parts.append("wrong-length")
        case .status(let code, let retryAfter):
            parts.append("status=\(code)")
            if let retryAfter { parts.append("retry-after=\(retryAfter)") }
        case .latency(let ms): parts.append("latency=\(ms)")
        case .throttle(let rate): parts.append("throttle=\(rate)")
        case .stall(let seconds): parts.append("stall=\(seconds)")
        case .noRanges: parts.append("no-ranges")
        case .staleManifest: parts.append("stale-manifest")
        case .badManifest: parts.append("bad-manifest")
        }
        if let pack { parts.append("pack=\(pack)") }
        if let nth { parts.append("nth=\(nth)") }
        if let probability { parts.append("p=\(probability)") }
        if let times { parts.append("times=\(times)") }
        return parts.joined(separator: ",")
    }

    /// The largest byte count or offset a rule takes (`reset-after`, `corrupt`) and the fastest `throttle`, in
    /// bytes per second: 1 TiB.
    public static let maximumBytes = 1 << 40
    /// The longest `stall` and `retry-after`, in seconds: a day.
    public static let maximumSeconds = 86_400
    /// The longest `latency`, in milliseconds: a day.
    public static let maximumMilliseconds = 86_400_000
    /// The largest `nth` and `times`.
    public static let maximumCount = 1_000_000_000

    /// Parses a rule.
    /// - Throws: ``AssetPackServerError`` with code `.invalidOption` naming the item and the accepted forms,
    ///   and for a number out of range, the range.
    public init(parsing text: String) throws {
        let usage =
            "write e.g. reset-after=65536, truncate, corrupt=100, wrong-length, status=503[,retry-after=2], "
            + "latency=200, throttle=1048576, stall=3, no-ranges, stale-manifest, bad-manifest; then optionally "
            + ",pack=ID ,nth=N ,p=0.25 ,times=K"
        func fail(_ problem: String) -> AssetPackServerError {
            AssetPackServerError(code: .invalidOption, message: "fault \"\(text)\": \(problem). Fix: \(usage)")
        }
        var items: [(key: String, value: String?)] = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) where !text.isEmpty {
            guard !item.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw fail("it has an empty item (two commas in a row, or one at an end)")
            }
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = parts[0].trimmingCharacters(in: .whitespaces)
            guard !key.isEmpty else { throw fail("the item \"\(item)\" has no name") }
            guard !items.contains(where: { $0.key == key }) else { throw fail("\(key) is given twice") }
            items.append((key, parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : nil))
        }
        guard !items.isEmpty else { throw fail("it is empty") }
        let (name, value) = items.removeFirst()
        func number(_ value: String?, _ key: String, _ range: ClosedRange<Int>, _ unit: String) throws -> Int {
            guard let value, let parsed = Int(value), range.contains(parsed) else {
                throw fail("\(key) needs a whole number from \(range.lowerBound) to \(range.upperBound) (\(unit))")
            }
            return parsed
        }
        func noValue() throws {
            if value != nil { throw fail("\(name) takes no value") }
        }
        var retryAfter: Int?
        if let index = items.firstIndex(where: { $0.key == "retry-after" }) {
            retryAfter = try number(items.remove(at: index).value, "retry-after", 0...Self.maximumSeconds, "seconds")
        }
        let bytes = 0...Self.maximumBytes
        switch name {
        case "reset-after": kind = .resetAfter(try number(value, name, bytes, "bytes"))
        case "truncate":
            try noValue()
            kind = .truncate
        case "corrupt": kind = .corrupt(try number(value, name, bytes, "a byte offset in the pack"))
        case "wrong-length":
            try noValue()
            kind = .wrongLength
        case "status": kind = .status(try number(value, name, 100...599, "an HTTP status"), retryAfter: retryAfter)
        case "latency": kind = .latency(try number(value, name, 0...Self.maximumMilliseconds, "milliseconds"))
        case "throttle": kind = .throttle(try number(value, name, 1...Self.maximumBytes, "bytes per second"))
        case "stall": kind = .stall(try number(value, name, 0...Self.maximumSeconds, "seconds"))
        case "no-ranges":
            try noValue()
            kind = .noRanges
        case "stale-manifest":
            try noValue()
            kind = .staleManifest
        case "bad-manifest":
            try noValue()
            kind = .badManifest
        default: throw fail("\"\(name)\" is not a fault")
        }
        if retryAfter != nil, case .status = kind {
        } else if retryAfter != nil {
            throw fail("retry-after goes with status=CODE")
        }
        let counts = 1...Self.maximumCount
        for (key, value) in items {
            switch key {
            case "pack":
                guard let value, !value.isEmpty else { throw fail("pack needs an ID") }
                pack = value
            case "nth": nth = try number(value, key, counts, "the Nth matching request")
            case "times": times = try number(value, key, counts, "injections")
            case "p":
                guard let value, let share = Double(value), (0...1).contains(share) else {
                    throw fail("p needs a share from 0 to 1")
                }
                probability = share == 0 ? 0 : share  // -0 is 0, and prints as 0
            default: throw fail("\"\(key)\" is not a rule option")
            }
        }
    }
}

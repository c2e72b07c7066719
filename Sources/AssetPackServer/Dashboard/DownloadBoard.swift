import Foundation
import Synchronization

/// The responses in flight and the last finished ones, for the dashboard: what the server knows about each
/// response while it goes out (client, path, range, bytes the socket took of the total, fault) and a request
/// log of bounded size whatever the request rate.
///
/// Bytes are counted by ``ResponseTally`` (writes that completed), read here only when the dashboard asks,
/// so a response costs one insertion and one removal under a lock, and nothing per write beyond the tally.
public final class DownloadBoard: Sendable {
    /// A response going out.
    public struct InFlight: Sendable, Hashable {
        /// Unique for the server's lifetime.
        public var id: Int
        public var client: String
        public var method: String
        public var path: String
        /// The pack the path names (`/assets/<id>`, `/deltas/<id>/...`), if any.
        public var pack: String?
        public var range: String?
        public var status: Int
        /// The body's length, when the response says it.
        public var total: Int?
        public var fault: String?
        /// Body bytes the client's socket took so far.
        public var sent: Int
        /// When the response began.
        public var started: Date
    }

    /// A finished response.
    public struct Finished: Sendable, Hashable {
        /// Counts finished responses from 1, so a reader can ask only for those after the last it saw.
        public var sequence: Int
        public var request: InFlight
        public var milliseconds: Double
        /// The response did not go out whole (a write failed, the connection closed).
        public var aborted: Bool
    }

    private struct Tracked {
        var request: InFlight
        var entry: ResponseTally.Entry
    }

    private struct State {
        var nextID = 1
        var inFlight: [Int: Tracked] = [:]
        var log: [Finished] = []
        var logStart = 0  // the index of the oldest entry in `log`, a ring once full
        var finishedCount = 0
    }

    /// How many finished responses are kept.
    public let capacity: Int
    private let state = Mutex(State())
    /// The dashboard pages open now (their event streams).
    private let pages = Atomic<Int>(0)

    /// Creates a board keeping the last `capacity` finished responses.
    public init(capacity: Int = 500) {
        self.capacity = max(1, capacity)
    }

    /// Whether a page is open. Without a request log, responses are counted only then: the per-response
    /// tally cost a tenth of small-response throughput with nobody looking.
    var isWatched: Bool { pages.load(ordering: .relaxed) > 0 }

    /// Runs `body` (a page's event stream) as an open page.
    func watching<T>(_ body: () async throws -> T) async rethrows -> T {
        pages.add(1, ordering: .relaxed)
        defer { pages.subtract(1, ordering: .relaxed) }
        return try await body()
    }

    /// A new ID for a response, taken before its tally entry is made (the entry's end names it).
    func reserveID() -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
    }

    /// The most bytes of a request path (and of the pack named in it) a row keeps: a longer one keeps its first
    /// 1 KiB and says its length.
    /// 500 rows of 60 KB paths held 30 MB, and each event to each open page carried 6 MB of them.
    public static let pathKept = 1024

    /// Records a response that begins, under the ID ``reserveID()`` gave it.
    func begin(_ request: InFlight, entry: ResponseTally.Entry) {
        var request = request
        request.path = Self.shortened(request.path)
        request.pack = request.pack.map(Self.shortened)  // taken from the path: as long as it, for a 404
        state.withLock { $0.inFlight[request.id] = Tracked(request: request, entry: entry) }
    }

    /// `path` whole when it has at most ``pathKept`` bytes, else its first bytes (whole characters), `…` and
    /// its length.
    static func shortened(_ path: String) -> String {
        guard path.utf8.count > pathKept else { return path }
        var kept = Substring(path).prefix(pathKept)
        while kept.utf8.count > pathKept { kept.removeLast() }
        return "\(kept)… (\(path.utf8.count) bytes)"
    }

    /// Moves a response to the log.
    func finish(_ id: Int, bytes: Int, aborted: Bool) {
        let now = Date()
        state.withLock { state in
            guard var request = state.inFlight.removeValue(forKey: id)?.request else { return }
            request.sent = bytes
            state.finishedCount += 1
            let finished = Finished(
                sequence: state.finishedCount,
                request: request,
                milliseconds: now.timeIntervalSince(request.started) * 1000,
                aborted: aborted
            )
            if state.log.count < capacity {
                state.log.append(finished)
            } else {
                state.log[state.logStart] = finished
                state.logStart = (state.logStart + 1) % capacity
            }
        }
    }

    /// The responses in flight, oldest first, with the bytes sent so far.
    public var inFlight: [InFlight] {
        let tracked = state.withLock { Array($0.inFlight.values) }
        return tracked.map { item in
            var request = item.request
            request.sent = item.entry.bytes
            return request
        }.sorted { $0.id < $1.id }
    }

    /// The finished responses kept whose sequence is above `sequence`, oldest first, at most the `limit` newest
    /// of them: only those are copied, under the lock the responses that finish take too.
    public func finished(after sequence: Int, limit: Int = .max) -> [Finished] {
        state.withLock { state in
            let wanted = min(max(0, state.finishedCount - sequence), state.log.count, max(0, limit))
            guard wanted > 0 else { return [] }
            // The newest is just before logStart once the ring is full, else at the end.
            let count = state.log.count
            let newest = (state.logStart + count - 1) % count
            return (0..<wanted).reversed().map { back in state.log[(newest - back + count) % count] }
        }
    }

    /// How many responses have finished since start.
    public var finishedCount: Int { state.withLock { $0.finishedCount } }

    /// The pack a request path names: `/assets/<id>` or `/deltas/<id>/<base>`, percent-decoded.
    ///
    /// Asked once per response while a page is open: a name without `%` is taken as it is, since decoding
    /// through Foundation was 3% of the server's time under 100 connections asking for a 60 KiB pack.
    static func pack(inPath path: String) -> String? {
        let parts = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0] == "assets" || parts[0] == "deltas" else { return nil }
        let name = parts[1]
        guard name.utf8.contains(UInt8(ascii: "%")) else { return String(name) }
        return String(name).removingPercentEncoding ?? String(name)
    }
}

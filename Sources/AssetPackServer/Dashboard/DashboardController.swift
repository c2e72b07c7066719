import AssetPackFormat
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization

/// `/_mock/`: the live dashboard. The page, its style and its script are compiled into the binary
/// (``DashboardPage``: nothing is fetched from elsewhere, and an installed binary needs no resource folder); `/_mock/events` streams what it shows as Server-Sent Events:
///
/// ```
/// GET /_mock/               the page, its style and script inline (one request, one token check)
/// GET /_mock/events         text/event-stream: `snapshot` (packs, problems, faults) when they change,
///                           `downloads` (responses in flight, finished ones since the last event) at most
///                           every `interval`
/// ```
///
/// The page changes nothing itself: its buttons and forms call the control API next to it.
struct DashboardController {
    let catalog: PackCatalog
    let faults: FaultPlan
    let board: DownloadBoard
    /// The shortest time between two events on one stream.
    var interval: Duration = .milliseconds(250)

    func addRoutes(to group: RouterGroup<MockRequestContext>) {
        group.get(use: page)  // /_mock and /_mock/ alike
        group.get("events", use: events)
    }

    @Sendable func page(_ request: Request, context: MockRequestContext) async throws -> Response {
        // The first snapshot travels in the page, so its first paint shows the packs, not empty tables.
        let snapshot = try JSONOutput.data(await DashboardFeed.snapshot(catalog: catalog, faults: faults))
        return Self.file(DashboardPage.document(firstSnapshot: snapshot), type: "text/html; charset=utf-8")
    }

    private static func file(_ text: String, type: String) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: type, .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text))
        )
    }

    @Sendable func events(_ request: Request, context: MockRequestContext) async throws -> Response {
        let feed = DashboardFeed(catalog: catalog, faults: faults, board: board)
        let (interval, board) = (self.interval, self.board)
        return Response(
            status: .ok,
            headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: ResponseBody { writer in
                // The stream ends when the server shuts down (a page left open does not hold the process for
                // its grace period), within one interval, or when the page goes (a write fails).
                let stopping = ShutdownFlag()
                var feed = feed
                try await board.watching {
                    try await Self.stream(writer: &writer, feed: &feed, interval: interval, stopping: stopping)
                }
                try await writer.finish(nil)
            }
        )
    }

    /// Writes the stream's events until the server stops, the task is cancelled or a write fails.
    private static func stream(
        writer: inout any ResponseBodyWriter,
        feed: inout DashboardFeed,
        interval: Duration,
        stopping: ShutdownFlag
    ) async throws {
        try await withGracefulShutdownHandler {
            var quiet = ContinuousClock.now
            try await writer.write(ByteBuffer(string: "retry: 1000\n\n"))
            while !stopping.isSet, !Task.isCancelled {
                let events = try await feed.next()
                if events.isEmpty, ContinuousClock.now - quiet > .seconds(15) {
                    try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    quiet = .now
                }
                for event in events {
                    try await writer.write(ByteBuffer(string: event))
                    quiet = .now
                }
                try? await Task.sleep(for: interval)
            }
        } onGracefulShutdown: {
            stopping.set()
        }
    }
}

/// What one event stream has sent, to send only what changed: the snapshot when it differs, the downloads
/// while any are in flight (and once after the last ends), finished ones not sent yet.
struct DashboardFeed: Sendable {
    let catalog: PackCatalog
    let faults: FaultPlan
    let board: DownloadBoard
    private var lastSnapshot: Data?
    private var lastSequence = 0
    private var lastInFlight = -1
    /// Bytes and time of each response at the previous event, for its rate.
    private var samples: [Int: (bytes: Int, at: ContinuousClock.Instant)] = [:]

    init(catalog: PackCatalog, faults: FaultPlan, board: DownloadBoard) {
        self.catalog = catalog
        self.faults = faults
        self.board = board
    }

    /// The most finished responses one event carries (the newest); `skipped` says how many went by unsent.
    static let finishedPerEvent = 100
    /// The most responses in flight one event lists (the oldest); `inFlightCount` says how many there are.
    /// With paths bounded (``DownloadBoard/pathKept``) an event stays under about 300 KB, and a stream holds
    /// one event at a time: the next is made only once the socket took the last (`writer.write` waits while
    /// the connection is not writable), so a page that reads slowly holds one event, not a queue of them.
    static let inFlightPerEvent = 100

    /// The events to send now, each `event: NAME\ndata: JSON\n\n`.
    /// - Throws: `EncodingError` when an event cannot be written as JSON (the stream then ends).
    mutating func next() async throws -> [String] {
        var events: [String] = []
        let snapshot = try JSONOutput.data(await Self.snapshot(catalog: catalog, faults: faults))
        if snapshot != lastSnapshot {
            lastSnapshot = snapshot
            events.append(Self.event("snapshot", snapshot))
        }
        let inFlight = board.inFlight
        // At most the newest 100 a tick (400 a second): at tens of thousands of responses a second nobody reads
        // more, and encoding them all cost the server a tenth of its speed.
        let finished = board.finished(after: lastSequence, limit: Self.finishedPerEvent)
        if !inFlight.isEmpty || inFlight.count != lastInFlight || !finished.isEmpty {
            lastInFlight = inFlight.count
            let skipped = (finished.first?.sequence ?? lastSequence + 1) - lastSequence - 1
            lastSequence = finished.last?.sequence ?? lastSequence
            let now = ContinuousClock.now
            var rows: [DashboardEvent.Response] = []
            var samples: [Int: (bytes: Int, at: ContinuousClock.Instant)] = [:]
            for request in inFlight.prefix(Self.inFlightPerEvent) {
                var row = DashboardEvent.Response(request)
                if let sample = self.samples[request.id] {
                    let seconds = (now - sample.at).inSeconds
                    if seconds > 0 { row.rate = Double(request.sent - sample.bytes) / seconds }
                }
                samples[request.id] = (request.sent, now)
                rows.append(row)
            }
            self.samples = samples
            let downloads = DashboardEvent.Downloads(
                inFlight: rows,
                inFlightCount: inFlight.count,
                finished: finished.map(DashboardEvent.Response.init),
                skipped: skipped,
                capacity: board.capacity
            )
            events.append(Self.event("downloads", try JSONOutput.data(downloads)))
        }
        return events
    }

    /// Packs, problems and faults, as the `snapshot` event and the page's first paint carry them.
    static func snapshot(catalog: PackCatalog, faults: FaultPlan) async -> DashboardEvent.Snapshot {
        let snapshot = catalog.snapshot
        let states = await catalog.packStates
        let served = Dictionary(snapshot.packs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let byID = Dictionary(states.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let ids = Set(byID.keys).union(served.keys).union(snapshot.building).sorted()
        let packs = ids.map { id in
            let state = byID[id]
            let pack = served[id]
            let problems = state?.problems ?? snapshot.problems.filter { $0.pack == id }
            let build =
                !problems.isEmpty ? "broken" : pack == nil && snapshot.building.contains(id) ? "building" : "published"
            return DashboardEvent.Pack(
                id: id,
                build: build,
                building: snapshot.building.contains(id),
                problems: problems,
                obsolete: state?.obsolete ?? false,
                removed: state?.removed ?? false,
                pinnedBy: state?.pinnedBy,
                contentVersion: state?.contentVersion,
                publishedVersion: state?.publishedVersion ?? pack?.version,
                served: pack.map(DashboardEvent.Served.init)
            )
        }
        return DashboardEvent.Snapshot(
            packs: packs,
            problems: snapshot.problems,
            faults: faults.rules.map(\.description),
            seed: String(faults.seed)
        )
    }

    private static func event(_ name: String, _ data: Data) -> String {
        "event: \(name)\ndata: \(String(decoding: data, as: UTF8.self))\n\n"
    }
}

/// Set once the server begins to shut down; read by an event stream between two events.
private final class ShutdownFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}

import AssetPackClient
import AssetPackFormat
import BackgroundAssets
import Foundation
import Histogram
import System
import SystemPackage

/// Apple's `BackgroundAssets` declarations against the engine underneath (the client's `AssetPackManager`),
/// on the same installed files: what an app pays for calling Apple's API here rather than the library.
///
/// - **First read**: in each round, for each layer (who goes first alternates), a manager is opened on the
///   app group, the pack is taken from the manifest last fetched and made local with
///   `ensureLocalAvailability(of:requireLatestVersion: false)` (it is installed, so no server is asked),
///   and the first `contents(at:)` after it is timed, with its first byte: the call that reads the app
///   group's namespace.
/// - **Contents call**: `contents(at:)` of each file in turn and its first byte, back to back, in blocks of
///   1 000 calls that alternate between the layers, into an HDR histogram per layer.
///
/// The reads run off Swift's cooperative pool (a first read on NIO's blocking pool, the calls on a thread of
/// their own), with `shared` played on that thread too.
public struct LayerBenchmark: Sendable {
    /// What to run.
    public struct Options: Sendable {
        /// Rounds of the first read (a fresh manager each).
        public var rounds = 20
        /// `contents(at:)` calls per layer.
        public var calls = 20_000

        public init() {}
    }

    /// What one layer measured, in microseconds.
    public struct Layer: Sendable, Codable {
        /// The first read after `ensureLocalAvailability`, one per round.
        public var firstRead: [Double]
        /// The median of ``firstRead``.
        public var firstReadMedian: Double
        /// `contents(at:)` and its first byte.
        public var contentsCall: ReadBenchmark.Latency
    }

    /// What ran and what each layer measured.
    public struct Report: Sendable, Codable {
        public var appGroup: String
        public var assetPackID: String
        public var files: Int
        public var rounds: Int
        public var calls: Int
        /// Through Apple's declarations (`import BackgroundAssets`).
        public var backgroundAssets: Layer
        /// Through the engine underneath.
        public var engine: Layer
    }

    /// Runs both measures on the installed files of `assetPackID`.
    /// - Throws: ``AssetPackClientError``: `.assetPackNotFound` when the pack is not installed or no manifest
    ///   was fetched into the app group; the reads' errors.
    public static func run(
        appGroup: SystemPackage.FilePath,
        assetPackID: String,
        options: Options = Options()
    ) async throws -> Report {
        var configuration = AssetPackClient.AssetPackManager.Configuration(server: nil, appGroup: appGroup)
        configuration.platform = nil
        let engine = try AssetPackClient.AssetPackManager(configuration: configuration)
        let pack = try await engine.cachedAssetPack(withID: assetPackID)
        let paths = try await BlockingIO.shortCall { try engine.reader.paths(inAssetPackWithID: assetPackID) }
        guard !paths.isEmpty else {
            throw AssetPackClientError(
                code: .assetPackNotFound,
                message:
                    "\(assetPackID) has no installed files in \(appGroup). Fix: `ba-sync ensure \(assetPackID)` first"
            )
        }
        var shared = ManagerConfiguration(appGroup: appGroup, manifestURL: nil)
        shared.engine = configuration  // the same settings for both layers
        var firstReads: (apple: [Double], engine: [Double]) = ([], [])
        for round in 0..<options.rounds {
            for appleFirst in round % 2 == 0 ? [true, false] : [false, true] {
                let path = paths[round % paths.count]
                if appleFirst {
                    firstReads.apple.append(
                        try await Backend.playing(shared) {
                            let manager = BackgroundAssets.AssetPackManager.shared
                            try await manager.ensureLocalAvailability(
                                of: BackgroundAssets.AssetPack(pack),
                                requireLatestVersion: false
                            )
                            // Off the cooperative pool, as every read here; the thread sees `shared` played too.
                            let backend = Backend.current
                            return try await BlockingIO.shortCall {
                                try Backend.$override.withValue(backend) {
                                    try timed { try manager.contents(at: System.FilePath(path)) }
                                }
                            }
                        }
                    )
                } else {
                    let manager = try AssetPackClient.AssetPackManager(configuration: configuration)
                    try await manager.ensureLocalAvailability(of: pack)
                    firstReads.engine.append(
                        try await BlockingIO.shortCall {
                            try timed { try manager.contents(at: SystemPackage.FilePath(path)) }
                        }
                    )
                }
            }
        }
        let calls = try await contentsCalls(shared, engine: engine, paths: paths, calls: options.calls)
        return Report(
            appGroup: appGroup.string,
            assetPackID: assetPackID,
            files: paths.count,
            rounds: options.rounds,
            calls: options.calls,
            backgroundAssets: Layer(firstReads.apple, calls.apple),
            engine: Layer(firstReads.engine, calls.engine)
        )
    }

    /// `contents(at:)` back to back through each layer, in alternating blocks.
    private static func contentsCalls(
        _ shared: ManagerConfiguration,
        engine: AssetPackClient.AssetPackManager,
        paths: [String],
        calls: Int
    ) async throws -> (apple: ReadBenchmark.Latency, engine: ReadBenchmark.Latency) {
        let applePaths = paths.map { System.FilePath($0) }
        let enginePaths = paths.map { SystemPackage.FilePath($0) }
        return try await Backend.playing(shared) {
            let backend = Backend.current
            return try await BlockingIO.longJob {
                try Backend.$override.withValue(backend) {
                    try callLoop(engine, applePaths: applePaths, enginePaths: enginePaths, calls: calls)
                }
            }
        }
    }

    /// The loop of ``contentsCalls(_:engine:paths:calls:)``, on a thread of its own.
    private static func callLoop(
        _ engine: AssetPackClient.AssetPackManager,
        applePaths: [System.FilePath],
        enginePaths: [SystemPackage.FilePath],
        calls: Int
    ) throws -> (apple: ReadBenchmark.Latency, engine: ReadBenchmark.Latency) {
        let manager = BackgroundAssets.AssetPackManager.shared
        let count = applePaths.count
        var apple = Histogram<UInt64>(
            lowestDiscernibleValue: 1,
            highestTrackableValue: 3_600_000_000_000,
            numberOfSignificantValueDigits: .three
        )
        var underneath = apple
        var done = 0
        var sink: UInt8 = 0
        while done < calls {
            let block = min(1000, calls - done)
            for appleTurn in done / 1000 % 2 == 0 ? [true, false] : [false, true] {
                for index in done..<done + block {
                    let began = DispatchTime.now().uptimeNanoseconds
                    let data =
                        appleTurn
                        ? try manager.contents(at: applePaths[index % count])
                        : try engine.contents(at: enginePaths[index % count])
                    sink &+= data.first ?? 0
                    let nanoseconds = max(1, DispatchTime.now().uptimeNanoseconds - began)
                    if appleTurn { apple.record(nanoseconds) } else { underneath.record(nanoseconds) }
                }
            }
            done += block
        }
        withExtendedLifetime(sink) {}
        return (ReadBenchmark.Latency(apple), ReadBenchmark.Latency(underneath))
    }

    /// Microseconds of `read` and the first byte of what it returns.
    private static func timed(_ read: () throws -> Data) throws -> Double {
        let began = DispatchTime.now().uptimeNanoseconds
        let data = try read()
        withExtendedLifetime(data.first) {}
        return Double(DispatchTime.now().uptimeNanoseconds - began) / 1000
    }
}

extension LayerBenchmark.Layer {
    init(_ firstRead: [Double], _ contentsCall: ReadBenchmark.Latency) {
        let sorted = firstRead.sorted()
        self.init(
            firstRead: firstRead,
            firstReadMedian: sorted.isEmpty ? 0 : sorted[sorted.count / 2],
            contentsCall: contentsCall
        )
    }
}

extension LayerBenchmark.Report {
    /// A header row, a row per layer and their ratio, as a terminal table shows them.
    public func tableRows() -> [[String]] {
        let number = { (value: Double) in String(format: "%.2f", value) }
        let row = { (name: String, layer: LayerBenchmark.Layer) in
            [name, number(layer.firstReadMedian)]
                + [layer.contentsCall.p50, layer.contentsCall.p99, layer.contentsCall.p999].map(number)
        }
        let ratio = { (a: Double, b: Double) in b > 0 ? String(format: "%.2f", a / b) : "—" }
        let (apple, engine) = (backgroundAssets, engine)
        return [
            ["layer", "first read µs (median)", "contents p50 µs", "p99 µs", "p99.9 µs"],
            row("BackgroundAssets", apple), row("engine", engine),
            [
                "ratio", ratio(apple.firstReadMedian, engine.firstReadMedian),
                ratio(apple.contentsCall.p50, engine.contentsCall.p50),
                ratio(apple.contentsCall.p99, engine.contentsCall.p99),
                ratio(apple.contentsCall.p999, engine.contentsCall.p999),
            ],
        ]
    }

    /// The report as one JSON line.
    public func json() throws -> String { try JSONOutput.line(self) }
}

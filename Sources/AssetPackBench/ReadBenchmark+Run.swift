import AssetPackClient
import AssetPackFormat
import Foundation
import SystemPackage

/// `ba-sync bench` as a library call: a request in, the report out, with its histogram and HTML files written.
extension ReadBenchmark {
    /// What to measure, what to compare with, and which report files to write.
    public struct Request: Sendable {
        /// Namespace paths to read; empty: every installed file.
        public var paths: [FilePath] = []
        /// Read the files of this pack only; `nil`: every installed pack.
        public var assetPackID: String?
        /// The cases and how long each runs.
        public var options: Options
        /// The tool and version the report names.
        public var tool: String
        /// A report saved with `--json` to compare with.
        public var baselineFile: FilePath?
        /// The slowdown against the baseline still accepted, in percent.
        public var tolerance: Double = 10
        /// Where to write each case's latency distribution (HDR `.hgrm` tables).
        public var histogramFile: FilePath?
        /// Where to write the report as one HTML page.
        public var htmlFile: FilePath?

        /// A request for `options`, named after `tool`.
        public init(options: Options, tool: String) {
            self.options = options
            self.tool = tool
        }
    }

    /// Runs the cases of `request` on the files `reader` sees, compares them with the baseline, and writes the
    /// report files. A baseline that does not read, or a report file that cannot be written, is refused
    /// before anything is measured.
    /// - Parameter progress: Told of each case as it starts, with its position and the number of cases.
    /// - Returns: The report; its `baseline` says which cases regressed.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidOption` naming the file and the fix; what reading
    ///   the files throws.
    public static func run(
        _ request: Request,
        reader: AssetPackReader,
        progress: (Case, Int, Int) -> Void = { _, _, _ in }
    ) throws -> Report {
        let saved = try request.baselineFile.map(loadBaseline)
        try request.histogramFile.map { try checkWritable($0, option: "--histogram", create: true) }
        try request.htmlFile.map { try checkWritable($0, option: "--html", create: false) }
        let benchmark = try ReadBenchmark(
            reader: reader,
            paths: request.paths,
            assetPackID: request.assetPackID,
            options: request.options
        )
        let results = try benchmark.run(progress: progress)
        let environment = Environment(tool: request.tool, folder: reader.store.root, options: request.options)
        var report = Report(benchmark: benchmark, results: results, environment: environment)
        report.baseline = saved.map { report.compared(with: $0, tolerance: request.tolerance) }
        if let saved, let note = report.noiseNote(baseline: saved) { report.warnings.append(note) }
        if let file = request.histogramFile {
            try write(report.histograms(), to: file, option: "--histogram")
        }
        if let file = request.htmlFile {
            let options = Report.HTMLOptions(
                appGroup: reader.store.root.string,
                baselineFile: request.baselineFile?.string,
                baselineResults: saved,
                tolerance: saved == nil ? nil : request.tolerance
            )
            try write(report.html(options), to: file, option: "--html")
        }
        return report
    }

    /// The results of a report saved with `--json`.
    private static func loadBaseline(_ file: FilePath) throws -> [Result] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: file.string))
        } catch {
            throw usage("cannot read --baseline \(file): \(error.localizedDescription)")
        }
        do {
            return try Report.savedResults(data)
        } catch {
            throw usage(
                "--baseline \(file) is not a report of `ba-sync bench --json` (\(error)). Fix: save a run with "
                    + "`ba-sync bench --json > FILE` and give that FILE"
            )
        }
    }

    /// Refuses a report file that cannot be written, before the run rather than after it; makes its folders.
    private static func checkWritable(_ file: FilePath, option: String, create: Bool) throws {
        try AtomicFile.makeFolders(for: file, option: option)
        if create {
            guard FileManager.default.createFile(atPath: file.string, contents: nil) else {
                throw usage("cannot write \(option) \(file). Fix: give a file in a writable folder")
            }
        } else {
            let folder = file.removingLastComponent()
            guard FileManager.default.isWritableFile(atPath: folder.isEmpty ? "." : folder.string) else {
                throw usage("cannot write \(option) \(file). Fix: give a file in a writable folder")
            }
        }
    }

    private static func write(_ text: String, to file: FilePath, option: String) throws {
        do {
            try AtomicFile.write(Array(text.utf8), to: file)
        } catch {
            throw usage("cannot write \(option) \(file): \(error)")
        }
    }

    private static func usage(_ message: String) -> AssetPackFormatError {
        AssetPackFormatError(code: .invalidOption, message: message)
    }
}

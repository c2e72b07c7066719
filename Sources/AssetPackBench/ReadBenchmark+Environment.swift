import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

extension ReadBenchmark {
    /// What a run ran on and with: what someone comparing two runs must know first.
    public struct Environment: Sendable, Codable, Hashable {
        /// The tool and its version, e.g. `ba-sync 0.2.0`.
        public var tool: String
        /// `release`, or `debug` (numbers of a debug build say little about a release build).
        public var build: String
        /// `Linux 6.18.44`.
        public var kernel: String
        /// The file system the installed files are on (`ext4`, `tmpfs`, ..., from `/proc/self/mounts`).
        public var fileSystem: String
        public var cpuModel: String
        public var cpus: Int
        public var seed: UInt64
        /// Timed seconds per case, or `nil` when cases run a number of operations.
        public var durationSeconds: Double?
        public var iterations: Int?
        /// Runs per case (`--repeat`).
        public var repeats: Int
        /// What a cold case does to the page cache.
        public var coldCache =
            "the files' pages are dropped (posix_fadvise DONTNEED) before each round, and a random block's "
            + "pages after it is read (untimed)"
        /// The units of every figure.
        public var units = ReadBenchmark.units

        /// Whether this binary is a debug build.
        public static var isDebugBuild: Bool {
            #if DEBUG
                return true
            #else
                return false
            #endif
        }

        /// The environment of a benchmark about to run.
        /// - Parameters:
        ///   - tool: The tool and its version.
        ///   - folder: A folder on the file system the files are on (the app group).
        public init(tool: String, folder: FilePath, options: Options) {
            self.tool = tool
            build = Self.isDebugBuild ? "debug" : "release"
            var names = utsname()
            uname(&names)
            kernel = "\(Self.text(of: &names.sysname)) \(Self.text(of: &names.release))"
            fileSystem = Self.fileSystem(of: folder)
            cpuModel = Self.cpuModel()
            cpus = ProcessInfo.processInfo.activeProcessorCount
            seed = options.seed
            durationSeconds = options.iterations == nil ? options.duration / .seconds(1) : nil
            iterations = options.iterations
            repeats = max(1, options.repeats)
        }

        /// One line for the top of a table.
        public var summary: String {
            let length =
                iterations.map { "\($0) operations per case" }
                ?? "\(durationSeconds.map { String(format: "%g", $0) } ?? "?") s per case"
            let runs = repeats > 1 ? ", \(repeats) runs per case (median shown)" : ""
            return "\(tool) (\(build) build), \(kernel), \(fileSystem), \(cpuModel) × \(cpus), seed \(seed), "
                + length + runs
        }

        /// A C string in a fixed-size `utsname` field.
        private static func text<Field>(of field: inout Field) -> String {
            withUnsafeBytes(of: &field) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }

        /// The type of the file system mounted deepest above `folder`, from `/proc/self/mounts`.
        private static func fileSystem(of folder: FilePath) -> String {
            guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else {
                return "unknown"
            }
            let path = URL(fileURLWithPath: folder.string).resolvingSymlinksInPath().path
            var best: (length: Int, type: String)?
            for line in mounts.split(separator: "\n") {
                let fields = line.split(separator: " ")
                guard fields.count >= 3 else { continue }
                let point = fields[1].replacingOccurrences(of: "\\040", with: " ")
                let inside = point == "/" || path == point || path.hasPrefix(point + "/")
                if inside, point.utf8.count >= best?.length ?? -1 { best = (point.utf8.count, String(fields[2])) }
            }
            return best?.type ?? "unknown"
        }

        private static func cpuModel() -> String {
            guard let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "unknown" }
            for line in text.split(separator: "\n") where line.hasPrefix("model name") {
                if let colon = line.firstIndex(of: ":") {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return "unknown"
        }
    }
}

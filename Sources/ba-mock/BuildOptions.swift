import ArgumentParser
import AssetPackFormat
import Foundation
import SystemPackage

extension PackCompression: ExpressibleByArgument {}
extension PackFormat: ExpressibleByArgument {}

/// Format and compression options shared by the commands that build packs.
struct BuildOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Archive format: aar (Apple Archive, what ba-package writes and App Store Connect takes, the format a device downloads) or tar (pax tar with an Index.json, ba-mock's own). (default: aar; tar when --compression is zstd, gzip or xz)",
            valueName: "tar|aar"
        )
    )
    var format: PackFormat?

    @Option(
        help: ArgumentHelp(
            "Compression: lzfse, lzma, zlib, lz4 or none for aar (default lzfse); zstd, gzip, xz, lz4 or none for tar (default zstd).",
            valueName: "name"
        )
    )
    var compression: PackCompression?

    @Option(
        help: "Compression level (zstd 1-19, default 3; gzip 1-9, default 6; xz 0-9, default 6; lz4 1-9, default 1)."
    )
    var level: Int?

    @Option(
        help:
            "Compression threads. A tar: 1 runs zstd on a thread of its own beside libarchive's; 2 or more are zstd's and xz's own workers, which help only compressible files, take about 65 MiB more memory and, past a few MiB, write other bytes than 1 (the same for any count from 2). An Apple Archive: the threads that compress its 4 MiB blocks (each holds 8 MiB: a block in, its output); the same bytes for any count. (default: 1 for a tar, one per core for an Apple Archive)"
    )
    var threads: Int?

    /// The format when --format is not given: Apple Archive, as a device downloads, unless the compression is
    /// one only ba-mock's tar has (`--compression zstd` alone keeps meaning a tar, as it did).
    var impliedFormat: PackFormat {
        compression.map { !PackFormat.aar.compressions.contains($0) } == true ? .tar : .aar
    }

    var packOptions: PackBuildOptions {
        let format = self.format ?? impliedFormat
        return PackBuildOptions(
            format: format,
            compression: compression ?? format.defaultCompression,
            level: level,
            threads: threads
        )
    }

    /// The options for writing `output`: a name ending in `.aar` means Apple Archive, and any other format
    /// given with such a name is refused (a tar under an `.aar` name would be uploaded by mistake).
    func packOptions(writing output: FilePath) throws -> PackBuildOptions {
        let named = PackFormat.named(by: output.string)
        if let named, let format, format != named {
            throw ValidationError(
                "\(output) names an Apple Archive (.aar), but --format \(format.rawValue) was given. Fix: drop "
                    + "--format, or name the output .pack"
            )
        }
        var options = packOptions
        if format == nil, let named {
            options = PackBuildOptions(
                format: named,
                compression: compression ?? named.defaultCompression,
                level: level,
                threads: threads
            )
        }
        do {
            try options.validate()
        } catch let error as AssetPackFormatError {
            throw ValidationError(error.message)
        }
        return options
    }

    func validate() throws {
        // With no --format the compression picks the format, and an output name may pick another: checked there.
        guard format != nil else { return }
        do {
            try packOptions.validate()
        } catch let error as AssetPackFormatError {
            throw ValidationError(error.message)
        }
    }
}

extension FilePath: @retroactive ExpressibleByArgument {
    public init?(argument: String) {
        guard !argument.isEmpty else { return nil }
        self.init(argument)
    }

    public var defaultValueDescription: String { string }
}

/// Refuses a `--base-url` that a client could not fetch from (a manifest listing it would fail every
/// download, or crash a client that trusts it).
func checkBaseURL(_ text: String) throws {
    guard let url = URL(string: text) else { throw ValidationError("--base-url \(text) does not parse as a URL") }
    if let problem = DownloadManifest.fetchProblem(with: url) {
        throw ValidationError("--base-url \(text) \(problem); give e.g. http://127.0.0.1:8443")
    }
}

/// An asset folder (at most one) and pack archives among `inputs`, told apart by what is on disk, as `serve` and
/// `publish` take them.
func folderAndArchives(_ inputs: [FilePath], verb: String) throws -> (folder: FilePath?, archives: [FilePath]) {
    var folder: FilePath?
    var archives: [FilePath] = []
    for input in inputs {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: input.string, isDirectory: &isFolder) else {
            throw ValidationError("\(input) does not exist; give an asset folder or a pack archive (.aar)")
        }
        if isFolder.boolValue {
            if let folder {
                throw ValidationError("\(folder) and \(input) are both folders; \(verb) one asset folder at a time")
            }
            folder = input
        } else {
            archives.append(input)
        }
    }
    return (folder, archives)
}

/// The versions of pack archives given as files, as `ba-serve` takes them (`serve`, `publish`).
struct ArchiveVersions: ParsableArguments {
    @Option(
        parsing: .upToNextOption,
        help: ArgumentHelp(
            "The versions of the archives given, in their order, as ba-serve takes them (default: 1 each).",
            valueName: "n"
        )
    )
    var assetPackVersions: [Int] = []

    /// Throws unless there is at most one version per archive, and each is 0 or more.
    func check(archives count: Int) throws {
        if assetPackVersions.count > count {
            throw ValidationError(
                "--asset-pack-versions gives \(assetPackVersions.count) versions for \(count) archive(s); give one "
                    + "per archive, in their order"
            )
        }
        if let bad = assetPackVersions.first(where: { $0 < 0 }) {
            throw ValidationError("--asset-pack-versions \(bad): a version is 0 or more")
        }
    }
}

/// How many delta archives `serve` and `export` build for each pack.
struct DeltaOptions: ParsableArguments {
    @Option(
        help:
            "Build a delta archive to each pack's published version from each of its last N versions: a client holding one of them downloads only the files that changed (listed as \"deltas\" in the manifest entry, which clients that do not know the field ignore). 0 turns deltas off."
    )
    var deltaDepth: Int = 3

    func validate() throws {
        guard (0...100).contains(deltaDepth) else { throw ValidationError("--delta-depth must be 0 to 100") }
    }
}

import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import SystemPackage

struct DownloadManifestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download-manifest",
        abstract: "Make or update a self-hosted download manifest from pack archives, as ba-package download-manifest.",
        discussion: """
            Known from third-party scripts that call Apple's tool, and the messages they quote (Apple's pages \
            document none of it): the subcommands, their flags, \
            one platform flag per manifest, pack URLs as base URL + "/" + ID (no .aar), downloadSize as the \
            archive's size, versions by position (0 when left out), and the refusal of a manifest path not \
            ending in .json (exit 64). Inferred: what update does with a pack whose archive did not change (kept), \
            with a new pack (added at 0), and with an archive for another platform (skipped with a warning).
            """,
        subcommands: [DownloadManifestCreate.self, DownloadManifestUpdate.self]
    )
}

/// The platform a manifest is for: exactly one of Apple's flags.
struct PlatformFlags: ParsableArguments {
    @Flag(name: .customLong("ios"), help: "Make the manifest for iOS (and iPadOS).")
    var ios = false
    @Flag(name: .customLong("macos"), help: "Make the manifest for macOS.")
    var macos = false
    @Flag(name: .customLong("tvos"), help: "Make the manifest for tvOS.")
    var tvos = false
    @Flag(name: .customLong("visionos"), help: "Make the manifest for visionOS.")
    var visionos = false

    /// The platform chosen, as Apple spells it.
    var platform: String {
        [(ios, "iOS"), (macos, "macOS"), (tvos, "tvOS"), (visionos, "visionOS")].first { $0.0 }?.1 ?? "iOS"
    }

    func validate() throws {
        guard [ios, macos, tvos, visionos].filter({ $0 }).count == 1 else {
            throw ValidationError(
                "give one platform: --ios, --macos, --tvos or --visionos (a manifest is made per platform, as "
                    + "Apple's tool needs one)"
            )
        }
    }
}

/// What `create` and `update` both take: the platform, the base URL, and how much to print.
struct SelfHostedOptions: ParsableArguments {
    @OptionGroup var platform: PlatformFlags

    @Option(
        help: ArgumentHelp(
            "The URL the packs are served under, http or https; a pack's URL is this + \"/\" + its ID (no .aar).",
            valueName: "url"
        )
    )
    var downloadBaseURL: String

    @Flag(name: [.customLong("quiet"), .customShort("q")], help: "Print nothing but warnings and errors.")
    var quiet = false

    /// Checks the base URL and the manifest's path (it must end in .json, as Apple's tool says).
    func check(manifest: FilePath) throws {
        do {
            try SelfHostedManifest.checkManifestPath(manifest)
            try SelfHostedManifest.checkBaseURL(downloadBaseURL)
        } catch {
            throw usageError(error)
        }
    }

    /// Runs `make` (a library call that reads the archives and writes the manifest), and says what was done.
    func run(writing path: FilePath, _ make: () async throws -> SelfHostedManifest.Result) async throws {
        let result: SelfHostedManifest.Result
        do {
            result = try await make()
        } catch {
            throw usageError(error)
        }
        for warning in result.warnings { Console.err("warning: \(warning)") }
        guard !quiet else { return }
        for line in result.changes { Console.out(line) }
        Console.out("wrote \(path): \(result.manifest.assetPacks.count) pack(s) for \(platform.platform)")
    }
}

/// A refusal of the library that is a usage error (exit 64, as Apple's tool exits), or the error itself.
func usageError(_ error: any Error) -> any Error {
    if let error = error as? AssetPackFormatError, error.code == .invalidOption || error.code == .duplicatePackID {
        return ValidationError(error.message)
    }
    return error
}

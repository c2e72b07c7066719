import ArgumentParser
import AssetPackFormat

struct DownloadManifestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download-manifest",
        abstract: "Make or update a self-hosted download manifest from pack archives, as ba-package download-manifest.",
        discussion: """
            Confirmed from Apple's tool (third-party scripts and its own messages): the subcommands, their flags, \
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

/// A refusal of the library that is a usage error (exit 64, as Apple's tool exits), or the error itself.
func usageError(_ error: any Error) -> any Error {
    if let error = error as? AssetPackFormatError, error.code == .invalidOption || error.code == .duplicatePackID {
        return ValidationError(error.message)
    }
    return error
}

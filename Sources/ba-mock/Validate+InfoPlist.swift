import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

/// `validate --info-plist`: the app's Background Assets keys, alone and against the packs.
struct InfoPlistOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "An app's Info.plist (XML or binary): checks its Background Assets keys (Apple-hosted or self-hosted), then the packs a first install downloads against its limits (BAEssentialMaxInstallSize, BAMaxInstallSize, the allowances and the domain allow list of BAInitialDownloadRestrictions). The packs are built from FOLDER as `export` builds them (the same --format, --compression and --delta-depth give the same sizes and manifest; built in a temporary folder from a copy of FOLDER/.ba-mock, so the folder is left as it was), unless --download-manifest is given.",
            valueName: "file"
        )
    )
    var infoPlist: FilePath?

    @Option(
        help: ArgumentHelp(
            "With --info-plist: check this published download manifest (e.g. OUT/manifest of `export`) instead of building FOLDER's packs; its relative URLs resolve against BAManifestURL.",
            valueName: "file"
        )
    )
    var downloadManifest: FilePath?

    @OptionGroup var build: BuildOptions
    @OptionGroup var deltas: DeltaOptions

    func validate() throws {
        if downloadManifest != nil, infoPlist == nil {
            throw ValidationError("--download-manifest is checked against an app's limits: give --info-plist too")
        }
    }

    /// What `--info-plist` asks to check, as the library takes it; `nil` without it.
    var check: FolderValidation.InfoPlistCheck? {
        infoPlist.map {
            FolderValidation.InfoPlistCheck(
                file: $0,
                downloadManifest: downloadManifest,
                options: build.packOptions,
                deltaDepth: deltas.deltaDepth
            )
        }
    }
}

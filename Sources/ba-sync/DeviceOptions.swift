import ArgumentParser
import AssetPackCLI
import AssetPackClient

/// The device's conditions played on purpose: what the commands that download take (in ``DownloadOptions``).
struct DeviceOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Play a device with this much free space for the app group, e.g. 200MB (decimal), 512MiB or 64m (binary): an install or update that would not fit (the new version is written beside the old; a --resumable download's archive too) fails before a byte of it is written, with the error a full disk gives, and what was installed is kept. Each run starts with this much free. (default: as much as the disk has)",
            valueName: "size"
        )
    )
    var freeSpace: String?

    @Option(
        help: ArgumentHelp(
            "Play a device on this network: wifi, or offline (the manifest and packs cannot be fetched and fail at once, with URLError.notConnectedToInternet as a cause; reads, remove and local status work). Apple documents no rule for cellular or Low Data Mode, so none is played; the Info.plist's allowances are first-install limits (--info-plist), on any network.",
            valueName: "network"
        )
    )
    var network: String = DeviceConditions.Network.wifi.rawValue

    @Option(
        help: ArgumentHelp(
            "Drop the network once in each pack's download, at the first chunk boundary after this many bytes, for SECONDS (default 1): the download pauses (status paused), waits for the network, and resumes where it stopped (status began, as Apple's \"began or resumed after being paused\"). While the network is away every download under way pauses, as on a device. E.g. 1m or 64KiB:2.5.",
            valueName: "bytes[:seconds]"
        )
    )
    var networkDrop: String?

    /// The device conditions given.
    var conditions: DeviceConditions {
        get throws {
            guard let network = DeviceConditions.Network(rawValue: network.lowercased()) else {
                let known = DeviceConditions.Network.allCases.map(\.rawValue).joined(separator: ", ")
                throw ValidationError("--network \(network) is not one of \(known)")
            }
            var conditions = DeviceConditions(network: network)
            if let freeSpace {
                guard let bytes = byteCount(freeSpace) else {
                    throw ValidationError(
                        "--free-space \(freeSpace) is not a size: a whole number of bytes, or with k, m, g (binary), "
                            + "KiB, MiB, GiB (binary), kB, MB, GB (decimal), e.g. 200MB or 512MiB"
                    )
                }
                conditions.freeSpace = Int64(bytes)
            }
            if let networkDrop {
                let parts = networkDrop.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(
                    String.init
                )
                let seconds = parts.count == 2 ? Double(parts[1]) : 1
                guard let bytes = parts.first.flatMap(byteCount), let seconds,
                    secondsProblem(seconds, option: "--network-drop", positive: false) == nil
                else {
                    throw ValidationError(
                        "--network-drop \(networkDrop) is not BYTES or BYTES:SECONDS, e.g. 1m or 64KiB:2.5"
                    )
                }
                conditions.drop = .init(afterBytes: Int64(bytes), downFor: .milliseconds(Int64(seconds * 1000)))
            }
            return conditions
        }
    }

    func validate() throws {
        _ = try conditions
    }
}

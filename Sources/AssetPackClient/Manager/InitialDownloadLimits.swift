import AssetPackFormat
import Foundation

/// The limits an app's Info.plist sets on what downloads right after the app is installed, enforced as a device
/// enforces them: at the first install only (WWDC22, "Meet Background Assets": the initial restrictions are
/// "only enforced after first app install"; once the app has launched they no longer apply).
///
/// The first install is an app group that has never held a pack: its state records no installed, obsolete or
/// once-seen pack. Before anything downloads, the packs about to be downloaded are held to every limit the
/// plist sets (``AppInfoPlist/limitViolations(packs:manifestSize:manifestHost:)``: the installed and download
/// sizes of the essential packs and of the others, the manifest's bytes counted as essential, and every host
/// against the domain allow list); the first limit gone over stops the whole download, as nothing of a first
/// install is useful without its essential packs.
public struct InitialDownloadLimits: Sendable, Hashable {
    /// The Info.plist's keys.
    public var plist: AppInfoPlist

    /// Limits from an Info.plist.
    public init(_ plist: AppInfoPlist) {
        self.plist = plist
    }

    /// Whether `store`'s app group is at its first install: it never held a pack. Blocks: call it through
    /// ``BlockingIO``.
    /// - Throws: ``AssetPackClientError`` with code `.io` when the state cannot be read.
    public static func isFirstInstall(_ store: AppGroupStore) throws -> Bool {
        let state = try store.loadState()
        return state.installed.isEmpty && state.obsolete.isEmpty && state.latestKnown.isEmpty
    }

    /// The error that stops a first install of `packs`, or `nil` when they are within every limit.
    /// - Parameters:
    ///   - packs: The packs about to be downloaded.
    ///   - manifestURL: The manifest's URL (its host is held to the allow list).
    ///   - manifestSize: The manifest's size in bytes (counted with the essential packs).
    /// - Returns: An ``AssetPackClientError`` with code `.downloadWouldExceedAllowance` (a size limit) or
    ///   `.downloadDisallowedByDomain`, whose message names the limit, the numbers and the packs, then any
    ///   other limit gone over.
    public func violation(downloading packs: [AssetPack], manifestURL: URL?, manifestSize: Int64?)
        -> AssetPackClientError?
    {
        let initial = packs.map { pack in
            let essential: Bool
            if case .essential = pack.downloadPolicy { essential = true } else { essential = false }
            return AppInfoPlist.InitialPack(
                id: pack.id,
                essential: essential,
                downloadSize: pack.downloadSize,
                installSize: pack.installSize,
                host: pack.url.host
            )
        }
        let violations = plist.limitViolations(
            packs: initial,
            manifestSize: manifestSize,
            manifestHost: manifestURL?.host
        )
        guard let first = violations.first else { return nil }
        let others = violations.dropFirst().map { "\($0.limit.rawValue) \($0.message)" }
        return AssetPackClientError(
            code: first.limit == .domainAllowList ? .downloadDisallowedByDomain : .downloadWouldExceedAllowance,
            message: "the first install stopped before downloading anything, by the Info.plist's "
                + "\(first.limit.rawValue): \(first.message)"
                + (others.isEmpty ? "" : "; also \(others.joined(separator: "; "))")
                + ". Fix: \(first.fix) (a device enforces these limits at the first install only)"
        )
    }
}

import AssetPackFormat
import Foundation
import Synchronization
import SystemPackage

/// The device a manager plays, on purpose: how much free space it has, and what its network does. The
/// default is a happy device (Wi-Fi, room for everything, no drop), so that nothing changes unless asked.
///
/// Conditions are set when a manager is made (``AssetPackManager/Configuration/conditions``) and can change
/// while it works (``AssetPackManager/setConditions(_:)``): turning the network off during a download pauses
/// it, and it resumes when the network is back, as a device's background download does.
public struct DeviceConditions: Sendable, Hashable {
    /// The network the device is on. Apple documents no rule for an expensive (cellular) or constrained (Low
    /// Data Mode) network in Background Assets, so none is played: the Info.plist's allowances are first-install
    /// limits (`BAInitialDownloadRestrictions`: "restrictions that apply to the set of assets that download
    /// immediately after app installation"), held on any network (``InitialDownloadLimits``).
    public enum Network: String, Sendable, Hashable, CaseIterable, Codable {
        /// A working network: everything downloads.
        case wifi
        /// No network: the manifest and packs cannot be fetched (`URLError.notConnectedToInternet`, what
        /// `URLSession`, which Background Assets downloads through, gives); what is installed is read as before.
        case offline
    }

    /// A network that goes away in the middle of a download and comes back.
    public struct Drop: Sendable, Hashable {
        /// The drop comes once a download has received this many bytes (once per pack).
        public var afterBytes: Int64
        /// How long the network stays away.
        public var downFor: Duration

        /// A drop after `afterBytes` bytes of each pack's download, for `downFor`.
        public init(afterBytes: Int64, downFor: Duration = .seconds(1)) {
            self.afterBytes = max(0, afterBytes)
            self.downFor = max(.zero, downFor)
        }
    }

    /// The network.
    public var network: Network
    /// The bytes free for the app group when the conditions are set; `nil` for as much as the disk has. An
    /// install that would not fit fails before a byte of it is written, as on a full disk.
    public var freeSpace: Int64?
    /// A drop of the network in the middle of each pack's download, or `nil`.
    public var drop: Drop?

    /// Conditions; the defaults are a happy device.
    public init(network: Network = .wifi, freeSpace: Int64? = nil, drop: Drop? = nil) {
        self.network = network
        self.freeSpace = freeSpace.map { max(0, $0) }
        self.drop = drop
    }

    /// Whether these are the happy defaults.
    public var isDefault: Bool { self == DeviceConditions() }

    /// The conditions in a few words, for a log: `network offline; free space 200000000 bytes; drop after
    /// 65536 bytes for 1 s`.
    public var summary: String {
        var parts = ["network \(network.rawValue)"]
        if let freeSpace { parts.append("free space \(freeSpace) bytes") }
        if let drop { parts.append("drop after \(drop.afterBytes) bytes for \(drop.downFor.inSeconds) s") }
        return parts.joined(separator: "; ")
    }
}

/// Plays a manager's ``DeviceConditions``: the downloads and manifest fetches ask it whether the network is
/// there, and installs ask it for room before they write.
final class SimulatedDevice: Sendable {
    private struct State {
        var conditions: DeviceConditions
        /// The network is away until then (a drop under way).
        var downUntil: ContinuousClock.Instant?
        /// The packs whose download had its drop already, under these conditions.
        var dropped: Set<String> = []
        /// The bytes the installed packs took when the free space was set (read at the first install after).
        var installedAtSet: Int64?
        /// The bytes held for installs under way.
        var reserved: Int64 = 0
    }

    private let state: Mutex<State>

    init(_ conditions: DeviceConditions) {
        state = Mutex(State(conditions: conditions))
    }

    /// The conditions now.
    var conditions: DeviceConditions { state.withLock { $0.conditions } }

    /// Changes the conditions; free space counts from now, and each pack may drop once more.
    func set(_ conditions: DeviceConditions) {
        state.withLock { state in
            state = State(conditions: conditions, reserved: state.reserved)
        }
    }

    /// Whether the network is there now.
    var isOnline: Bool {
        state.withLock { state in
            guard state.conditions.network != .offline else { return false }
            guard let until = state.downUntil else { return true }
            if ContinuousClock.now >= until { state.downUntil = nil }
            return state.downUntil == nil
        }
    }

    /// Fails when the network is not there: at once (not retried) when the device is offline, to be retried
    /// when a drop is under way.
    /// - Parameter what: What could not be fetched, for the message (`the manifest at URL`, `pack Levels`).
    /// - Throws: ``AssetPackClientError`` with code `.network`, whose cause is `URLError(.notConnectedToInternet)`.
    func requireNetwork(for what: String, pack: String? = nil) throws {
        guard !isOnline else { return }
        let offline = conditions.network == .offline
        var error = AssetPackClientError(
            code: .network,
            message: offline
                ? "cannot fetch \(what): the device is offline (simulated, --network offline). Fix: go back online "
                    + "(--network wifi), or read what is installed"
                : "cannot fetch \(what): the network dropped (simulated, --network-drop)",
            assetPackID: pack,
            cause: URLError(.notConnectedToInternet)
        )
        error.retryable = !offline
        error.shortReason = offline ? "offline" : "network dropped"
        throw error
    }

    /// Waits until the network is there (a download paused by a drop, or by going offline, resumes then).
    /// - Throws: `CancellationError`.
    func waitForNetwork() async throws {
        while !isOnline { try await Task.sleep(for: .milliseconds(20)) }
    }

    /// Told that a download of `pack` has received `bytes` in all: cuts it when the drop's point is crossed
    /// (the network then goes away for the drop's time), or when the network went away.
    /// - Throws: ``AssetPackClientError`` with code `.network` (retried: the download pauses, then resumes).
    func received(_ bytes: Int64, of pack: AssetPack) throws {
        let cut: Bool = state.withLock { state in
            guard let drop = state.conditions.drop, bytes >= drop.afterBytes,
                state.dropped.insert(pack.id).inserted
            else { return false }
            state.downUntil = ContinuousClock.now + drop.downFor
            return true
        }
        if cut || !isOnline {
            var error = AssetPackClientError.network(
                "the network dropped during the download of pack \(pack.id) at byte \(bytes) (simulated)",
                reason: "network dropped at byte \(bytes)",
                pack: pack,
                cause: URLError(.networkConnectionLost)
            )
            error.retryable = true
            throw error
        }
    }

    /// Holds room for an install of `pack` that writes `bytes`, or fails as a full disk would, before a byte
    /// is written. Give the room back with ``release(_:)`` when the install ends.
    /// - Parameters:
    ///   - installed: The bytes the installed packs take now (the app group's state).
    /// - Returns: The bytes held (0 when no free space is set).
    /// - Throws: ``AssetPackClientError`` with code `.io` and cause `Errno.noSpace`, as a full disk gives.
    func reserve(_ bytes: Int64, for pack: AssetPack, installed: Int64, estimated: Bool) throws -> Int64 {
        try state.withLock { state in
            guard let freeSpace = state.conditions.freeSpace else { return 0 }
            let atSet = state.installedAtSet ?? installed
            state.installedAtSet = atSet
            let free = freeSpace - (installed - atSet) - state.reserved
            guard bytes <= free else {
                var error = AssetPackClientError(
                    code: .io,
                    message: "no space left on the device for pack \(pack.id): it needs \(bytes) bytes"
                        + (estimated ? " (its download size: the manifest gives no installSize)" : "")
                        + " and \(max(0, free)) are free (simulated, --free-space \(freeSpace)); nothing was "
                        + "downloaded and what was installed is kept. Fix: free space (remove a pack) and run again",
                    assetPackID: pack.id,
                    cause: Errno.noSpace
                )
                error.saysDiskFull = true
                throw error
            }
            state.reserved += bytes
            return bytes
        }
    }

    /// Gives back room held by ``reserve(_:for:installed:estimated:)``.
    func release(_ bytes: Int64) {
        guard bytes > 0 else { return }
        state.withLock { $0.reserved -= bytes }
    }
}

import Foundation

extension AppInfoPlist {
    /// A limit of the Info.plist that the packs of a first install go over.
    public struct LimitViolation: Sendable, Hashable {
        /// Which limit.
        public enum Limit: String, Sendable, Hashable, CaseIterable {
            case essentialMaxInstallSize = "BAEssentialMaxInstallSize"
            case maxInstallSize = "BAMaxInstallSize"
            case essentialDownloadAllowance = "BAInitialDownloadRestrictions.BAEssentialDownloadAllowance"
            case downloadAllowance = "BAInitialDownloadRestrictions.BADownloadAllowance"
            case domainAllowList = "BAInitialDownloadRestrictions.BADownloadDomainAllowList"
        }

        /// Which limit.
        public var limit: Limit
        /// The bytes the packs add up to (the manifest's included for the essential allowance); `nil` for the
        /// domain list.
        public var total: Int64?
        /// The bytes the limit allows; `nil` for the domain list.
        public var allowed: Int64?
        /// The packs that count against the limit (for the domain list: those on a host it does not allow; the
        /// manifest is named `manifest`).
        public var packs: [String]
        /// What is over, with the numbers in bytes and in KiB/MiB/GiB, and the packs.
        public var message: String
        /// What to do about it.
        public var fix: String
    }

    /// A pack as the limits see it.
    public struct InitialPack: Sendable, Hashable {
        /// The pack's ID.
        public var id: String
        /// Whether it is essential (counted against the essential limits).
        public var essential: Bool
        /// The archive's size (compressed bytes).
        public var downloadSize: Int64
        /// The bytes its files take installed, when known (Apple's manifests leave it out).
        public var installSize: Int64?
        /// The host it downloads from, when its URL has one.
        public var host: String?

        /// Creates a pack.
        public init(id: String, essential: Bool, downloadSize: Int64, installSize: Int64?, host: String?) {
            self.id = id
            self.essential = essential
            self.downloadSize = downloadSize
            self.installSize = installSize
            self.host = host
        }
    }

    /// The packs a device downloads right after the app is installed (those whose `installationEventTypes`
    /// include `firstInstallation`), with their hosts resolved against the manifest's URL.
    /// - Parameters:
    ///   - manifest: The download manifest.
    ///   - manifestURL: Where the manifest is (`BAManifestURL`), which relative pack URLs resolve against.
    public static func initialPacks(of manifest: DownloadManifest, manifestURL: String?) -> [InitialPack] {
        manifest.assetPacks.filter { $0.downloadPolicy.installationEventTypes.contains(.firstInstallation) }.map {
            entry in
            let isEssential: Bool
            if case .essential = entry.downloadPolicy { isEssential = true } else { isEssential = false }
            let base = manifestURL.flatMap { URL(string: $0) }
            return InitialPack(
                id: entry.id,
                essential: isEssential,
                downloadSize: entry.downloadSize,
                installSize: entry.installSize,
                host: URL(string: entry.url, relativeTo: base)?.absoluteURL.host
            )
        }
    }

    /// Where the packs of a first install go over this Info.plist's limits: the installed sizes of the essential
    /// and of the other packs against `BAEssentialMaxInstallSize` and `BAMaxInstallSize`, their download sizes
    /// (the manifest's added to the essential ones) against the two allowances of `BAInitialDownloadRestrictions`,
    /// and every host (the manifest's too) against `BADownloadDomainAllowList`. A limit the plist does not set is
    /// not checked; nor is an Apple-hosted app, which sets none. Sums saturate rather than overflow.
    /// - Parameters:
    ///   - packs: The packs the first install downloads.
    ///   - manifestSize: The manifest's size in bytes, when known.
    ///   - manifestHost: The manifest's host, when known.
    /// - Returns: One violation per limit gone over, in the order of ``LimitViolation/Limit``.
    public func limitViolations(packs: [InitialPack], manifestSize: Int64?, manifestHost: String?) -> [LimitViolation] {
        guard !isAppleHosted else { return [] }
        var violations: [LimitViolation] = []
        let essential = packs.filter(\.essential)
        let others = packs.filter { !$0.essential }
        checkInstallSizes(essential: essential, others: others, into: &violations)
        checkDownloadSizes(essential: essential, others: others, manifestSize: manifestSize, into: &violations)
        checkHosts(packs: packs, manifestHost: manifestHost, into: &violations)
        return violations
    }

    /// The sum of `values`, or `Int64.max` when it would overflow.
    private static func saturatingSum(_ values: [Int64]) -> Int64 {
        values.reduce(0) { total, value in
            let (result, overflow) = total.addingReportingOverflow(value)
            return overflow ? .max : result
        }
    }

    /// The size in KiB/MiB/GiB and in bytes, as "1.5 MiB (1572864 bytes)".
    private static func sizeText(_ value: Int64) -> String { "\(ByteFormat.string(value)) (\(value) bytes)" }

    /// The packs by ID, each with its size when `size` gives one, joined with commas.
    private static func packList(_ packs: [InitialPack], _ size: (InitialPack) -> Int64?) -> String {
        packs.sorted { ($0.id) < ($1.id) }.map { pack in
            size(pack).map { "\(pack.id) \(ByteFormat.string($0))" } ?? pack.id
        }.joined(separator: ", ")
    }

    /// Records that `packs` take `total` bytes where `limit` allows `allowed`, when they do.
    private static func checkLimit(
        _ limit: LimitViolation.Limit,
        total: Int64,
        allowed: Int64,
        packs: [InitialPack],
        _ said: String,
        into violations: inout [LimitViolation]
    ) {
        guard total > allowed else { return }
        violations.append(
            LimitViolation(
                limit: limit,
                total: total,
                allowed: allowed,
                packs: packs.map(\.id).sorted(),
                message: said,
                fix: "raise \(limit.rawValue) to \(total) or more, or make those packs smaller or fewer"
            )
        )
    }

    /// Records where the installed sizes go over `BAEssentialMaxInstallSize` and `BAMaxInstallSize`.
    private func checkInstallSizes(
        essential: [InitialPack],
        others: [InitialPack],
        into violations: inout [LimitViolation]
    ) {
        let installChecks: [(LimitViolation.Limit, [InitialPack], Int64?, String)] = [
            (.essentialMaxInstallSize, essential, essentialMaxInstallSize, "the essential packs take"),
            (.maxInstallSize, others, maxInstallSize, "the non-essential packs take"),
        ]
        for (limit, group, allowed, what) in installChecks {
            guard let allowed else { continue }
            let sized = group.filter { $0.installSize != nil }
            let total = Self.saturatingSum(sized.compactMap(\.installSize))
            Self.checkLimit(
                limit,
                total: total,
                allowed: allowed,
                packs: sized,
                "\(what) \(Self.sizeText(total)) installed, over the \(Self.sizeText(allowed)) it allows: "
                    + Self.packList(sized, \.installSize),
                into: &violations
            )
        }
    }

    /// Records where the download sizes go over the two allowances of `BAInitialDownloadRestrictions`.
    private func checkDownloadSizes(
        essential: [InitialPack],
        others: [InitialPack],
        manifestSize: Int64?,
        into violations: inout [LimitViolation]
    ) {
        let restrictions = initialDownloadRestrictions
        let downloadChecks: [(LimitViolation.Limit, [InitialPack], Int64?, Int64, String)] = [
            (
                .essentialDownloadAllowance, essential, restrictions?.essentialDownloadAllowance, manifestSize ?? 0,
                "the essential packs download"
            ),
            (
                .downloadAllowance, others, restrictions?.downloadAllowance, 0,
                "the non-essential packs download"
            ),
        ]
        for (limit, group, allowed, extra, what) in downloadChecks {
            guard let allowed else { continue }
            let total = Self.saturatingSum(group.map(\.downloadSize) + [extra])
            let manifestNote =
                limit == .essentialDownloadAllowance && manifestSize != nil
                ? " with the manifest's \(Self.sizeText(extra))" : ""
            Self.checkLimit(
                limit,
                total: total,
                allowed: allowed,
                packs: group,
                "\(what) \(Self.sizeText(total))\(manifestNote), over the \(Self.sizeText(allowed)) it allows: "
                    + Self.packList(group, \.downloadSize),
                into: &violations
            )
        }
    }

    /// Records the hosts, the manifest's and the packs', that `BADownloadDomainAllowList` does not allow.
    private func checkHosts(packs: [InitialPack], manifestHost: String?, into violations: inout [LimitViolation]) {
        let restrictions = initialDownloadRestrictions
        if let allowList = restrictions?.domainAllowList {
            var outside: [(name: String, host: String)] = []
            if let manifestHost, !DomainAllowList.allows(manifestHost, by: allowList) {
                outside.append(("manifest", manifestHost))
            }
            for pack in packs.sorted(by: { $0.id < $1.id }) {
                if let host = pack.host, !DomainAllowList.allows(host, by: allowList) {
                    outside.append((pack.id, host))
                }
            }
            if !outside.isEmpty {
                let hosts = Array(Set(outside.map(\.host))).sorted()
                violations.append(
                    LimitViolation(
                        limit: .domainAllowList,
                        total: nil,
                        allowed: nil,
                        packs: outside.map(\.name),
                        message: "does not allow \(hosts.joined(separator: ", ")) ("
                            + outside.map { "\($0.name) from \($0.host)" }.joined(separator: ", ")
                            + "); it allows " + (allowList.isEmpty ? "nothing" : allowList.joined(separator: ", ")),
                        fix: "add \(hosts.joined(separator: ", ")) (or a *. wildcard over it) to the list"
                    )
                )
            }
        }
    }

    /// The limit problems of the packs of `manifest` (those a first install downloads), as `ba-mock validate`
    /// lists them: each an error on the limit's key.
    /// - Parameters:
    ///   - manifest: The download manifest, built from a folder or as published.
    ///   - manifestSize: The manifest's size in bytes.
    ///   - file: The Info.plist, as shown in the problems.
    public func problems(against manifest: DownloadManifest, manifestSize: Int64, file: String) -> [ManifestProblem] {
        let packs = Self.initialPacks(of: manifest, manifestURL: manifestURL)
        let host = manifestURL.flatMap { URL(string: $0)?.host }
        var problems = limitViolations(packs: packs, manifestSize: manifestSize, manifestHost: host).map {
            ManifestProblem.error(file, $0.limit.rawValue, $0.message, fix: $0.fix)
        }
        // A limit that could not be held to every pack says so rather than pass quietly.
        let unsized: [(LimitViolation.Limit, Int64?, [InitialPack])] = [
            (.essentialMaxInstallSize, essentialMaxInstallSize, packs.filter(\.essential)),
            (.maxInstallSize, maxInstallSize, packs.filter { !$0.essential }),
        ]
        for (limit, allowed, group) in unsized where allowed != nil && !isAppleHosted {
            let missing = group.filter { $0.installSize == nil }.map(\.id).sorted()
            guard !missing.isEmpty else { continue }
            problems.append(
                .warning(
                    file,
                    limit.rawValue,
                    "is not checked for \(missing.joined(separator: ", ")): the manifest gives no installSize "
                        + "(Apple's manifests do not)",
                    fix: "validate the asset folder without --download-manifest"
                )
            )
        }
        return problems
    }
}

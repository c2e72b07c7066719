import Foundation

extension AppInfoPlist {
    /// Problems of the keys on their own: what an Apple-hosted or a self-hosted managed app must declare.
    ///
    /// Apple-hosted (`BAUsesAppleHosting` YES): `BAAppGroupID`, `BAHasManagedAssetPacks` YES and nothing else, as
    /// Apple's "Downloading Apple-hosted asset packs" says ("omit all other Background Assets information property
    /// list keys"); each other key is an error, since the page gives no meaning to them together and a self-hosted
    /// key (`BAManifestURL`) contradicts Apple hosting. Self-hosted managed: `BAAppGroupID`, `BAManifestURL` and
    /// `BAInitialDownloadRestrictions` with its three keys (a device traps without the dictionary); a missing
    /// `BAEssentialMaxInstallSize` or `BAMaxInstallSize` is a warning (the App Store shows them; nothing fails
    /// without them).
    /// - Parameter file: The file, as shown in the problems.
    /// - Returns: The problems, errors and warnings, in the order of the keys.
    public func problems(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        problems += appGroupProblems(file: file)
        problems += managedAssetPacksProblems(file: file)
        if isAppleHosted {
            problems += appleHostedProblems(file: file)
            return problems
        }
        problems += manifestURLProblems(file: file)
        problems += restrictionsProblems(file: file)
        problems += maxInstallSizeWarnings(file: file)
        return problems
    }

    /// The problem of `BAAppGroupID` when it is missing or empty, else none.
    private func appGroupProblems(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        if appGroupID == nil {
            problems.append(
                .error(
                    file,
                    "BAAppGroupID",
                    "is missing: the app and its downloader extension share packs through an app group",
                    fix: "add BAAppGroupID with the app group's identifier, e.g. group.com.example.game"
                )
            )
        } else if appGroupID?.isEmpty == true {
            problems.append(.error(file, "BAAppGroupID", "is empty", fix: "give the app group's identifier"))
        }
        return problems
    }

    /// The problem of `BAHasManagedAssetPacks` when it is missing or NO, else none.
    private func managedAssetPacksProblems(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        if hasManagedAssetPacks != true {
            problems.append(
                .error(
                    file,
                    "BAHasManagedAssetPacks",
                    hasManagedAssetPacks == nil
                        ? "is missing: without it the system does not manage asset packs (AssetPackManager)"
                        : "is NO: the system does not manage asset packs (AssetPackManager)",
                    fix: "set BAHasManagedAssetPacks to YES (<true/>)"
                )
            )
        }
        return problems
    }

    /// An error for each Background Assets key an Apple-hosted app sets beyond the three Apple allows.
    private func appleHostedProblems(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        let allowed: Set = ["BAAppGroupID", "BAHasManagedAssetPacks", "BAUsesAppleHosting"]
        for key in backgroundAssetsKeys where !allowed.contains(key) {
            problems.append(
                .error(
                    file,
                    key,
                    "is set in an Apple-hosted app (BAUsesAppleHosting YES); Apple says to omit every Background "
                        + "Assets key but BAAppGroupID, BAHasManagedAssetPacks and BAUsesAppleHosting",
                    fix: "remove \(key), or set BAUsesAppleHosting to NO to host the packs yourself"
                )
            )
        }
        return problems
    }

    /// The problem of `BAManifestURL` when it is missing, not a URL or http, else none.
    private func manifestURLProblems(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        if manifestURL == nil {
            problems.append(
                .error(
                    file,
                    "BAManifestURL",
                    "is missing: a self-hosted app (BAUsesAppleHosting not YES) names its download manifest's URL",
                    fix: "add BAManifestURL, e.g. https://cdn.example.com/manifest, or set BAUsesAppleHosting to YES"
                )
            )
        } else if let manifestURL {
            if let problem = Self.urlProblem(manifestURL) {
                problems.append(
                    .error(file, "BAManifestURL", "is \"\(manifestURL)\": \(problem)", fix: "give an https URL")
                )
            } else if URL(string: manifestURL)?.scheme?.lowercased() == "http" {
                problems.append(
                    .warning(
                        file,
                        "BAManifestURL",
                        "is http, not https: App Transport Security keeps a device from fetching it",
                        fix: "serve the manifest over https (ba-mock serve --tls-self-signed for tests)"
                    )
                )
            }
        }
        return problems
    }

    /// The problems of `BAInitialDownloadRestrictions`: missing, a key of it missing, or a wrong domain entry.
    private func restrictionsProblems(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        let prefix = "BAInitialDownloadRestrictions."
        if let restrictions = initialDownloadRestrictions {
            let present: [(String, Bool)] = [
                ("BADownloadAllowance", restrictions.downloadAllowance != nil),
                ("BAEssentialDownloadAllowance", restrictions.essentialDownloadAllowance != nil),
                ("BADownloadDomainAllowList", restrictions.domainAllowList != nil),
            ]
            for (key, isThere) in present where !isThere {
                problems.append(
                    .error(
                        file,
                        prefix + key,
                        "is missing (or has the wrong type); Apple's page says it is required to use Background Assets",
                        fix: key == "BADownloadDomainAllowList"
                            ? "list the DNS names of the manifest and the packs, e.g. cdn.example.com or *.example.com"
                            : "give the size in bytes (download sizes: compressed)"
                    )
                )
            }
            for (position, entry) in (restrictions.domainAllowList ?? []).enumerated() {
                if let problem = DomainAllowList.entryProblem(entry) {
                    problems.append(
                        .error(
                            file,
                            "\(prefix)BADownloadDomainAllowList[\(position)]",
                            "is \"\(entry)\": \(problem)",
                            fix: "write a DNS name, e.g. cdn.example.com, or *.example.com for every name below it"
                        )
                    )
                }
            }
        } else {
            problems.append(
                .error(
                    file,
                    "BAInitialDownloadRestrictions",
                    "is missing; a self-hosted managed app traps without it (\"BUG IN CLIENT OF BackgroundAssets: The "
                        + "app must contain a dictionary with a key named BAInitialDownloadRestrictions\")",
                    fix: "add the dictionary with BADownloadAllowance, BAEssentialDownloadAllowance and "
                        + "BADownloadDomainAllowList"
                )
            )
        }
        return problems
    }

    /// A warning for each of `BAEssentialMaxInstallSize` and `BAMaxInstallSize` that is missing.
    private func maxInstallSizeWarnings(file: String) -> [ManifestProblem] {
        var problems: [ManifestProblem] = []
        for (key, value) in [
            ("BAEssentialMaxInstallSize", essentialMaxInstallSize), ("BAMaxInstallSize", maxInstallSize),
        ]
        where value == nil {
            problems.append(
                .warning(
                    file,
                    key,
                    "is missing; Apple's page says it is required, and the App Store shows it as the app's size",
                    fix: "give the installed (uncompressed) size in bytes"
                )
            )
        }
        return problems
    }

    /// Why a manifest URL cannot be fetched, or `nil`.
    static func urlProblem(_ text: String) -> String? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else { return "not a URL" }
        guard scheme == "https" || scheme == "http" else { return "a \(scheme) URL, not https" }
        guard let host = url.host, !host.isEmpty else { return "a URL without a host" }
        return nil
    }
}

/// `BADownloadDomainAllowList`'s rule: a DNS name allows itself, `*.example.com` allows every name below
/// example.com (at any depth) but not example.com itself. Names compare without case and without a final dot.
public enum DomainAllowList {
    /// Whether `host` is allowed by `entries`.
    public static func allows(_ host: String, by entries: [String]) -> Bool {
        let host = normalized(host)
        return entries.contains { entry in
            let entry = normalized(entry)
            if entry.hasPrefix("*.") { return host.hasSuffix(entry.dropFirst()) && host.count > entry.count - 1 }
            return host == entry
        }
    }

    /// Why an entry is not a DNS name or a `*.` wildcard, or `nil`.
    static func entryProblem(_ entry: String) -> String? {
        if entry.contains("://") || entry.contains("/") { return "a URL, not a DNS name" }
        let name = entry.hasPrefix("*.") ? String(entry.dropFirst(2)) : entry
        if name.isEmpty { return "empty" }
        if name.contains("*") { return "a wildcard that is not a leading *." }
        if name.contains(":") { return "a name with a port; the list holds DNS names only" }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-")
        for label in labels.dropLast(name.hasSuffix(".") ? 1 : 0) {
            if label.isEmpty || label.count > 63 || !label.lowercased().allSatisfy(allowed.contains) {
                return "not a DNS name (each label is 1 to 63 letters, digits or hyphens)"
            }
        }
        return nil
    }

    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }
}

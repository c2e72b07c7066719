import Foundation
import SystemPackage

/// The Background Assets keys of an app's `Info.plist`: what a device reads to know where the packs come from
/// and how much it may download before the app first launches.
///
/// Read from XML or binary property lists (Foundation's `PropertyListSerialization`). A value of the wrong
/// type is a problem and reads as absent; nothing in the file makes the reader crash.
public struct AppInfoPlist: Sendable, Hashable {
    /// `BAInitialDownloadRestrictions`: the limits on what downloads right after the app is installed.
    public struct InitialDownloadRestrictions: Sendable, Hashable {
        /// `BADownloadAllowance`: the combined download size (compressed bytes) of the non-essential packs.
        public var downloadAllowance: Int64?
        /// `BAEssentialDownloadAllowance`: the combined download size (compressed bytes) of the essential
        /// packs, the manifest included.
        public var essentialDownloadAllowance: Int64?
        /// `BADownloadDomainAllowList`: the DNS names downloads may come from; `*.example.com` allows every
        /// name below example.com.
        public var domainAllowList: [String]?

        /// Creates restrictions.
        public init(
            downloadAllowance: Int64? = nil,
            essentialDownloadAllowance: Int64? = nil,
            domainAllowList: [String]? = nil
        ) {
            self.downloadAllowance = downloadAllowance
            self.essentialDownloadAllowance = essentialDownloadAllowance
            self.domainAllowList = domainAllowList
        }
    }

    /// `BAAppGroupID`: the app group the app and its downloader extension share (an identifier, not a path).
    public var appGroupID: String?
    /// `BAHasManagedAssetPacks`: the system manages the asset packs (`AssetPackManager`).
    public var hasManagedAssetPacks: Bool?
    /// `BAUsesAppleHosting`: Apple hosts the packs.
    public var usesAppleHosting: Bool?
    /// `BAManifestURL`: where a self-hosted app's download manifest is.
    public var manifestURL: String?
    /// `BAInitialDownloadRestrictions`.
    public var initialDownloadRestrictions: InitialDownloadRestrictions?
    /// `BAEssentialMaxInstallSize`: the combined installed size (uncompressed bytes) of the essential packs.
    public var essentialMaxInstallSize: Int64?
    /// `BAMaxInstallSize`: the combined installed size (uncompressed bytes) of the non-essential packs that
    /// download right after installation.
    public var maxInstallSize: Int64?
    /// Every top-level key starting with `BA` the file holds, sorted.
    public var backgroundAssetsKeys: [String] = []

    /// Creates a plist's keys.
    public init(
        appGroupID: String? = nil,
        hasManagedAssetPacks: Bool? = nil,
        usesAppleHosting: Bool? = nil,
        manifestURL: String? = nil,
        initialDownloadRestrictions: InitialDownloadRestrictions? = nil,
        essentialMaxInstallSize: Int64? = nil,
        maxInstallSize: Int64? = nil
    ) {
        self.appGroupID = appGroupID
        self.hasManagedAssetPacks = hasManagedAssetPacks
        self.usesAppleHosting = usesAppleHosting
        self.manifestURL = manifestURL
        self.initialDownloadRestrictions = initialDownloadRestrictions
        self.essentialMaxInstallSize = essentialMaxInstallSize
        self.maxInstallSize = maxInstallSize
    }

    /// Whether the packs are Apple-hosted (`BAUsesAppleHosting` YES).
    public var isAppleHosted: Bool { usesAppleHosting == true }

    /// The top-level Background Assets keys this reader knows.
    public static let topLevelKeys = [
        "BAAppGroupID", "BAEssentialMaxInstallSize", "BAHasManagedAssetPacks", "BAInitialDownloadRestrictions",
        "BAManifestURL", "BAMaxInstallSize", "BAUsesAppleHosting",
    ]

    /// The keys of `BAInitialDownloadRestrictions`.
    public static let restrictionKeys = [
        "BADownloadAllowance", "BADownloadDomainAllowList", "BAEssentialDownloadAllowance",
    ]

    /// The largest Info.plist read (a real one is a few KiB).
    public static let maximumSize = 16 << 20
}

/// What reading an Info.plist found: its keys when it is a property list with a dictionary at its root, and
/// every problem of its Background Assets keys.
public struct AppInfoPlistCheck: Sendable, Hashable {
    /// The keys, when the file is a dictionary property list.
    public var plist: AppInfoPlist?
    /// Wrong types, unknown `BA` keys, a file that is not a property list.
    public var problems: [ManifestProblem]
}

extension AppInfoPlist {
    /// The Info.plist at `file` when it has no error (warnings aside): what a client configures itself from
    /// (ba-sync's `--info-plist`, `BA_SYNC_INFO_PLIST`, a test's configuration). Blocks: call it through
    /// ``BlockingIO``.
    /// - Throws: ``AssetPackFormatError`` with code `.io` when the file cannot be read, `.invalidManifest` with
    ///   each error of the file and its keys, one a line (`ba-mock validate --info-plist` lists warnings too).
    public static func readValid(file: FilePath) throws -> AppInfoPlist {
        let check = try read(file: file)
        let errors = (check.plist.map { check.problems + $0.problems(file: file.string) } ?? check.problems)
            .filter { $0.severity == .error }
        guard let plist = check.plist, errors.isEmpty else {
            throw AssetPackFormatError(
                code: .invalidManifest,
                message: errors.map(\.description).joined(separator: "\n")
            )
        }
        return plist
    }

    /// Reads and checks an Info.plist file. Blocks: call it through ``BlockingIO``.
    /// - Parameter file: The file (XML or binary property list).
    /// - Returns: The keys and the problems of reading them (the configuration is checked by ``problems(file:)``).
    /// - Throws: ``AssetPackFormatError`` with code `.io` when the file cannot be read.
    public static func read(file: FilePath) throws -> AppInfoPlistCheck {
        // Opened without waiting and checked before a byte is read: a FIFO or a device in its place would
        // block the open or never end.
        let contents: SmallFile
        do {
            contents = try FileDescriptor.readSmallRegularFile(file, followingSymlink: true, maximumSize: maximumSize)
        } catch {
            throw AssetPackFormatError(code: .io, message: "cannot read \(file): \(error)", cause: error)
        }
        let data: Data
        switch contents {
        case .bytes(let bytes):
            data = Data(bytes)
        case .notRegular(let kind):
            return AppInfoPlistCheck(
                plist: nil,
                problems: [.error(file.string, "(file)", "is \(kind), not a file", fix: "pass the app's Info.plist")]
            )
        case .tooLarge:
            return AppInfoPlistCheck(
                plist: nil,
                problems: [
                    .error(
                        file.string,
                        "(file)",
                        "is larger than \(ByteFormat.string(Int64(maximumSize))): not an app's Info.plist",
                        fix: "pass the app's Info.plist"
                    )
                ]
            )
        }
        return parse(data, file: file.string)
    }

    /// Reads the Background Assets keys of an Info.plist's bytes.
    /// - Parameters:
    ///   - data: An XML or binary property list.
    ///   - file: Where it came from, for the problems.
    /// - Returns: The keys (when the root is a dictionary) and every problem found reading them.
    public static func parse(_ data: Data, file: String) -> AppInfoPlistCheck {
        let root: Any
        do {
            root = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        } catch {
            let start = data.prefix(8).map { (32..<127).contains($0) ? String(UnicodeScalar($0)) : "." }.joined()
            return AppInfoPlistCheck(
                plist: nil,
                problems: [
                    .error(
                        file,
                        "(file)",
                        "is not a property list (it starts with \"\(start)\")",
                        fix: "pass the app's Info.plist, XML or binary (plutil -lint checks one)"
                    )
                ]
            )
        }
        guard let dictionary = root as? [String: Any] else {
            return AppInfoPlistCheck(
                plist: nil,
                problems: [
                    .error(
                        file,
                        "(top level)",
                        "is \(typeName(root)), not a dictionary",
                        fix: "an Info.plist holds a dictionary of keys at its root"
                    )
                ]
            )
        }
        var reader = ValueReader(file: file)
        var plist = AppInfoPlist()
        plist.backgroundAssetsKeys = dictionary.keys.filter { $0.hasPrefix("BA") }.sorted()
        for key in plist.backgroundAssetsKeys where !topLevelKeys.contains(key) {
            reader.unknown(key, near: PackagingManifest.nearMiss(key, in: topLevelKeys))
        }
        plist.appGroupID = reader.string(dictionary, "BAAppGroupID")
        plist.hasManagedAssetPacks = reader.bool(dictionary, "BAHasManagedAssetPacks")
        plist.usesAppleHosting = reader.bool(dictionary, "BAUsesAppleHosting")
        plist.manifestURL = reader.string(dictionary, "BAManifestURL")
        plist.essentialMaxInstallSize = reader.size(dictionary, "BAEssentialMaxInstallSize")
        plist.maxInstallSize = reader.size(dictionary, "BAMaxInstallSize")
        if let value = dictionary["BAInitialDownloadRestrictions"] {
            if let restrictions = value as? [String: Any], !(value is [Any]) {
                let prefix = "BAInitialDownloadRestrictions."
                for key in restrictions.keys.sorted() where !restrictionKeys.contains(key) {
                    reader.unknown(
                        prefix + key,
                        near: PackagingManifest.nearMiss(key, in: restrictionKeys).map { prefix + $0 }
                    )
                }
                plist.initialDownloadRestrictions = InitialDownloadRestrictions(
                    downloadAllowance: reader.size(restrictions, "BADownloadAllowance", in: prefix),
                    essentialDownloadAllowance: reader.size(restrictions, "BAEssentialDownloadAllowance", in: prefix),
                    domainAllowList: reader.strings(restrictions, "BADownloadDomainAllowList", in: prefix)
                )
            } else {
                reader.wrongType("BAInitialDownloadRestrictions", value, expected: "a dictionary")
            }
        }
        return AppInfoPlistCheck(plist: plist, problems: reader.problems)
    }

    /// How a property-list value is named in messages.
    static func typeName(_ value: Any) -> String {
        // A number bridges to Bool, so a Boolean is told by its exact type.
        if type(of: value) == Bool.self { return "a Boolean" }
        return switch value {
        case let text as String: "a string (\"\(text.prefix(40))\")"
        case is Int, is Int64, is UInt64, is Int32: "a number"
        case is Double, is Float: "a real number"
        case is [Any]: "an array"
        case is [String: Any]: "a dictionary"
        case is Data: "data"
        case is Date: "a date"
        default: "a \(type(of: value))"
        }
    }

    /// Reads typed values out of property-list dictionaries, noting a problem for each wrong one.
    private struct ValueReader {
        let file: String
        var problems: [ManifestProblem] = []

        mutating func unknown(_ key: String, near: String?) {
            problems.append(
                .warning(
                    file,
                    key,
                    "is not a Background Assets key this tool knows, and a device ignores keys it does not know",
                    fix: near.map { "did you mean \"\($0)\"?" }
                        ?? "remove it, or check Apple's Info.plist key reference"
                )
            )
        }

        mutating func wrongType(_ key: String, _ value: Any, expected: String) {
            problems.append(
                .error(
                    file,
                    key,
                    "is \(AppInfoPlist.typeName(value)), not \(expected)",
                    fix: "make it \(expected)"
                )
            )
        }

        mutating func string(_ dictionary: [String: Any], _ key: String) -> String? {
            guard let value = dictionary[key] else { return nil }
            guard let text = value as? String else {
                wrongType(key, value, expected: "a string")
                return nil
            }
            return text
        }

        mutating func bool(_ dictionary: [String: Any], _ key: String) -> Bool? {
            guard let value = dictionary[key] else { return nil }
            // A number 1 bridges to `true`, so the type is asked for exactly: Xcode writes <true/>.
            guard type(of: value) == Bool.self, let flag = value as? Bool else {
                wrongType(key, value, expected: "a Boolean (<true/> or <false/>)")
                return nil
            }
            return flag
        }

        mutating func size(_ dictionary: [String: Any], _ key: String, in prefix: String = "") -> Int64? {
            guard let value = dictionary[key] else { return nil }
            guard type(of: value) != Bool.self, let number = Self.integer(value) else {
                wrongType(prefix + key, value, expected: "a whole number of bytes (<integer>)")
                return nil
            }
            guard number >= 0 else {
                problems.append(
                    .error(
                        file,
                        prefix + key,
                        "is \(number), a negative size",
                        fix: "give the size in bytes, 0 or more"
                    )
                )
                return nil
            }
            return number
        }

        mutating func strings(_ dictionary: [String: Any], _ key: String, in prefix: String) -> [String]? {
            guard let value = dictionary[key] else { return nil }
            guard let array = value as? [Any] else {
                wrongType(prefix + key, value, expected: "an array of DNS names")
                return nil
            }
            var names: [String] = []
            for (position, item) in array.enumerated() {
                if let name = item as? String {
                    names.append(name)
                } else {
                    wrongType("\(prefix)\(key)[\(position)]", item, expected: "a string (a DNS name)")
                }
            }
            return names
        }

        static func integer(_ value: Any) -> Int64? {
            switch value {
            case let number as Int: Int64(number)
            case let number as Int64: number
            case let number as UInt64: Int64(exactly: number)
            case let number as Int32: Int64(number)
            default: nil
            }
        }
    }
}

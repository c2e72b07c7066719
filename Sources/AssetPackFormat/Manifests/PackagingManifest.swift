import Foundation
import SystemPackage

#if canImport(Glibc)
    import Glibc
#endif

/// Apple's packaging manifest: the input of `ba-package`, one per asset pack.
///
/// ```json
/// { "assetPackID": "Tutorial",
///   "downloadPolicy": { "essential": { "installationEventTypes": ["firstInstallation"] } },
///   "fileSelectors": [ { "file": "Videos/Introduction.m4v" }, { "directory": "Levels" } ],
///   "platforms": ["iOS"] }
/// ```
///
/// With Xcode 27's keys too: `sourceRoot`, `language`, `userInfo`, and the selectors `filePattern`,
/// `fileExclusion`, `fileSource`/`fileDestination` and `directorySource`/`directoryDestination`.
public struct PackagingManifest: Sendable, Hashable {
    /// The identifier the app uses in code.
    public var assetPackID: String
    /// When the pack is downloaded.
    public var downloadPolicy: DownloadPolicy
    /// Which files of the source root go into the pack, and where.
    public var fileSelectors: [FileSelector]
    /// The platforms the pack is for (`iOS`, `macOS`, `tvOS`, `visionOS`).
    public var platforms: [String]
    /// Where selector paths start, relative to the manifest file's folder (Xcode 27); `nil` for the asset
    /// folder (`serve`, `export`) or `--root` (`package`).
    public var sourceRoot: String?
    /// The language of a localized pack, a BCP-47 tag of language, script and region (OS 27); `nil` for a
    /// pack every language uses.
    public var language: String?
    /// Anything the app wants in the pack's download-manifest entry, copied there as is (Xcode 27).
    public var userInfo: JSONValue?

    /// Creates a manifest.
    public init(
        assetPackID: String,
        downloadPolicy: DownloadPolicy,
        fileSelectors: [FileSelector],
        platforms: [String],
        sourceRoot: String? = nil,
        language: String? = nil,
        userInfo: JSONValue? = nil
    ) {
        self.assetPackID = assetPackID
        self.downloadPolicy = downloadPolicy
        self.fileSelectors = fileSelectors
        self.platforms = platforms
        self.sourceRoot = sourceRoot
        self.language = language
        self.userInfo = userInfo
    }

    /// The platform names `ba-package` accepts.
    public static let knownPlatforms: [String] = ["iOS", "macOS", "tvOS", "visionOS"]

    /// The top-level keys a manifest may have.
    public static let knownKeys: [String] = [
        "assetPackID", "downloadPolicy", "fileSelectors", "language", "platforms", "sourceRoot", "userInfo",
    ]
}

/// One entry of `fileSelectors`.
public enum FileSelector: Sendable, Hashable {
    /// One file, by its path relative to the source root; it keeps that path in the pack.
    case file(String)
    /// A folder and all nested folders, by its path relative to the source root.
    case directory(String)
    /// Every file whose path matches the pattern (Xcode 27 `filePattern`), e.g. `Levels/**/*.json`.
    case filePattern(Glob)
    /// Removes the files that match from what the other selectors chose (Xcode 27 `fileExclusion`),
    /// wherever it stands in the list.
    case fileExclusion(Glob)
    /// One file placed at another path in the pack (Xcode 27 `fileSource` and `fileDestination`).
    case fileMapping(source: String, destination: String)
    /// A folder's contents placed under another path in the pack (Xcode 27 `directorySource` and
    /// `directoryDestination`).
    case directoryMapping(source: String, destination: String)

    /// The selector's key as written in the manifest (the first one, for the two-key selectors).
    public var key: String {
        switch self {
        case .file: "file"
        case .directory: "directory"
        case .filePattern: "filePattern"
        case .fileExclusion: "fileExclusion"
        case .fileMapping: "fileSource"
        case .directoryMapping: "directorySource"
        }
    }
}

extension PackagingManifest {
    /// Reads and validates a packaging manifest file (JSON, `//` and `/* */` comments allowed).
    ///
    /// Checks the keys and values only; selector paths are checked against the files by
    /// ``PackSource/resolve(_:root:boundary:)``.
    /// - Parameter path: The manifest file.
    /// - Returns: The manifest and its warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.notFound`, `.io`, `.invalidJSON`, `.invalidManifest`
    ///   or `.unsafePath`; the message names the file, the key and the fix (the first error, and how many more
    ///   there are).
    public static func load(from path: FilePath) throws -> ParsedManifest {
        try Self.throwing(try check(file: path))
    }

    /// The largest manifest file read: the largest download manifest a client accepts, since `userInfo` is
    /// copied into the pack's entry there as is. A larger file is refused from its size, unread.
    public static let maximumFileSize = DownloadManifest.maximumSize

    /// Reads a manifest file and finds every problem it has, as `ba-mock validate` does.
    ///
    /// The file is opened without waiting and must be a regular file (a symlink is followed, and what it leads
    /// to is checked on the open descriptor) of at most ``maximumFileSize`` bytes: a FIFO, a device or a larger
    /// file is a problem of the manifest, with the fix.
    /// - Throws: ``AssetPackFormatError`` with code `.notFound` or `.io` when the file cannot be read.
    public static func check(file path: FilePath) throws -> ManifestCheck {
        let bytes: [UInt8]
        do {
            switch try FileDescriptor.readSmallRegularFile(path, followingSymlink: true, maximumSize: maximumFileSize) {
            case .bytes(let read): bytes = read
            case .notRegular(let kind):
                var info = stat()
                let linked = lstat(path.string, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
                return unread(
                    path,
                    "is \(linked ? "a symlink to \(kind)" : kind), not a regular file",
                    fix: "remove it from the asset folder (a manifest is a regular file)"
                )
            case .tooLarge:
                return unread(
                    path,
                    "is larger than \(maximumFileSize >> 20) MiB, the most a manifest may have (a download manifest "
                        + "holding its entry would be more than clients accept)",
                    fix: "make it smaller (userInfo is copied into the download manifest as is)"
                )
            }
        } catch let errno as Errno where errno == .noSuchFileOrDirectory {
            throw AssetPackFormatError(
                code: .notFound,
                message:
                    "manifest \(path) does not exist. Fix: check the path, or write one with `ba-mock template > NAME.json`",
                cause: errno
            )
        } catch let errno as Errno {
            throw AssetPackFormatError.io("read manifest", path, errno)
        }
        var checked = check(bytes, file: path.string)
        if path.extension != "json" {
            // Xcode 27's ba-package refuses it too ("path extension isn't “json”").
            checked.problems.insert(
                .error(
                    path.string,
                    "(file)",
                    "has the extension \"\(path.extension ?? "")\", not \"json\", which ba-package refuses",
                    fix: "rename it to \(path.stem ?? "Manifest").json"
                ),
                at: 0
            )
            checked.parsed = nil
        }
        return checked
    }

    /// The check of a manifest file that was not read: one problem, of the file itself.
    private static func unread(_ path: FilePath, _ message: String, fix: String) -> ManifestCheck {
        ManifestCheck(parsed: nil, problems: [.error(path.string, "(file)", message, fix: fix)])
    }

    /// Validates a packaging manifest given as bytes.
    /// - Parameters:
    ///   - bytes: The manifest's text (JSON with optional comments).
    ///   - file: The name used in messages.
    /// - Returns: The manifest and its warnings.
    /// - Throws: ``AssetPackFormatError`` with code `.invalidJSON`, `.invalidManifest` or `.unsafePath`.
    public static func parse(_ bytes: [UInt8], file: String) throws -> ParsedManifest {
        try throwing(check(bytes, file: file))
    }

    /// The manifest of a check, or the error `load` throws for it: the first error, and how many more.
    public static func throwingFirst(_ check: ManifestCheck) throws -> ParsedManifest {
        try throwing(check)
    }

    private static func throwing(_ check: ManifestCheck) throws -> ParsedManifest {
        if let parsed = check.parsed { return parsed }
        let errors = check.problems.filter { $0.severity == .error }
        guard let first = errors.first else { throw AssetPackFormatError(code: .invalidManifest, message: "invalid") }
        var error = first.asError
        if errors.count > 1 {
            error.message +=
                " (and \(errors.count - 1) more: `ba-mock validate` of the same folder lists every problem)"
        }
        throw error
    }

    /// The known key a misspelt one was meant to be: same letters in another case, or one or two edits away.
    package static func nearMiss(_ key: String, in known: [String]) -> String? {
        let lowered = key.lowercased()
        if let same = known.first(where: { $0.lowercased() == lowered }) { return same }
        // A name cut short ("firstInstall"): the one known name it begins.
        let started = known.filter { lowered.count >= 4 && $0.lowercased().hasPrefix(lowered) }
        if started.count == 1 { return started[0] }
        return known.map { ($0, editDistance($0.lowercased(), key.lowercased())) }.filter { $0.1 <= 2 }
            .min { $0.1 < $1.1 }?.0
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.unicodeScalars)
        let b = Array(b.unicodeScalars)
        var row = Array(0...b.count)
        for i in 1...max(1, a.count) where !a.isEmpty {
            var previous = row[0]
            row[0] = i
            for j in stride(from: 1, through: b.count, by: 1) {
                let current = row[j]
                row[j] = min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] == b[j - 1] ? 0 : 1))
                previous = current
            }
        }
        return a.isEmpty ? b.count : row[b.count]
    }
}

import Foundation

/// A problem a manifest has, with where it is and what to do: what `ba-mock validate` lists.
public struct ManifestProblem: Sendable, Hashable, Codable, CustomStringConvertible {
    /// An error stops the pack from being built; a warning does not.
    public enum Severity: String, Sendable, Hashable, Codable {
        case error, warning
    }

    /// The manifest file.
    public var file: String
    /// The key, e.g. `fileSelectors[2].filePattern`; `(top level)` or `(file)` for the document itself.
    public var key: String
    public var severity: Severity
    /// What is wrong, e.g. `is missing`.
    public var message: String
    /// What to do about it.
    public var fix: String?
    /// The pack the manifest is for, when its ID could be read.
    public var pack: String?
    /// The error code this problem maps to, when it is an error.
    var code: AssetPackFormatError.Code = .invalidManifest

    enum CodingKeys: String, CodingKey {
        case file, key, severity, message, fix, pack
    }

    /// Every key, `fix` and `pack` as `null` when absent: one shape wherever a problem is listed (`validate
    /// --json`, the control API, the dashboard).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(file, forKey: .file)
        try container.encode(key, forKey: .key)
        try container.encode(severity, forKey: .severity)
        try container.encode(message, forKey: .message)
        try container.encode(fix, forKey: .fix)
        try container.encode(pack, forKey: .pack)
    }

    /// Creates a problem.
    public init(file: String, key: String, severity: Severity, message: String, fix: String?) {
        self.file = file
        self.key = key
        self.severity = severity
        self.message = message
        self.fix = fix
    }

    /// An error as a problem of `file`: its own problem when it is one, else its message under `key` (a
    /// message that starts with the file's name and holds ". Fix: " is taken apart).
    public init(_ error: AssetPackFormatError, file: String, key: String) {
        if let problem = error.problem {
            self = problem
            return
        }
        var text = error.description
        if text.hasPrefix(file + ": ") { text.removeFirst(file.count + 2) }
        let (message, fix) = Self.split(text)
        self.init(
            file: file,
            key: key,
            severity: .error,
            message: message,
            fix: fix ?? (error.code == .io ? "check that the folder is readable, then run again" : nil)
        )
        code = error.code
    }

    /// A message of this tool as its sentence and its fix (`MESSAGE. Fix: FIX`), `nil` when it has none.
    public static func split(_ text: String) -> (message: String, fix: String?) {
        guard let range = text.range(of: ". Fix: ") else { return (text, nil) }
        return (String(text[..<range.lowerBound]), String(text[range.upperBound...]))
    }

    /// `FILE: KEY: MESSAGE. Fix: FIX`, as every message of this tool reads.
    public var description: String {
        "\(file): \(key): \(message)" + (fix.map { ". Fix: \($0)" } ?? "")
    }

    static func error(
        _ file: String,
        _ key: String,
        _ message: String,
        fix: String?,
        code: AssetPackFormatError.Code = .invalidManifest
    ) -> Self {
        var problem = Self(file: file, key: key, severity: .error, message: message, fix: fix)
        problem.code = code
        return problem
    }

    static func error(
        _ file: String,
        key: String,
        _ message: String,
        fix: String?,
        code: AssetPackFormatError.Code = .invalidManifest
    ) -> Self {
        error(file, key, message, fix: fix, code: code)
    }

    /// A warning about `key` of `file`.
    public static func warning(_ file: String, _ key: String, _ message: String, fix: String? = nil) -> Self {
        Self(file: file, key: key, severity: .warning, message: message, fix: fix)
    }

    /// The problem, said about pack `id`.
    func about(_ id: String?) -> Self {
        var problem = self
        problem.pack = problem.pack ?? id
        return problem
    }

    /// The problem as an error to throw.
    var asError: AssetPackFormatError {
        var error = AssetPackFormatError(code: code, message: description)
        error.problem = self
        return error
    }
}

/// A manifest read from a file, with the warnings its validation raised.
public struct ParsedManifest: Sendable, Hashable {
    /// The validated manifest.
    public var manifest: PackagingManifest
    /// Where it was read from, as given (used in every message about it).
    public var file: String
    /// Things that are allowed here but would fail or surprise elsewhere (App Store Connect, the
    /// merged namespace on the device).
    public var problems: [ManifestProblem]

    /// The warnings, as lines to print.
    public var warnings: [String] { problems.map(\.description) }
}

/// What checking a manifest found: the manifest when it has no error, and every problem.
public struct ManifestCheck: Sendable, Hashable {
    /// The manifest, when it has no error.
    public var parsed: ParsedManifest?
    /// Every error and warning, in the order of the keys.
    public var problems: [ManifestProblem]
    /// The pack's ID when that key is valid, whatever the others are (for duplicate IDs across manifests).
    public var assetPackID: String?
    /// The manifest as far as its ID, selectors and source root are valid (another key may be wrong): enough
    /// to check the files it selects in the same run.
    public var selection: ParsedManifest?
    /// Where each of the selection's selectors stands in the manifest's list (some may be left out as wrong).
    public var selectorIndices: [Int]?

    /// Creates a check.
    public init(
        parsed: ParsedManifest?,
        problems: [ManifestProblem],
        assetPackID: String? = nil,
        selection: ParsedManifest? = nil
    ) {
        self.parsed = parsed
        self.problems = problems
        self.assetPackID = assetPackID ?? parsed?.manifest.assetPackID
        self.selection = selection ?? parsed
    }
}

extension ManifestProblem: Error {}

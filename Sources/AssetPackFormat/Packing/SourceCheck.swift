/// What checking a manifest's selection found.
public struct SourceCheck: Sendable {
    /// The pack's files, when nothing is an error.
    public var source: PackSource?
    /// What the valid selectors chose, errors or not (for the checks across packs); `nil` when the source root
    /// itself is wrong.
    public var selected: PackSource?
    /// The errors as thrown, in the order of the selectors.
    public var errors: [AssetPackFormatError]
    /// Every error and warning of the selection, with file, key and fix (the manifest's own are the
    /// manifest check's; the source's ``PackSource/problems`` has both).
    public var problems: [ManifestProblem]

    init(source: PackSource?, errors: [AssetPackFormatError], problems: [ManifestProblem]) {
        self.source = source
        self.errors = errors
        self.problems = problems
    }

    init(failing errors: [AssetPackFormatError], warnings: [ManifestProblem], file: String) {
        self.init(
            source: nil,
            errors: errors,
            problems: errors.map { PackSource.problem($0, file: file, key: "fileSelectors") } + warnings
        )
    }
}

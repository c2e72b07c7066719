import AssetPackFormat
import AssetPackServer

/// What `ba-mock --json` prints beyond the format's own types (a pack's index, a built pack's summary):
/// shapes of the JSON contract (``JSONOutput``), pinned by `JSONShapeTests`.
public enum MockOutput {
    /// `validate --json` (and `evaluate --json`): every problem of every manifest, whether none is an error
    /// (warnings do not fail the gate), and what was checked.
    public struct Validation: Encodable, Equatable, Sendable {
        /// The manifests, packs and files looked at (valid ones counted).
        public struct Checked: Encodable, Equatable, Sendable {
            public var manifests: Int
            public var packs: Int
            public var files: Int
        }

        public var ok: Bool
        public var problems: [ManifestProblem]
        public var checked: Checked

        public init(_ report: FolderValidation.Report) {
            ok = report.ok
            problems = report.problems
            checked = Checked(manifests: report.manifests, packs: report.packs, files: report.files)
        }
    }
}

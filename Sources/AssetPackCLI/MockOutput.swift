import AssetPackFormat

/// What `ba-mock --json` prints beyond the format's own types (a pack's index, a built pack's summary):
/// shapes of the JSON contract (``JSONOutput``), pinned by `JSONShapeTests`.
public enum MockOutput {
    /// `validate --json` (and `evaluate --json`): every problem of every manifest, and whether none is an
    /// error (warnings do not fail the gate).
    public struct Validation: Encodable, Equatable, Sendable {
        public var ok: Bool
        public var problems: [ManifestProblem]

        public init(problems: [ManifestProblem]) {
            self.problems = problems
            ok = !problems.contains { $0.severity == .error }
        }
    }
}

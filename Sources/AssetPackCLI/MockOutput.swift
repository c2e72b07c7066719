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

extension MockOutput {
    /// `publish`'s report as a table (action, kind, bytes, key) and a closing line.
    public static func publishTable(_ report: Publisher.Report) -> String {
        let verb = report.dryRun ? "would upload" : "uploaded"
        var rows = [["action", "kind", "size", "key"]]
        for step in report.steps {
            let action =
                switch step.action {
                case .upload: report.dryRun ? "upload" : "uploaded"
                case .keep: "kept"
                case .delete: report.dryRun ? "delete" : "deleted"
                }
            rows.append([action, step.kind.rawValue, ByteFormat.string(step.bytes), step.key])
        }
        let uploads = report.steps.filter { $0.action == .upload }.count
        let kept = report.steps.filter { $0.action == .keep }.count
        let deleted = report.steps.filter { $0.action == .delete }.count
        var lines = [Table.render(rows)]
        lines.append(
            "\(verb) \(ByteFormat.count(uploads, "object")) (\(ByteFormat.string(report.uploadedBytes))), kept "
                + "\(ByteFormat.count(kept, "object")) at \(report.endpoint)"
        )
        if deleted > 0 {
            lines.append(
                "\(report.dryRun ? "would delete" : "deleted") \(ByteFormat.count(deleted, "old version")) "
                    + "(\(ByteFormat.string(report.deletedBytes)))"
            )
        }
        let manifest = report.manifestURL.map { "\(report.manifest) (\($0))" } ?? report.manifest
        lines.append(
            report.manifestChanged
                ? "\(report.dryRun ? "would write" : "wrote") \(manifest), last"
                : "\(manifest) unchanged"
        )
        if let check = report.publicCheck {
            lines.append(
                "checked \(check.manifestURL) and the \(ByteFormat.count(check.objectsChecked, "object")) it names"
                    + (check.servesThisRelease
                        ? ""
                        : " (it still serves the manifest before this one: an edge keeps it for its max-age)")
            )
        }
        if report.dryRun { lines.append("dry run: nothing was changed") }
        return lines.joined(separator: "\n")
    }
}

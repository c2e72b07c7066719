import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Validate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract:
            "Check manifests as package would, every problem in one run (`evaluate`, as ba-package names it); with --info-plist, the app's Info.plist too.",
        discussion: """
            Given a folder (default ./Assets), checks every *.json at its top level as `serve` and `export` \
            read them; given manifest files, checks each, with selector paths relative to --root. One run lists \
            every problem: each manifest's keys and values (nested keys too), its selectors against the files, \
            names Apple's file systems refuse (a name over 255 bytes, a path of 1024 bytes or more, two names \
            that differ only in case or Unicode normalization), and across packs: one ID twice, one path in two \
            packs. Nothing is built, except with --info-plist, whose limits need the packs' sizes. Each problem has \
            its file, key, severity, message and fix; exits 1 when any is an error. --json prints one document: \
            {"ok": BOOL, "problems": [{"file", "key", "severity", "message", "fix", "pack"}], \
            "checked": {"manifests", "packs", "files"}}.
            """,
        aliases: ["evaluate"]
    )

    @Argument(help: "An asset folder, or packaging manifests (*.json). (default: ./Assets)")
    var paths: [FilePath] = []

    @Option(help: "For manifest files: the folder selector paths are relative to (the current folder by default).")
    var root: FilePath = "."

    @Flag(help: "One JSON document for CI: ok, and the problems with file, key, severity, message and fix.")
    var json = false

    @OptionGroup var plist: InfoPlistOptions

    func run() async throws {
        let report = try await FolderValidation.run(
            paths.isEmpty ? [FilePath("Assets")] : paths,
            root: root,
            infoPlist: plist.check
        )
        if json {
            Console.out(try JSONOutput.text(MockOutput.Validation(report), pretty: true))
        } else {
            for problem in report.problems { Console.out("\(problem.severity.rawValue): \(problem)") }
            let errors = report.problems.filter { $0.severity == .error }.count
            let warnings = report.problems.count - errors
            // What was looked at, so that a CI log shows the gate saw the packs (valid ones counted).
            let what =
                "checked \(ByteFormat.count(report.manifests, "manifest")), \(ByteFormat.count(report.packs, "pack")), "
                + ByteFormat.count(report.files, "file") + (plist.infoPlist.map { " and \($0)" } ?? "")
            Console.out(
                errors == 0 ? "ok (\(warnings) warning(s)): \(what)" : "\(errors) error(s), \(warnings) warning(s)"
            )
        }
        if !report.ok { throw ExitCode.failure }
    }
}

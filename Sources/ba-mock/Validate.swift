import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Validate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
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
            {"ok": BOOL, "problems": [{"file", "key", "severity", "message", "fix", "pack"}]}.
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
        let targets = paths.isEmpty ? [FilePath("Assets")] : paths
        var problems: [ManifestProblem] = []
        var manifests: [ManifestSet.Member] = []
        var checked = (manifests: 0, packs: 0, files: 0)
        for target in targets {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: target.string, isDirectory: &isFolder), isFolder.boolValue {
                let folder = AssetFolder(root: target)
                do {
                    let scan = try await BlockingIO.shortCall { try folder.scan() }
                    problems += scan.manifestProblems
                    checked.manifests += scan.manifestFiles.count
                    checked.packs += scan.sources.count
                    checked.files += scan.sources.reduce(0) { $0 + $1.files.count }
                } catch let error as AssetPackServerError where error.code == .noAssetFolder {
                    // Said as a problem of the folder, so that --json still prints one document.
                    var (message, fix) = Self.split(error.message)
                    if message.hasPrefix(target.string + " ") { message.removeFirst(target.string.count + 1) }
                    problems.append(
                        ManifestProblem(
                            file: target.string,
                            key: "(folder)",
                            severity: .error,
                            message: message,
                            fix: fix
                        )
                    )
                }
            } else {
                manifests.append(.init(file: target, root: root))
            }
        }
        if !manifests.isEmpty {
            let members = manifests
            let result = try await BlockingIO.shortCall { ManifestSet.check(members) }
            problems += result.problems
            checked.manifests += members.count
            checked.packs += result.sources.count
            checked.files += result.sources.reduce(0) { $0 + $1.files.count }
        }
        problems += try await plist.problems(in: targets)
        let errors = problems.filter { $0.severity == .error }.count
        if json {
            Console.out(try JSONOutput.text(MockOutput.Validation(problems: problems), pretty: true))
        } else {
            for problem in problems { Console.out("\(problem.severity.rawValue): \(problem)") }
            let warnings = problems.count - errors
            // What was looked at, so that a CI log shows the gate saw the packs (valid ones counted).
            let what =
                "checked \(ByteFormat.count(checked.manifests, "manifest")), \(ByteFormat.count(checked.packs, "pack")), "
                + ByteFormat.count(checked.files, "file") + (plist.infoPlist.map { " and \($0)" } ?? "")
            Console.out(
                errors == 0 ? "ok (\(warnings) warning(s)): \(what)" : "\(errors) error(s), \(warnings) warning(s)"
            )
        }
        if errors > 0 { throw ExitCode.failure }
    }

    /// A message as its sentence and its fix.
    static func split(_ message: String) -> (String, String?) {
        guard let range = message.range(of: ". Fix: ") else { return (message, nil) }
        return (String(message[..<range.lowerBound]), String(message[range.upperBound...]))
    }
}

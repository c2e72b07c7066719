import ArgumentParser
import AssetPackCLI
import AssetPackFormat
import AssetPackServer
import Foundation
import SystemPackage

struct Validate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check manifests as package would, without building anything (like `ba-package evaluate`).",
        discussion: """
            Given a folder (default ./Assets), checks every *.json at its top level as `serve` and `export` \
            read them: each manifest's keys and values, its selectors against the files, duplicate IDs and \
            paths two packs share. Given manifest files, checks each, with selector paths relative to --root. \
            Every problem is printed with its file, key, message and fix; exits 1 when any is an error. \
            --json prints one document: {"ok": BOOL, "problems": [{"file", "key", "severity", "message", "fix"}]}.
            """
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
        var manifests: [FilePath] = []
        for target in targets {
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: target.string, isDirectory: &isFolder), isFolder.boolValue {
                let folder = AssetFolder(root: target)
                problems += try await BlockingIO.run { try folder.scan().manifestProblems }
            } else {
                manifests.append(target)
            }
        }
        let root = self.root
        for manifest in manifests {
            problems += try await BlockingIO.run { () -> [ManifestProblem] in
                let checked = try PackagingManifest.check(file: manifest)
                guard let parsed = checked.parsed else { return checked.problems }
                do {
                    let source = try PackSource.resolve(parsed, root: root)
                    return source.warnings.dropFirst(parsed.problems.count).map {
                        ManifestProblem(
                            file: manifest.string,
                            key: "fileSelectors",
                            severity: .warning,
                            message: $0,
                            fix: nil
                        )
                    } + checked.problems
                } catch let error as AssetPackFormatError {
                    return checked.problems + [
                        ManifestProblem(
                            file: manifest.string,
                            key: "fileSelectors",
                            severity: .error,
                            message: error.message,
                            fix: nil
                        )
                    ]
                }
            }
        }
        problems += try await plist.problems(in: targets)
        let errors = problems.filter { $0.severity == .error }.count
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
            struct Report: Encodable {
                var ok: Bool
                var problems: [ManifestProblem]
            }
            Console.out(
                String(decoding: try encoder.encode(Report(ok: errors == 0, problems: problems)), as: UTF8.self)
            )
        } else {
            for problem in problems { Console.out("\(problem.severity.rawValue): \(problem)") }
            let warnings = problems.count - errors
            Console.out(errors == 0 ? "ok (\(warnings) warning(s))" : "\(errors) error(s), \(warnings) warning(s)")
        }
        if errors > 0 { throw ExitCode.failure }
    }
}

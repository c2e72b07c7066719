import Foundation
import SystemPackage
import TestSupport
import Testing

/// `ba-mock validate` as a CI gate: one run lists every problem of every manifest and across packs.
@Suite("ba-mock validate end to end", .serialized)
struct ValidateEndToEndTests {
    let tool = builtProduct("ba-mock")

    struct Problem: Decodable, Hashable, CustomStringConvertible {
        var file: String
        var key: String
        var severity: String
        var message: String
        var fix: String?
        var description: String { "\(severity) \(file) \(key): \(message) | fix: \(fix ?? "-")" }
    }

    struct Report: Decodable {
        var ok: Bool
        var problems: [Problem]
    }

    /// A game's folder holding every kind of mistake people make, each once.
    func brokenFolder(_ scratch: Scratch) throws -> FilePath {
        try scratch.write("game/Levels/World1/map.json", "{}")
        try scratch.write("game/Levels/World1/Readme.txt", "a")
        try scratch.write("game/Levels/World1/README.txt", "b")
        try scratch.write("game/Core/config.json", "{}")
        try scratch.write("game/Core/Caf\u{E9}.txt", "nfc")
        try scratch.write("game/Core/Cafe\u{301}.txt", "nfd")
        try scratch.write("game/Voice/line.txt", "hello")
        // Platforms: two wrong; a nested unknown key; a trailing comma; a missing file and a path that climbs.
        try scratch.write(
            "game/Core.json",
            """
            {
              "assetPackID": "Core",
              "downloadPolicy": { "prefetch": { "installationEventTypes": ["firstInstallation"], "priority": 1 } },
              "fileSelectors": [ { "directory": "Core" }, { "file": "Missing.txt" }, { "file": "../outside.txt" } ],
              "platforms": ["iOS", "Android", "iPadOS"],
            }
            """
        )
        // A nested typo, and a top-level one.
        try scratch.write(
            "game/Typo.json",
            """
            {
              "assetPackID": "Typo",
              "downloadPolicy": { "essential": { "instalationEventTypes": ["firstInstallation"] } },
              "fileSelectors": [ { "directory": "Voice" } ],
              "platfroms": ["iOS"]
            }
            """
        )
        // Two packs with one ID, both selecting World1: a duplicate ID (one of them also has a bad platform).
        try scratch.write(
            "game/World1.json",
            """
            {"assetPackID": "World1", "downloadPolicy": {"onDemand": {}},
             "fileSelectors": [{"directory": "Levels/World1"}], "platforms": ["macOS"]}
            """
        )
        try scratch.write(
            "game/Dup.json",
            """
            {"assetPackID": "World1", "downloadPolicy": {"onDemand": {}},
             "fileSelectors": [{"file": "Levels/World1/map.json"}], "platforms": ["watchOS"]}
            """
        )
        // The same path in two packs; names too long for Apple's file systems.
        let long = String(repeating: "n", count: 300)
        let deep = (0..<5).map { _ in String(repeating: "d", count: 220) }.joined(separator: "/")
        try scratch.write(
            "game/Names.json",
            """
            {"assetPackID": "Names", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS"],
             "fileSelectors": [{"file": "Levels/World1/map.json"},
                               {"fileSource": "Core/config.json", "fileDestination": "\(long).json"},
                               {"fileSource": "Voice/line.txt", "fileDestination": "\(deep)/line.txt"}]}
            """
        )
        try scratch.write("game/Voice-en.jsonc", "{}")
        return scratch.root.appending("game")
    }

    @Test func oneRunListsEveryProblemWithItsKeyAndFix() throws {
        let scratch = try Scratch()
        let folder = try brokenFolder(scratch)
        let run = try runTool(tool, ["validate", folder.string, "--json"], timeout: 60)
        #expect(run.status == 1, "\(run.stderr)")
        let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
        #expect(!report.ok)
        let file = { (name: String) in folder.appending(name).string }
        let found = Set(report.problems.map { "\($0.severity) \($0.file) \($0.key)" })
        let expected: Set<String> = [
            "error \(file("Core.json")) downloadPolicy.prefetch.priority",
            "warning \(file("Core.json")) (file)",  // the trailing comma
            "error \(file("Core.json")) platforms[1]",
            "error \(file("Core.json")) platforms[2]",
            "error \(file("Core.json")) fileSelectors[1].file",
            "error \(file("Core.json")) fileSelectors[2].file",
            "warning \(file("Core.json")) fileSelectors[0].directory",  // Café twice
            "error \(file("Typo.json")) downloadPolicy.essential.instalationEventTypes",
            "error \(file("Typo.json")) platfroms",
            "error \(file("Dup.json")) platforms[0]",
            "error \(file("World1.json")) assetPackID",  // World1 is also Dup.json's ID: neither is built
            "error \(file("Dup.json")) assetPackID",
            "error \(file("World1.json")) fileSelectors[0].directory",  // Readme.txt and README.txt on macOS
            "error \(file("Names.json")) fileSelectors[1].fileDestination",  // a 305-byte name
            "error \(file("Names.json")) fileSelectors[2].fileDestination",  // a 1 113-byte path
            "warning \(file("Names.json")) (packs)",  // map.json in Names and World1 (Dup.json)
            "warning \(file("Voice-en.jsonc")) (file)",
        ]
        #expect(found == expected, "\(report.problems.map(\.description).joined(separator: "\n"))")
        for problem in report.problems {
            #expect(problem.fix?.isEmpty == false, "no fix: \(problem)")
            #expect(!problem.message.contains(problem.file), "the message repeats the file: \(problem)")
            #expect(!problem.message.contains("Fix:"), "the fix is inside the message: \(problem)")
        }
        let typo = report.problems.first { $0.key == "downloadPolicy.essential.instalationEventTypes" }
        #expect(typo?.fix == "did you mean \"installationEventTypes\"?")
        #expect(!report.problems.contains { $0.key == "platforms" && $0.file == file("Typo.json") })
        let text = try runTool(tool, ["validate", folder.string], timeout: 60)
        #expect(text.status == 1)
        #expect(text.stdout.hasSuffix("\(expected.count - 4) error(s), 4 warning(s)\n"), "\(text.stdout)")
    }

    @Test func manifestFilesAreCheckedAcrossPacksToo() throws {
        let scratch = try Scratch()
        let folder = try brokenFolder(scratch)
        let run = try runTool(
            tool,
            ["validate", "World1.json", "Names.json", "--json"],
            directory: folder.string,
            timeout: 60
        )
        let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
        #expect(report.problems.contains { $0.key == "(packs)" && $0.message.contains("Levels/World1/map.json") })
        let duplicate = try runTool(tool, ["validate", "Dup.json", "World1.json"], directory: folder.string)
        #expect(duplicate.status == 1)
        #expect(duplicate.stdout.contains("World1.json: assetPackID: \"World1\" is also the ID in Dup.json"))
    }

    /// What an attack run found hiding behind another problem, or said wrong.
    @Test func nothingHidesBehindAnotherProblem() throws {
        let scratch = try Scratch()
        try scratch.write("t/Docs/a.txt", "a")
        try scratch.write("t/Other/x.txt", "x")
        try scratch.write("t/n/good.txt", "g")
        try scratch.write("t/n/Caf\u{E9}.txt", "nfc")
        try scratch.write("t/n/Cafe\u{301}.txt", "nfd")
        let folder = scratch.root.appending("t")
        // A name that is not UTF-8 (0xFF), and a link out of the folder: the walk goes on past each.
        let badName = Array(folder.appending("n").string.utf8) + Array("/bad".utf8) + [0xFF, 0]
        let made = badName.map { CChar(bitPattern: $0) }.withUnsafeBufferPointer {
            open($0.baseAddress!, O_CREAT | O_WRONLY, 0o644)
        }
        #expect(made >= 0)
        close(made)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appending("n/out.txt").string,
            withDestinationPath: "/etc/hostname"
        )
        // A misspelt ID does not hide the selectors' problems; duplicate keys are an error.
        try scratch.write(
            "t/A.json",
            #"{"assetPackId": "A", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "missing"}], "platforms": ["iOS"], "platforms": ["iPadOS"]}"#
        )
        try scratch.write(
            "t/N.json",
            #"{"assetPackID": "N", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "n"}], "platforms": ["iOS"]}"#
        )
        // Two IDs alike, and two other packs sharing a path: the duplicate does not hide the collision.
        try scratch.write(
            "t/Ios.json",
            #"{"assetPackID": "Ios", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Docs"}], "platforms": ["iOS"]}"#
        )
        try scratch.write(
            "t/Mac.json",
            #"{"assetPackID": "Mac", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Docs"}], "platforms": ["macOS"]}"#
        )
        try scratch.write(
            "t/Dup1.json",
            #"{"assetPackID": "Ios", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"file": "Other/x.txt"}], "platforms": ["iOS"]}"#
        )
        try scratch.write("t/Broken.json", #"{"assetPackID": "B","#)
        let run = try runTool(tool, ["validate", folder.string, "--json"], timeout: 60)
        let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
        let found = report.problems.map { "\($0.severity) \(FilePath($0.file).lastComponent?.string ?? "") \($0.key)" }
        #expect(
            Set(found) == [
                "error A.json assetPackId", "error A.json platforms", "error A.json fileSelectors[0].directory",
                "error N.json fileSelectors[0].directory",  // not UTF-8
                "warning N.json fileSelectors[0].directory",  // Café twice
                "error Ios.json assetPackID", "error Dup1.json assetPackID", "warning Ios.json (packs)",
                "error Broken.json (file)",
            ],
            "\(report.problems.map(\.description).joined(separator: "\n"))"
        )
        #expect(found.filter { $0 == "error N.json fileSelectors[0].directory" }.count == 2, "the link out too")
        let broken = report.problems.first { $0.file.hasSuffix("Broken.json") }
        #expect(
            broken?.message.hasPrefix("is not valid JSON: line 1, column 21: Unexpected end of file") == true,
            "\(String(describing: broken))"
        )

        // The same file twice is one manifest; an empty folder is one problem, in JSON.
        let twice = try runTool(tool, ["validate", "Ios.json", "./Ios.json", "--root", "."], directory: folder.string)
        #expect(twice.status == 0, "\(twice.stdout)")
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("empty").string,
            withIntermediateDirectories: true
        )
        try scratch.write("empty/Voice.jsonc", "{}")
        let empty = try runTool(tool, ["validate", scratch.root.appending("empty").string, "--json"])
        #expect(empty.status == 1)
        let emptyReport = try JSONDecoder().decode(Report.self, from: Data(empty.stdout.utf8))
        #expect(emptyReport.problems.map(\.key) == ["(folder)"])
        #expect(emptyReport.problems.first?.message.contains("Voice.jsonc not read") == true, "\(emptyReport.problems)")
    }

    /// Manifest files given from another folder: their selector paths start at --root (the current folder),
    /// as ba-package's do; a path that is there beside the manifest says to pass --root with that folder.
    @Test func aManifestCheckedFromAnotherFolderSaysToPassRoot() throws {
        let scratch = try Scratch()
        _ = try scratch.copySampleAssets()
        let run = try runTool(tool, ["validate", "Assets/Tutorial.json"], directory: scratch.root.string)
        #expect(run.status == 1)
        #expect(run.stdout.contains("\"Tutorial\" does not exist"), "\(run.stdout)")
        #expect(
            run.stdout.contains("Fix: pass --root Assets (it is there, beside the manifest)"),
            "\(run.stdout)"
        )
        let rooted = try runTool(
            tool,
            ["validate", "Assets/Tutorial.json", "--root", "Assets"],
            directory: scratch.root.string
        )
        #expect(rooted.status == 0, "\(rooted.stdout)")
    }

    /// A selector path that does not exist gets the near miss in its folder, as a misspelt key does.
    @Test func aMissingSelectorPathGetsItsNearMiss() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        try scratch.write(
            "Assets/Typo.json",
            """
            {"assetPackID": "Typo", "downloadPolicy": {"onDemand": {}}, "platforms": ["iOS"],
             "fileSelectors": [{"directory": "Level"}, {"file": "Levels/World1/wrld.json"}, {"file": "Nothing/x"}]}
            """
        )
        let run = try runTool(tool, ["validate", folder.string, "--json"])
        #expect(run.status == 1)
        let report = try JSONDecoder().decode(Report.self, from: Data(run.stdout.utf8))
        let fixes = Dictionary(
            report.problems.filter { $0.file.hasSuffix("Typo.json") }.map { ($0.key, $0.fix ?? "") },
            uniquingKeysWith: { first, _ in first }
        )
        #expect(fixes["fileSelectors[0].directory"] == "did you mean \"Levels\"?", "\(report.problems)")
        #expect(fixes["fileSelectors[1].file"] == "did you mean \"Levels/World1/world.json\"?", "\(report.problems)")
        #expect(fixes["fileSelectors[2].file"] == "check spelling and case, or the folder", "\(report.problems)")
    }

    /// `ok` says what was checked, so that a CI log shows the gate looked at something.
    @Test func okSaysWhatWasChecked() throws {
        let scratch = try Scratch()
        let folder = try scratch.copySampleAssets()
        var files = 0
        for path in try FileManager.default.subpathsOfDirectory(atPath: folder.string)
        where !path.hasPrefix(".") && path.contains("/") {
            let type = try FileManager.default.attributesOfItem(atPath: folder.appending(path).string)[.type]
            if type as? FileAttributeType == .typeRegular { files += 1 }
        }
        let run = try runTool(tool, ["validate", folder.string])
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout == "ok (0 warning(s)): checked 3 manifests, 3 packs, \(files) files\n")
        let one = try runTool(tool, ["validate", "Tutorial.json"], directory: folder.string)
        #expect(one.stdout.hasPrefix("ok (0 warning(s)): checked 1 manifest, 1 pack, "), "\(one.stdout)")
    }

    @Test func evaluateIsValidateUnderApplesName() throws {
        let scratch = try Scratch()
        let folder = try brokenFolder(scratch)
        let validate = try runTool(tool, ["validate", "Typo.json"], directory: folder.string)
        let evaluate = try runTool(tool, ["evaluate", "Typo.json"], directory: folder.string)
        #expect(evaluate.status == 1)
        #expect(evaluate.stdout == validate.stdout)
        #expect(evaluate.stdout.contains("platfroms"))
    }
}

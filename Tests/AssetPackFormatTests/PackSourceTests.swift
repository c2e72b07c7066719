import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("Resolving selectors against an asset folder")
struct PackSourceTests {
    func resolve(_ scratch: Scratch, selectors: String) throws -> PackSource {
        let text = """
            {"assetPackID": "Pack", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [\(selectors)],
             "platforms": ["iOS"]}
            """
        let parsed = try PackagingManifest.parse(Array(text.utf8), file: "Pack.json")
        return try PackSource.resolve(parsed, root: scratch.root)
    }

    @Test func directorySelectorIsRecursiveAndDeduplicated() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let source = try resolve(
            scratch,
            selectors:
                #"{"directory": "Levels"}, {"file": "Levels/World1/level1.json"}, {"file": "./Videos//Intro.m4v"}"#
        )
        #expect(
            source.files.map(\.path) == [
                "Levels/World1/deep/nested/tiles.bin", "Levels/World1/level1.json", "Levels/World2/level1.json",
                "Videos/Intro.m4v",
            ]
        )
    }

    @Test func missingFileIsNamed() throws {
        let scratch = try Scratch()
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(scratch, selectors: #"{"file": "Videos/Missing.m4v"}"#)
        }
        #expect(error?.code == .notFound)
        #expect(error?.message.contains("fileSelectors[0].file") == true)
        #expect(error?.message.contains("Videos/Missing.m4v") == true)
    }

    @Test func fileSelectorOnAFolderSaysUseDirectory() throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(scratch, selectors: #"{"file": "Levels"}"#)
        }
        #expect(error?.message.contains(#"use {"directory": "Levels"}"#) == true)
    }

    @Test func symlinkLeavingTheFolderIsRefused() throws {
        let scratch = try Scratch()
        try scratch.write("Levels/ok.json", "{}")
        let outside = try Scratch()
        let secret = try outside.write("secret.txt", "secret")
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("Levels/secret.txt").string,
            withDestinationPath: secret.string
        )
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(scratch, selectors: #"{"directory": "Levels"}"#)
        }
        #expect(error?.code == .unsafePath)
        #expect(error?.message.contains("outside the asset folder") == true)
        let direct = #expect(throws: AssetPackFormatError.self) {
            try resolve(scratch, selectors: #"{"file": "Levels/secret.txt"}"#)
        }
        #expect(direct?.code == .unsafePath)
    }

    @Test func symlinkInsideTheFolderIsReadThrough() throws {
        let scratch = try Scratch()
        try scratch.write("Shared/logo.png", "png")
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("Pack").string,
            withIntermediateDirectories: true
        )
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("Pack/logo.png").string,
            withDestinationPath: "../Shared/logo.png"
        )
        let source = try resolve(scratch, selectors: #"{"directory": "Pack"}"#)
        #expect(source.files.map(\.path) == ["Pack/logo.png"])
        #expect(source.files.first?.size == 3)
    }

    @Test func folderWithNoFilesIsAnError() throws {
        let scratch = try Scratch()
        try FileManager.default.createDirectory(
            atPath: scratch.root.appending("Empty").string,
            withIntermediateDirectories: true
        )
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(scratch, selectors: #"{"directory": "Empty"}"#)
        }
        #expect(error?.message.contains("select no files") == true)
    }

    /// Each folder's entries are looked at from the open folder, which is closed before a walk below it and
    /// opened again after: every file after a subfolder (in byte order) is still found, at every level of a
    /// tree 60 folders deep, names with spaces, dots and non-ASCII text among them, a link to a file inside too.
    @Test func filesAfterEverySubfolderAreFoundAtEveryDepth() throws {
        let scratch = try Scratch()
        var expected: [String] = []
        var folder = "Deep"
        for level in 0..<60 {
            for name in ["a \(level).bin", "b", "Über 🎮.json", "z.txt"] {
                try scratch.write("\(folder)/\(name)", "\(level) \(name)")
                expected.append("\(folder)/\(name)")
            }
            folder += "/b.d"  // between "b" and "z.txt" in byte order: files on both sides of it
        }
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("Deep/b.d/link").string,
            withDestinationPath: scratch.root.appending("Deep/z.txt").string
        )
        expected.append("Deep/b.d/link")
        let source = try resolve(scratch, selectors: #"{"directory": "Deep"}"#)
        let missing = expected.filter { path in !source.files.contains { $0.path == path } }
        #expect(missing.isEmpty, "not found: \(missing.count), first \(missing.first ?? "")")
        #expect(source.files.map(\.path) == expected.sorted { PathKey($0) < PathKey($1) })
    }
}

/// The state folder holds what no client may see (built packs of other versions, and once the TLS CA's key):
/// no selector reaches it, by any spelling of a path or a source root, or through a symlink.
@Suite("The state folder is never selectable")
struct StateFolderSelectionTests {
    func resolve(_ scratch: Scratch, sourceRoot: String?, selector: String) throws -> PackSource {
        let root = sourceRoot.map { #""sourceRoot": "\#($0)", "# } ?? ""
        let text = """
            {"assetPackID": "Leak", "downloadPolicy": {"onDemand": {}}, \(root)"fileSelectors": [\(selector)],
             "platforms": ["iOS"]}
            """
        let parsed = try PackagingManifest.parse(Array(text.utf8), file: scratch.root.appending("Leak.json").string)
        return try PackSource.resolve(parsed, root: scratch.root, boundary: scratch.root)
    }

    func withStateFolder(_ body: (Scratch) throws -> Void) throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write(".ba-mock/tls/ca-key.pem", "-----BEGIN PRIVATE KEY-----")
        try scratch.write("d/keep.txt", "x")
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("state-link").string,
            withDestinationPath: ".ba-mock"
        )
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("d/key.pem").string,
            withDestinationPath: "../.ba-mock/tls/ca-key.pem"
        )
        try body(scratch)
    }

    @Test(arguments: [".ba-mock", "./.ba-mock", "d/../.ba-mock", ".ba-mock/", ".ba-mock/tls", "state-link"])
    func aSourceRootInsideTheStateFolderIsRefused(_ sourceRoot: String) throws {
        try withStateFolder { scratch in
            let error = #expect(throws: AssetPackFormatError.self) {
                try resolve(scratch, sourceRoot: sourceRoot, selector: #"{"filePattern": "**"}"#)
            }
            #expect(error?.code == .unsafePath, "\(error?.description ?? "")")
            #expect(error?.message.contains(".ba-mock") == true, "\(error?.message ?? "")")
        }
    }

    @Test(arguments: [
        #"{"directory": "state-link/tls"}"#, #"{"file": "state-link/tls/ca-key.pem"}"#, #"{"file": "d/key.pem"}"#,
        #"{"fileSource": "state-link/tls/ca-key.pem", "fileDestination": "a.pem"}"#,
    ])
    func aSelectorThatReachesTheStateFolderThroughALinkIsRefused(_ selector: String) throws {
        try withStateFolder { scratch in
            let error = #expect(throws: AssetPackFormatError.self) {
                try resolve(scratch, sourceRoot: nil, selector: selector)
            }
            #expect(error?.code == .unsafePath, "\(error?.description ?? "")")
            #expect(error?.message.contains(".ba-mock") == true, "\(error?.message ?? "")")
        }
    }

    @Test func aWalkOfTheWholeFolderSkipsTheStateFolderWhateverTheRoot() throws {
        try withStateFolder { scratch in
            // The link to a file inside the state folder is refused; without it, the walk leaves the state out.
            try FileManager.default.removeItem(atPath: scratch.root.appending("d/key.pem").string)
            try FileManager.default.removeItem(atPath: scratch.root.appending("state-link").string)
            for root in [nil, ".", "./", "d/.."] {
                let source = try resolve(
                    scratch,
                    sourceRoot: root,
                    selector: #"{"filePattern": "**"}, {"fileExclusion": "*.json"}"#
                )
                #expect(!source.files.contains { $0.source.string.contains(".ba-mock") }, "\(root ?? "-")")
                #expect(source.files.contains { $0.path == "d/keep.txt" })
            }
        }
    }
}

/// Names Apple's file systems refuse or merge, and every selector's problem in one check.
@Suite("Pack names on Apple's file systems")
struct PackNameRuleTests {
    func check(_ scratch: Scratch, platforms: String = #"["iOS"]"#, selectors: String) throws -> SourceCheck {
        let text = """
            {"assetPackID": "Pack", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [\(selectors)],
             "platforms": \(platforms)}
            """
        return PackSource.check(try PackagingManifest.parse(Array(text.utf8), file: "Pack.json"), root: scratch.root)
    }

    @Test func caseTwinsAreAnErrorForMacOSAndAWarningElsewhere() throws {
        let scratch = try Scratch()
        try scratch.write("Docs/Readme.txt", "a")
        try scratch.write("Docs/README.txt", "b")
        try scratch.write("Docs/Other.txt", "c")
        let iOS = try check(scratch, selectors: #"{"directory": "Docs"}"#)
        #expect(iOS.source?.files.count == 3)
        #expect(iOS.problems.map(\.severity) == [.warning])
        #expect(iOS.problems.first?.message.contains("\"Docs/README.txt\" and \"Docs/Readme.txt\"") == true)
        let macOS = try check(scratch, platforms: #"["iOS", "macOS"]"#, selectors: #"{"directory": "Docs"}"#)
        #expect(macOS.source == nil)
        #expect(macOS.problems.map(\.severity) == [.error])
        #expect(macOS.problems.first?.key == "fileSelectors[0].directory")
        #expect(macOS.selected?.files.count == 3)
    }

    @Test func pathsNearAndOverPathMaxAndLongNames() throws {
        let scratch = try Scratch()
        try scratch.write("a.txt", "a")
        let near =
            String(repeating: "n", count: 200) + "/" + String(repeating: "m", count: 200) + "/"
            + String(repeating: "o", count: 250) + "/" + String(repeating: "p", count: 240)  // 893 bytes
        let over = near.dropLast(240) + String(repeating: "z", count: 240) + "/" + String(repeating: "q", count: 140)
        let checked = try check(
            scratch,
            selectors: """
                {"fileSource": "a.txt", "fileDestination": "\(near)"},
                {"fileSource": "a.txt", "fileDestination": "\(over)"},
                {"fileSource": "a.txt", "fileDestination": "x/\(String(repeating: "é", count: 128))"}
                """
        )
        #expect(checked.source == nil)
        #expect(
            checked.problems.map { "\($0.severity) \($0.key)" } == [
                "error fileSelectors[1].fileDestination", "error fileSelectors[2].fileDestination",
                "warning fileSelectors[0].fileDestination",
            ],
            "\(checked.problems)"
        )
        #expect(checked.problems[1].message.contains("is 256 bytes; APFS holds names of at most 255 bytes"))
    }

    @Test func everySelectorProblemIsFoundAndResolveThrowsTheFirstWithACount() throws {
        let scratch = try Scratch()
        try scratch.write("Levels/a.json", "{}")
        let selectors = #"{"file": "Missing.txt"}, {"directory": "Levels"}, {"directory": "Gone"}"#
        let checked = try check(scratch, selectors: selectors)
        #expect(checked.problems.map(\.key) == ["fileSelectors[0].file", "fileSelectors[2].directory"])
        #expect(checked.problems.allSatisfy { $0.fix != nil && !$0.message.contains("Pack.json") })
        #expect(checked.selected?.files.map(\.path) == ["Levels/a.json"])
        let text = """
            {"assetPackID": "Pack", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [\(selectors)],
             "platforms": ["iOS"]}
            """
        let error = #expect(throws: AssetPackFormatError.self) {
            try PackSource.resolve(try PackagingManifest.parse(Array(text.utf8), file: "Pack.json"), root: scratch.root)
        }
        #expect(error?.code == .notFound)
        #expect(error?.message.hasPrefix("Pack.json: fileSelectors[0].file: \"Missing.txt\" does not exist") == true)
        let more = "(and 1 more: `ba-mock validate` of the same folder lists every problem)"
        #expect(error?.message.hasSuffix(more) == true)
    }
}

import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@Suite("Xcode 27 selectors and source roots")
struct SelectorTests {
    /// A source tree with levels, drafts, art and voice-over.
    func makeTree(_ scratch: Scratch, under folder: String = "Assets") throws {
        for path in [
            "Levels/a.json", "Levels/World1/b.json", "Levels/World1/deep/c.json", "Levels/World1/draft-d.json",
            "Levels/notes.txt", "Art/Logo.png", "Voice/fr/intro.ogg", "Voice/fr/outro.ogg", "Voice/en/intro.ogg",
        ] {
            try scratch.write("\(folder)/\(path)", "content of \(path)")
        }
    }

    func resolve(
        _ scratch: Scratch,
        _ selectors: String,
        extra: String = "",
        file: String = "Assets/Pack.json",
        root: String = "Assets",
        boundary: String? = nil
    ) throws -> PackSource {
        let text = """
            {"assetPackID": "Pack", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [\(selectors)],
             \(extra) "platforms": ["iOS"]}
            """
        let manifest = try scratch.write(file, text)
        let parsed = try PackagingManifest.load(from: manifest)
        return try PackSource.resolve(
            parsed,
            root: scratch.root.appending(root),
            boundary: boundary.map { scratch.root.appending($0) }
        )
    }

    @Test(arguments: [
        ("*.json", "a.json", true), ("*.json", "World1/b.json", false), ("**/*.json", "World1/deep/c.json", true),
        ("**/*.json", "a.json", true), ("Levels/**", "Levels/x/y", true), ("Levels/**/c.json", "Levels/c.json", true),
        ("?.json", "a.json", true), ("?.json", "ab.json", false), ("[a-c].json", "b.json", true),
        ("[!a-c].json", "b.json", false), ("draft-*", "draft-x", true), ("*\\*", "a*", true), ("*\\*", "ab", false),
        ("é*", "e\u{301}x", false), ("é*", "éx", true),
    ])
    func globsMatchAsTheyRead(_ pattern: String, _ path: String, _ expected: Bool) throws {
        #expect(try Glob(pattern).matches(path) == expected, "\(pattern) vs \(path)")
    }

    @Test func patternsAndExclusionsPickTheFilesWhereverTheExclusionStands() throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        let source = try resolve(scratch, #"{"fileExclusion": "**/draft-*"}, {"filePattern": "Levels/**/*.json"}"#)
        #expect(source.files.map(\.path) == ["Levels/World1/b.json", "Levels/World1/deep/c.json", "Levels/a.json"])
        let nothing = try resolve(scratch, #"{"filePattern": "**/*.psd"}, {"file": "Art/Logo.png"}"#)
        #expect(nothing.warnings.contains { $0.contains("\"**/*.psd\" matches no file") })
    }

    /// `{"directory": "."}` is refused because it would pack the manifests; a pattern that reaches them is
    /// the same mistake and gets the same refusal, while one that reaches no manifest is fine.
    @Test(arguments: ["**", "*.json", "**/*.json", "*"])
    func aPatternThatSelectsTheManifestsIsRefusedAsTheWholeFolderIs(_ pattern: String) throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        try scratch.write("Assets/Other.json", "{}")
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(scratch, #"{"filePattern": "\#(pattern)"}"#)
        }
        #expect(error?.code == .unsafePath)
        let message = error?.message ?? ""
        #expect(message.contains("fileSelectors[0].filePattern"), "\(message)")
        #expect(message.contains("which would pack the manifests too"), "\(message)")
        #expect(message.contains("Other.json") && message.contains("Pack.json"), "\(message)")
        #expect(message.contains("Fix:"), "\(message)")
        // The same pattern under a source root that holds no manifest selects what it matches.
        let rooted = try resolve(
            scratch,
            #"{"filePattern": "\#(pattern)"}"#,
            extra: #""sourceRoot": "Levels","#,
            boundary: "Assets"
        )
        #expect(rooted.files.map(\.path).contains("a.json"))
        // A narrower pattern beside the manifests is fine, and so is one whose manifests are excluded.
        #expect(try resolve(scratch, #"{"filePattern": "Levels/**"}"#).files.count == 5)
        guard pattern.hasPrefix("**") else { return }
        let excluded = try resolve(scratch, #"{"filePattern": "\#(pattern)"}, {"fileExclusion": "*.json"}"#)
        #expect(!excluded.files.contains { $0.path.hasSuffix("Pack.json") || $0.path.hasSuffix("Other.json") })
    }

    @Test func mappingsPlaceFilesAndFoldersElsewhereInThePack() throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        let source = try resolve(
            scratch,
            #"{"fileSource": "Art/Logo.png", "fileDestination": "Images/logo.png"}, {"directorySource": "Voice/fr", "directoryDestination": "Voice"}"#
        )
        #expect(source.files.map(\.path) == ["Images/logo.png", "Voice/intro.ogg", "Voice/outro.ogg"])
        #expect(source.files.first?.source.string.hasSuffix("Assets/Art/Logo.png") == true)

        // The pack holds the files at their destinations, with their bytes.
        let pack = scratch.root.appending("Pack.pack")
        _ = try PackBuilder.build(source, to: pack)
        let out = scratch.root.appending("out")
        try FileManager.default.createDirectory(atPath: out.string, withIntermediateDirectories: true)
        let index = try PackArchiveReader.extract(pack, into: out)
        #expect(index.files.map(\.path) == ["Images/logo.png", "Voice/intro.ogg", "Voice/outro.ogg"])
        #expect(try scratch.read(out.appending("Voice/intro.ogg")) == Data("content of Voice/fr/intro.ogg".utf8))

        // An exclusion matches a file by its path in the source root (outro) or in the pack (intro).
        let excluded = try resolve(
            scratch,
            #"{"directorySource": "Voice/fr", "directoryDestination": "Voice"}, {"fileExclusion": "Voice/fr/outro.ogg"}, {"file": "Art/Logo.png"}"#
        )
        #expect(excluded.files.map(\.path) == ["Art/Logo.png", "Voice/intro.ogg"])
        let empty = #expect(throws: AssetPackFormatError.self) {
            try resolve(
                scratch,
                #"{"directorySource": "Voice/fr", "directoryDestination": "Voice"}, {"fileExclusion": "Voice/fr/outro.ogg"}, {"fileExclusion": "Voice/intro.ogg"}"#
            )
        }
        #expect(empty?.message.contains("select no files once the exclusions are applied") == true)
    }

    @Test func twoFilesAtOneDestinationAreAnError() throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(
                scratch,
                #"{"directorySource": "Voice/fr", "directoryDestination": "Voice"}, {"directorySource": "Voice/en", "directoryDestination": "Voice"}"#
            )
        }
        #expect(error?.code == .invalidManifest)
        #expect(
            error?.message.contains(
                "places Voice/en/intro.ogg at \"Voice/intro.ogg\", where fileSelectors[0].directorySource already placed Voice/fr/intro.ogg"
            ) == true,
            "\(error?.message ?? "")"
        )
        // The same file chosen twice is one file.
        let twice = try resolve(scratch, #"{"file": "Art/Logo.png"}, {"filePattern": "Art/*"}"#)
        #expect(twice.files.map(\.path) == ["Art/Logo.png"])
    }

    @Test func aPathThatIsBothAFileAndAFolderIsAnError() throws {
        let scratch = try Scratch()
        try makeTree(scratch)
        let error = #expect(throws: AssetPackFormatError.self) {
            try resolve(
                scratch,
                #"{"fileSource": "Art/Logo.png", "fileDestination": "Levels/World1"}, {"directory": "Levels"}"#
            )
        }
        #expect(error?.code == .invalidManifest)
        #expect(
            error?.message.contains(
                "fileSelectors[0].fileSource: places Art/Logo.png at \"Levels/World1\", a path that is also a folder of the pack (it holds \"Levels/World1/b.json\")"
            ) == true,
            "\(error?.message ?? "")"
        )
    }

    @Test func aSourceRootIsRelativeToTheManifestAndStaysInsideTheServedFolder() throws {
        let scratch = try Scratch()
        try makeTree(scratch, under: "Project/Content")
        // Manifests in Project/Manifests, content in Project/Content.
        let source = try resolve(
            scratch,
            #"{"filePattern": "Levels/*.json"}"#,
            extra: #""sourceRoot": "../Content","#,
            file: "Project/Manifests/Pack.json",
            root: "Project/Manifests"
        )
        #expect(source.files.map(\.path) == ["Levels/a.json"])
        #expect(source.files.first?.source.string.hasSuffix("Project/Content/Levels/a.json") == true)

        // Served from Project/Manifests, the source root is outside the folder: refused.
        let outside = #expect(throws: AssetPackFormatError.self) {
            try resolve(
                scratch,
                #"{"filePattern": "Levels/*.json"}"#,
                extra: #""sourceRoot": "../Content","#,
                file: "Project/Manifests/Pack.json",
                root: "Project/Manifests",
                boundary: "Project/Manifests"
            )
        }
        #expect(outside?.code == .unsafePath)
        #expect(outside?.message.contains("outside the asset folder") == true, "\(outside?.message ?? "")")
        // A symlink inside the source root that leads out of it is refused as before.
        try FileManager.default.createSymbolicLink(
            atPath: scratch.root.appending("Project/Content/escape").string,
            withDestinationPath: "/etc"
        )
        let escape = #expect(throws: AssetPackFormatError.self) {
            try resolve(
                scratch,
                #"{"file": "escape/hostname"}"#,
                extra: #""sourceRoot": "../Content","#,
                file: "Project/Manifests/Pack.json",
                root: "Project/Manifests"
            )
        }
        #expect(escape?.code == .unsafePath)
    }
}

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
}

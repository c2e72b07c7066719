import Foundation
import SystemPackage
import TestSupport
import Testing

/// Every option that names a file or folder to write, given as a bare name, `./name`, an absolute path and a
/// name in a folder that does not exist yet: each works, and no Foundation error text reaches the user
/// (`-o dm.json` failed with `NSCocoaErrorDomain Code=4 … NSFilePath=`: the folder of a bare name was "").
@Suite("Output paths end to end", .serialized)
struct OutputPathEndToEndTests {
    let mock = builtProduct("ba-mock")

    /// The path forms, relative to the command's working folder (`absolute` is filled in per run).
    static let forms = ["bare", "dot", "absolute", "missing folder"]

    func path(_ form: String, _ name: String, in directory: FilePath) -> String {
        switch form {
        case "bare": name
        case "dot": "./" + name
        case "absolute": directory.appending(name).string
        default: "new/sub/" + name
        }
    }

    func expectClean(_ result: (status: Int32, stdout: String, stderr: String), _ what: String) {
        #expect(result.status == 0, "\(what): \(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"), "\(what): \(result.stderr)")
        #expect(!result.stderr.contains("Error Domain"), "\(what): \(result.stderr)")
    }

    /// A folder with a packaging manifest for one small pack, run from.
    func assetFolder(_ scratch: Scratch) throws -> FilePath {
        try scratch.write("Levels/one.json", #"{"level": 1}"#)
        try scratch.write(
            "Levels.json",
            #"{"assetPackID": "Levels", "downloadPolicy": {"onDemand": {}}, "fileSelectors": [{"directory": "Levels"}], "platforms": ["iOS"]}"#
        )
        return scratch.root
    }

    @Test(arguments: forms)
    func packageWritesTheArchiveWhereveritIsNamed(_ form: String) throws {
        let scratch = try Scratch()
        let folder = try assetFolder(scratch)
        let output = path(form, "Levels.aar", in: folder)
        let result = try runTool(mock, ["package", "Levels.json", "-o", output], directory: folder.string)
        expectClean(result, "package -o \(output)")
        #expect(FileManager.default.fileExists(atPath: form == "absolute" ? output : folder.appending(output).string))
    }

    @Test(arguments: forms)
    func downloadManifestCreateWritesTheManifestWhereverItIsNamed(_ form: String) throws {
        let scratch = try Scratch()
        let folder = try assetFolder(scratch)
        expectClean(
            try runTool(mock, ["package", "Levels.json", "-o", "Levels.aar"], directory: folder.string),
            "package"
        )
        let output = path(form, "dm.json", in: folder)
        let result = try runTool(
            mock,
            [
                "download-manifest", "create", "Levels.aar", "--ios", "--download-base-url", "https://cdn.example.com",
                "-o", output,
            ],
            directory: folder.string
        )
        expectClean(result, "download-manifest create -o \(output)")
        let written = form == "absolute" ? output : folder.appending(output).string
        #expect(try String(contentsOfFile: written, encoding: .utf8).contains("https://cdn.example.com/Levels"))
    }

    @Test(arguments: forms)
    func exportWritesTheFolderWhereverItIsNamed(_ form: String) throws {
        let scratch = try Scratch()
        let folder = try assetFolder(scratch)
        let output = path(form, "site", in: folder)
        let result = try runTool(
            mock,
            ["export", ".", "--out", output, "--base-url", "https://cdn.example.com"],
            directory: folder.string
        )
        expectClean(result, "export --out \(output)")
        let written = form == "absolute" ? output : folder.appending(output).string
        #expect(FileManager.default.fileExists(atPath: written + "/manifest"))
        #expect(FileManager.default.fileExists(atPath: written + "/assets/Levels"))
    }

    @Test func aFileThatCannotBeWrittenIsNamedWithTheFix() throws {
        let scratch = try Scratch()
        let folder = try assetFolder(scratch)
        try scratch.write("blocked", "a file where a folder is needed")
        let result = try runTool(
            mock,
            ["package", "Levels.json", "-o", "blocked/Levels.aar"],
            directory: folder.string
        )
        #expect(result.status != 0)
        #expect(result.stderr.contains("blocked"), "\(result.stderr)")
        #expect(!result.stderr.contains("Error Domain"), "\(result.stderr)")
        #expect(!result.stderr.contains("NSCocoaErrorDomain"), "\(result.stderr)")
    }
}

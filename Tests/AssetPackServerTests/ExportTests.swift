import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

@Suite("export into a folder that holds other things")
struct ExportTests {
    @Test func exportRemovesOnlyWhatItWroteBefore() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let out = scratch.root.appending("site")
        // A web root with things of its own, some named like pack IDs.
        try scratch.write("site/assets/images/logo.png", Scratch.noise(100, seed: 1))
        try scratch.write("site/assets/style.css", "body {}")
        try scratch.write("site/index.html", "<html></html>")
        let catalog = try PackCatalog(folder: AssetFolder(root: scratch.root), archivesKept: 1)
        try await catalog.refresh()
        _ = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        for id in ["Levels", "Textures", "Tutorial"] {
            #expect(FileManager.default.fileExists(atPath: out.appending("assets/\(id)").string))
        }

        try FileManager.default.removeItem(atPath: scratch.root.appending("Textures.json").string)
        try await catalog.refresh()
        let result = try Exporter.export(catalog.snapshot, to: out, baseURL: nil)
        #expect(result.manifest.assetPacks.map(\.id) == ["Levels", "Tutorial"])
        #expect(!FileManager.default.fileExists(atPath: out.appending("assets/Textures").string))
        #expect(try scratch.read(out.appending("assets/images/logo.png")) == Scratch.noise(100, seed: 1))
        #expect(try scratch.read(out.appending("assets/style.css")) == Data("body {}".utf8))
        #expect(try scratch.read(out.appending("index.html")) == Data("<html></html>".utf8))
    }
}

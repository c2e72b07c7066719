import AssetPackFormat
import Foundation
import SystemPackage
import TestSupport
import Testing

@testable import AssetPackServer

/// `ba-mock validate` as a library call (``FolderValidation``): what it finds and what it counts, without a
/// process (the tool's output and exit codes are in ValidateEndToEndTests).
@Suite("Validation as a library call")
struct FolderValidationTests {
    @Test func aGoodFolderIsOkAndCountsWhatItLookedAt() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        let report = try await FolderValidation.run([scratch.root], root: ".", infoPlist: nil)
        #expect(report.ok && report.problems.isEmpty, "\(report.problems)")
        #expect(report.manifests == 3 && report.packs == 3 && report.files > 3)
    }

    @Test func everyProblemOfAFolderAndAMissingOneInOneRun() async throws {
        let scratch = try Scratch()
        try scratch.makeSampleFolder()
        try scratch.write("Broken.json", #"{"assetPackID": "Broken", "fileSelectors": [{"file": "Nowhere.bin"}]}"#)
        let missing = scratch.root.appending("NoSuchFolder")
        let report = try await FolderValidation.run([scratch.root, missing], root: ".", infoPlist: nil)
        #expect(!report.ok)
        let broken = report.problems.filter { $0.file.hasSuffix("Broken.json") }
        #expect(broken.contains { $0.key == "downloadPolicy" && $0.severity == .error }, "\(broken)")
        #expect(broken.contains { $0.key.hasPrefix("fileSelectors[0]") }, "\(broken)")
        // A path that is neither a folder nor a manifest is a manifest that cannot be read.
        #expect(report.problems.contains { $0.file == missing.string }, "\(report.problems)")
    }
}

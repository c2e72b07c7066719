// The README's mapping table, checked by the compiler: each function below uses one row's API exactly as
// Apple declares it (labels, types, async, throws, isolation), so a declaration that drifts from Apple's
// fails the build, not a reader. The functions are never called: compiling them is the test.
//
// How a line pins a declaration:
// - a call in a synchronous function proves `nonisolated` and not `async`;
// - a call without `try` in a function that does not throw proves it does not throw;
// - `let _: T = …` pins the type; an exhaustive `switch` with no `default` pins the cases;
// - `conforms(…)` pins the protocols Apple lists.
// Pages: developer.apple.com/documentation/backgroundassets/<page>, named above each function.
import BackgroundAssets
import Foundation
import System
import Testing

private func conforms<T: Sendable>(_: T.Type) {}
private func hashableIdentifiable<T: Hashable & Identifiable & Encodable & CustomStringConvertible>(_: T.Type) {}
private func decodableWithConfiguration<T: DecodableWithConfiguration>(_: T.Type) {}
private func localizedError<T: LocalizedError & CustomStringConvertible>(_: T.Type) {}
private func optionSet<T: OptionSet>(_: T.Type) where T.RawValue == Int {}
private func sendableSequence<S: Sendable & AsyncSequence>(_: S)
where S.Element == AssetPackManager.DownloadStatusUpdate {}

// assetpackmanager, assetpackmanager/shared
private func shared() {
    let manager: AssetPackManager = AssetPackManager.shared
    conforms(AssetPackManager.self)
    _ = manager
}

// assetpackmanager/statusupdates, assetpackmanager/statusupdates(forassetpackwithid:)
private func statusUpdates(_ manager: AssetPackManager) async {
    sendableSequence(manager.statusUpdates)
    sendableSequence(manager.statusUpdates(forAssetPackWithID: "Levels"))
    for await update in manager.statusUpdates {  // no `try`: the failure type is Never
        _ = update
    }
    for await update in manager.statusUpdates(forAssetPackWithID: "Levels") {
        _ = update
    }
}

// assetpackmanager/downloadstatusupdate and its cases
private func downloadStatusUpdate(_ update: AssetPackManager.DownloadStatusUpdate) {
    conforms(AssetPackManager.DownloadStatusUpdate.self)
    let _: String = update.description
    switch update {
    case .began(let pack): let _: AssetPack = pack
    case .downloading(let pack, let progress):
        let _: AssetPack = pack
        let _: Progress = progress
        progress.cancel()
    case .paused(let pack): let _: AssetPack = pack
    case .finished(let pack): let _: AssetPack = pack
    case .failed(let pack, let error):
        let _: AssetPack = pack
        let _: any Error = error
    }
}

// assetpackmanager/assetpack(withid:), assetpackmanager/allassetpacks (deprecated in 27), assetpackmanager/manifest
@available(*, deprecated)
private func accessing(_ manager: AssetPackManager) async throws {
    let _: AssetPack = try await manager.assetPack(withID: "Levels")
    let _: Set<AssetPack> = try await manager.allAssetPacks
    let _: AssetPackManifest = try await manager.manifest
}

// ensurelocalavailability(of:) (deprecated in 26.4), ensurelocalavailability(of:requirelatestversion:),
// ensurelocalavailability(of:requirelatestversions:), localavailabilityerror
@available(*, deprecated)
private func ensuring(_ manager: AssetPackManager, _ pack: AssetPack) async throws {
    try await manager.ensureLocalAvailability(of: pack)
    try await manager.ensureLocalAvailability(of: pack, requireLatestVersion: true)
    try await manager.ensureLocalAvailability(of: [pack], requireLatestVersions: true)
    try await manager.ensureLocalAvailability(of: Set([pack]))
    do {
        try await manager.ensureLocalAvailability(of: Set([pack]))
    } catch let error as AssetPackManager.LocalAvailabilityError {
        let _: Set<AssetPack> = error.successes
        let _: [AssetPack: any Error] = error.failures
        localizedError(AssetPackManager.LocalAvailabilityError.self)
    }
}

// assetpackmanager/checkforupdates(), assetpackmanager/remove(assetpackwithid:)
private func managing(_ manager: AssetPackManager) async throws {
    let result: (updatingIDs: Set<String>, removedIDs: Set<String>) = try await manager.checkForUpdates()
    _ = result
    try await manager.checkForUpdates()  // @discardableResult
    try await manager.remove(assetPackWithID: "Levels")
}

// assetpackmanager/assetpackisavailablelocally(withid:), localversion(ofassetpackwithid:) (27.2)
private func nonisolatedState(_ manager: AssetPackManager) throws {
    let _: Bool = manager.assetPackIsAvailableLocally(withID: "Levels")
    let _: Int = try manager.localVersion(ofAssetPackWithID: "Levels")
}

// assetpackmanager/status(relativeto:), localstatus(ofassetpackwithid:), status(ofassetpackwithid:)
// (deprecated in 26.4), localsize(ofassetpackwithid:calculationmethod:) (27.2), sizecalculationmethod
@available(*, deprecated)
private func status(_ manager: AssetPackManager, _ pack: AssetPack) async throws {
    let _: AssetPack.Status = try await manager.status(relativeTo: pack)
    let _: AssetPack.Status = try await manager.status(ofAssetPackWithID: "Levels")
    let _: Int64 = try await manager.localSize(ofAssetPackWithID: "Levels", calculationMethod: .allocated)
    let _: Int64 = try await manager.localSize(ofAssetPackWithID: "Levels", calculationMethod: .logical)
    let _: SizeCalculationMethod? = SizeCalculationMethod(rawValue: 0)
}

private func localStatus(_ manager: AssetPackManager) async {
    let _: AssetPack.Status = await manager.localStatus(ofAssetPackWithID: "Levels")  // async, no `throws`
}

// contents(at:searchinginassetpackwithid:options:), descriptor(for:searchinginassetpackwithid:), url(for:)
private func reading(_ manager: AssetPackManager) throws {
    let _: Data = try manager.contents(
        at: "Levels/World1/map.json",
        searchingInAssetPackWithID: nil,
        options: .mappedIfSafe
    )
    let _: Data = try manager.contents(at: FilePath("Levels/World1/map.json"))
    let descriptor: FileDescriptor = try manager.descriptor(
        for: "Levels/World1/map.json",
        searchingInAssetPackWithID: "Levels"
    )
    try descriptor.close()
    let _: FileDescriptor = try manager.descriptor(for: "Levels/World1/map.json")
    let _: URL = try manager.url(for: "Levels")
}

// contents(at:aslocalizedfor:options:), descriptor(for:aslocalizedfor:), url(for:aslocalizedfor:) (27)
private func localizedReading(_ manager: AssetPackManager) throws {
    let french = Locale.Language(identifier: "fr")
    let _: Data = try manager.contents(at: "Voices/hello.txt", asLocalizedFor: french, options: .alwaysMapped)
    let _: Data = try manager.contents(at: "Voices/hello.txt", asLocalizedFor: french)
    let _: FileDescriptor = try manager.descriptor(for: "Voices/hello.txt", asLocalizedFor: french)
    let _: URL = try manager.url(for: "Voices", asLocalizedFor: french)
}

// assetpackmanager/resolvedlanguage (nonisolated get/set), locallyavailablelanguages,
// reconcilepreferredlanguages()
private func languages(_ manager: AssetPackManager) async throws {
    let _: Locale.Language? = manager.resolvedLanguage
    manager.resolvedLanguage = Locale.Language(identifier: "fr")
    manager.resolvedLanguage = nil
    let _: [Locale.Language] = await manager.locallyAvailableLanguages
    try await manager.reconcilePreferredLanguages()
}

// assetpack, assetpack/status
private func assetPack(_ pack: AssetPack) {
    hashableIdentifiable(AssetPack.self)
    decodableWithConfiguration(AssetPack.self)
    conforms(AssetPack.self)
    let _: String = pack.id
    let _: Int = pack.version
    let _: Int = pack.downloadSize
    let _: Data? = pack.userInfo
    let _: Locale.Language? = pack.language
    optionSet(AssetPack.Status.self)
    conforms(AssetPack.Status.self)
    let all: [AssetPack.Status] = [
        .downloadAvailable, .updateAvailable, .upToDate, .outOfDate, .obsolete, .downloading, .downloaded,
    ]
    _ = all
}

// assetpackmanifest and its members
private func manifest(_ manifest: AssetPackManifest, data: Data, url: URL) throws {
    let _: AssetPackManifest = try AssetPackManifest(contentsOf: url, appGroupID: "group.com.example.game")
    let _: AssetPackManifest = try AssetPackManifest(from: data, appGroupID: "group.com.example.game")
    decodableWithConfiguration(AssetPackManifest.self)
    conforms(AssetPackManifest.self)
    let _: any Encodable = manifest
    let _: String = manifest.description
    let _: Set<AssetPack> = manifest.assetPacks
    let _: AssetPack? = manifest.assetPack(withID: "Levels")
    let _: [Locale.Language] = manifest.availableLanguages
    let _: Locale.Language? = manifest.primaryLanguage
    let _: Set<AssetPack> = manifest.localizedAssetPacks
    let _: Set<AssetPack> = manifest.localizedAssetPacks(for: Locale.Language(identifier: "de"))
    let _: Locale.Language? = manifest.resolvedLanguage
}

// managedbackgroundassetserror
private func errors(_ manager: AssetPackManager) {
    localizedError(ManagedBackgroundAssetsError.self)
    conforms(ManagedBackgroundAssetsError.self)
    do {
        _ = try manager.contents(at: "missing.json")
    } catch ManagedBackgroundAssetsError.fileNotFound(let path) {
        let _: FilePath = path
    } catch ManagedBackgroundAssetsError.assetPackNotFound(let id) {
        let _: String = id
    } catch {
        let _: any Error = error
    }
}

// bacontentrequest, manageddownloaderextension, manageddownloaderextension/shoulddownload(_:)
private struct DownloaderExtension: ManagedDownloaderExtension {
    func shouldDownload(_ assetPack: AssetPack) -> Bool { assetPack.id != "HighResTextures" }
}

private struct DefaultDownloaderExtension: ManagedDownloaderExtension {}

private func contentRequest(_ request: BAContentRequest) -> Int {
    let requests: [BAContentRequest] = [.install, .update, .periodic, .languageChange]
    _ = requests
    return request.rawValue
}

@Suite struct AppleDeclarationTests {
    @Test func theSDKsRawValuesAreKept() {
        #expect(BAContentRequest.install.rawValue == 1)
        #expect(BAContentRequest.languageChange.rawValue == 4)
        #expect(AssetPack.Status.downloaded.rawValue == 1 << 6)
        #expect(AssetPack.Status([.downloadAvailable, .upToDate, .downloaded]).rawValue == 69)  // forum 799138
        #expect(SizeCalculationMethod.allocated.rawValue == 1)
    }
}

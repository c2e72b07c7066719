internal import AssetPackClient
internal import AssetPackFormat
public import Foundation

/// Localized asset packs (OS 27), with Apple's declarations.
extension AssetPackManager {
    /// The language the localized packs are read and downloaded for: the best match of the app's preferred
    /// language among the languages of the app's localized packs (installed, or listed by the last manifest),
    /// else the primary language; `nil` when no localized pack is known.
    /// Setting it changes the language reads resolve for and `reconcilePreferredLanguages()` downloads (it
    /// downloads and removes nothing itself); `nil` goes back to the device's language: the configuration's
    /// (`BA_SYNC_LANGUAGE`, or `language:` of a test), else the environment's (`LANGUAGE`, `LC_ALL`, `LANG`).
    public nonisolated var resolvedLanguage: Locale.Language? {
        get {
            let reader = engine.reader
            let resolved = LanguageTag.bestMatch(
                preferred: reader.preferredLanguages,
                available: reader.knownLanguages,
                primary: reader.primaryLanguage
            )
            return resolved.map { Locale.Language(bcp47: $0.description) }
        }
        set {
            if let tag = newValue.flatMap({ try? LanguageTag(parsing: $0.bcp47) }) {
                engine.reader.language = tag
            } else if let device = backend.configuration.engine.language.flatMap({ try? LanguageTag(parsing: $0) }) {
                engine.reader.language = device  // the device's language, as the configuration plays it
            } else {
                engine.reader.useSystemLanguage()  // the environment's
            }
        }
    }

    /// The languages of the localized packs that are local.
    public var locallyAvailableLanguages: [Locale.Language] {
        get async {
            let reader = engine.reader
            let languages = (try? await BlockingIO.shortCall { reader.locallyAvailableLanguages }) ?? []
            return languages.map(Locale.Language.init(bcp47:))
        }
    }

    /// Downloads the missing localized packs of the resolved language (whatever their policy: "any missing
    /// localized asset packs"), waits for them, then removes the localized packs of other languages that came
    /// for a language; one the app downloaded itself stays.
    /// - Throws: ``LocalAvailabilityError`` when a download failed (nothing is removed then); a network error.
    public func reconcilePreferredLanguages() async throws {
        let engine = self.engine
        _ = try await FaceError.translating { try await engine.reconcilePreferredLanguages(includingOnDemand: true) }
    }
}

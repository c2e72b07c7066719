import AssetPackFormat
import Testing

/// The resolved language as Apple chooses it: the best match between the preferred languages, in order, and
/// the languages of the localized packs, else the app's primary language (Darwin Foundation's
/// `Bundle.preferredLocalizations(from:forPreferences:)` behaviour, which swift-corelibs-foundation on Linux
/// does not reproduce: it picks `zh-Hans` for `zh-Hant-TW`).
@Suite("Language matching")
struct LanguageMatchTests {
    struct Row: CustomTestStringConvertible, Sendable {
        var preferred: [String]
        var available: [String]
        var primary = "en"
        var chosen: String?
        var testDescription: String { "\(preferred) in \(available) → \(chosen ?? "none")" }
    }

    static let table: [Row] = [
        // A region the packs do not have takes the language's pack without a region.
        Row(preferred: ["en-GB"], available: ["en", "fr"], chosen: "en"),
        Row(preferred: ["en-GB"], available: ["en-US", "fr"], chosen: "en-US"),
        // The exact tag wins over the language alone.
        Row(preferred: ["en-US"], available: ["en", "en-US"], chosen: "en-US"),
        // en is en-US (its likely region), so en takes the only English pack.
        Row(preferred: ["en"], available: ["en-US", "fr"], chosen: "en-US"),
        Row(preferred: ["en"], available: ["en-GB", "en-US"], chosen: "en-US"),
        // pt-PT: the plain pt first, then another region of the same language (pt-BR), as Foundation does.
        Row(preferred: ["pt-PT"], available: ["pt", "pt-BR"], chosen: "pt"),
        Row(preferred: ["pt-PT"], available: ["pt-BR", "es"], chosen: "pt-BR"),
        // The script matters: Traditional Chinese never reads Simplified.
        Row(preferred: ["zh-Hant-TW"], available: ["zh-Hans", "zh-Hant"], chosen: "zh-Hant"),
        Row(preferred: ["zh-Hant-TW"], available: ["zh-Hans"], chosen: nil),
        // No script: the likely one (zh-TW is written in Hant, zh-CN and zh in Hans).
        Row(preferred: ["zh-TW"], available: ["zh-Hans", "zh-Hant"], chosen: "zh-Hant"),
        Row(preferred: ["zh-HK"], available: ["zh-Hans", "zh-Hant"], chosen: "zh-Hant"),
        Row(preferred: ["zh"], available: ["zh-Hant", "zh-Hans"], chosen: "zh-Hans"),
        // Nothing matches: the primary language, matched the same way; without it either, none.
        Row(preferred: ["ja"], available: ["en-US", "fr"], chosen: "en-US"),
        Row(preferred: ["ja"], available: ["de", "fr"], primary: "fr", chosen: "fr"),
        Row(preferred: ["ja"], available: ["de", "fr"], chosen: nil),
        Row(preferred: ["ja"], available: [], chosen: nil),
        // Several preferred languages: the first that matches anything, in order.
        Row(preferred: ["ja", "de-AT", "fr"], available: ["fr", "de"], chosen: "de"),
        Row(preferred: ["fr-CA", "de"], available: ["fr", "de"], chosen: "fr"),
        // Case and separators do not matter; the answer is the available tag as published.
        Row(preferred: ["EN_gb"], available: ["en"], chosen: "en"),
    ]

    @Test(arguments: table)
    func bestMatch(_ row: Row) throws {
        let preferred = try row.preferred.map { try LanguageTag(parsing: $0) }
        let available = try row.available.map { try LanguageTag(parsing: $0) }
        let chosen = LanguageTag.bestMatch(
            preferred: preferred,
            available: available,
            primary: try LanguageTag(parsing: row.primary)
        )
        #expect(chosen?.description == row.chosen)
    }
}

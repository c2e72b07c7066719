import Foundation

/// A language tag as Background Assets takes them: BCP-47 with a language, then optionally a script and a
/// region, nothing more (Apple: "only supports language, region, and script"). Written canonically:
/// `fr`, `pt-BR`, `zh-Hant-TW`.
public struct LanguageTag: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The language subtag, lower case (`en`).
    public var language: String
    /// The script subtag, title case (`Hant`), if any.
    public var script: String?
    /// The region subtag, upper case (`US`) or three digits (`419`), if any.
    public var region: String?

    /// Parses a tag, in any case, with `-` or `_` between its parts.
    /// - Throws: A phrase that completes "the tag ...".
    public init(parsing text: String) throws(LanguageTagError) {
        let parts = text.split(whereSeparator: { $0 == "-" || $0 == "_" }).map(String.init)
        guard let first = parts.first, parts.count <= 3 else {
            throw LanguageTagError(
                text.isEmpty ? "is empty" : "has more than a language, a script and a region (extensions, variants)"
            )
        }
        guard (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw LanguageTagError("does not start with a language code of 2 or 3 letters")
        }
        language = first.lowercased()
        for part in parts.dropFirst() {
            if part.count == 4, part.allSatisfy({ $0.isASCII && $0.isLetter }), script == nil, region == nil {
                script = part.prefix(1).uppercased() + part.dropFirst().lowercased()
            } else if part.count == 2, part.allSatisfy({ $0.isASCII && $0.isLetter }), region == nil {
                region = part.uppercased()
            } else if part.count == 3, part.allSatisfy({ $0.isASCII && $0.isNumber }), region == nil {
                region = part
            } else {
                throw LanguageTagError(
                    "has \"\(part)\", which is neither a script (4 letters) nor a region (2 letters or 3 digits) in that place"
                )
            }
        }
    }

    public var description: String {
        ([language] + [script, region].compactMap { $0 }).joined(separator: "-")
    }

    /// The tag with the script and region its language has when it names none (Unicode's likely subtags, for
    /// the languages games ship most): `en` is `en-Latn-US`, `zh-TW` is `zh-Hant-TW`. A language not in the
    /// table is left as it is.
    public var maximized: LanguageTag {
        var tag = self
        let likely = Self.likely[language]
        if tag.region == nil, let region = likely?.region {
            tag.region = language == "zh" && tag.script == "Hant" ? "TW" : region
        }
        if tag.script == nil {
            if language == "zh" {
                tag.script = ["TW", "HK", "MO"].contains(tag.region ?? "") ? "Hant" : "Hans"
            } else if language == "sr" {
                tag.script = "Cyrl"
            } else {
                tag.script = likely?.script
            }
        }
        return tag
    }

    /// Whether two tags name the same language, as Apple's reads compare them: `en` matches `en-US` (its
    /// likely region) but not `en-CA`.
    public func matches(_ other: LanguageTag) -> Bool {
        maximized == other.maximized
    }

    private static let likely: [String: (script: String, region: String)] = [
        "ar": ("Arab", "EG"), "bg": ("Cyrl", "BG"), "ca": ("Latn", "ES"), "cs": ("Latn", "CZ"), "da": ("Latn", "DK"),
        "de": ("Latn", "DE"), "el": ("Grek", "GR"), "en": ("Latn", "US"), "es": ("Latn", "ES"), "et": ("Latn", "EE"),
        "fa": ("Arab", "IR"), "fi": ("Latn", "FI"), "fil": ("Latn", "PH"), "fr": ("Latn", "FR"),
        "he": ("Hebr", "IL"), "hi": ("Deva", "IN"), "hr": ("Latn", "HR"), "hu": ("Latn", "HU"),
        "id": ("Latn", "ID"), "it": ("Latn", "IT"), "ja": ("Jpan", "JP"), "ko": ("Kore", "KR"),
        "lt": ("Latn", "LT"), "lv": ("Latn", "LV"), "ms": ("Latn", "MY"), "nb": ("Latn", "NO"),
        "nl": ("Latn", "NL"), "pl": ("Latn", "PL"), "pt": ("Latn", "BR"), "ro": ("Latn", "RO"),
        "ru": ("Cyrl", "RU"), "sk": ("Latn", "SK"), "sl": ("Latn", "SI"), "sr": ("Cyrl", "RS"),
        "sv": ("Latn", "SE"), "th": ("Thai", "TH"), "tr": ("Latn", "TR"), "uk": ("Cyrl", "UA"),
        "vi": ("Latn", "VN"), "zh": ("Hans", "CN"),
    ]

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            self = try LanguageTag(parsing: text)
        } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "\(text) \(error)")
            )
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// Why a language tag cannot be used: a phrase that completes "the tag ...".
public struct LanguageTagError: Error, Sendable, Hashable, CustomStringConvertible {
    public let problem: String
    init(_ problem: String) { self.problem = problem }
    public var description: String { problem }
}

extension LanguageTag {
    /// The language a tool resolves to: `given` when there is one, else ``preferred(in:)``.
    /// - Throws: When `given` is not a tag.
    public static func resolve(
        _ given: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(LanguageTagError) -> LanguageTag {
        if let given { return try LanguageTag(parsing: given) }
        return preferred(in: environment)
    }

    /// The environment's language (`LC_ALL`, then `LANG`, as `fr_FR.UTF-8`), else `en`; the C and POSIX
    /// locales mean `en`.
    public static func preferred(in environment: [String: String] = ProcessInfo.processInfo.environment)
        -> LanguageTag
    {
        for key in ["LC_ALL", "LANG"] {
            guard let value = environment[key], !value.isEmpty else { continue }
            let name = String(value.prefix { $0 != "." && $0 != "@" })
            if name == "C" || name == "POSIX" { break }
            if let tag = try? LanguageTag(parsing: name) { return tag }
        }
        return LanguageTag(language: "en", script: nil, region: nil)
    }

    /// English, the primary language when an app names none.
    public static let english = LanguageTag(language: "en", script: nil, region: nil)

    /// The environment's preferred languages, most preferred first: GNU's `LANGUAGE` list (`ja:fr_CA`; tags
    /// that do not parse are skipped), then ``preferred(in:)``. As gettext does, `LANGUAGE` is ignored when the
    /// locale is C or POSIX.
    public static func preferredLanguages(in environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [LanguageTag]
    {
        let locale = preferred(in: environment)
        let name = (environment["LC_ALL"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["LANG"] ?? "")
            .prefix { $0 != "." && $0 != "@" }
        guard name != "C", name != "POSIX", let list = environment["LANGUAGE"], !list.isEmpty else { return [locale] }
        var tags: [LanguageTag] = []
        for entry in list.split(separator: ":") {
            let entry = entry.prefix { $0 != "." && $0 != "@" }
            if let tag = try? LanguageTag(parsing: String(entry)), !tags.contains(tag) { tags.append(tag) }
        }
        if !tags.contains(locale) { tags.append(locale) }
        return tags
    }

    /// A tag from its parts (already valid).
    init(language: String, script: String?, region: String?) {
        self.language = language
        self.script = script
        self.region = region
    }
}

extension LanguageTag {
    /// The language Background Assets resolves to: "the best match between the languages available in the
    /// app's localized asset packs and the language currently selected", else the app's primary language;
    /// matched as Darwin Foundation's `Bundle.preferredLocalizations(from:forPreferences:)` matches.
    ///
    /// The preferred languages are tried in order; the first that matches an available tag chooses. A tag
    /// matches only within its language and script (with the likely script when it names none: `zh-TW` is
    /// `zh-Hant`, never `zh-Hans`). Among those, the exact tag comes first, then one equal to it with likely
    /// subtags (`en` and `en-US`), then the language with no region (`pt` for `pt-PT`), then any other region
    /// of it (`pt-BR`), by name. Apple's ICU also knows regional parents (`en-AU` takes `en-GB` before
    /// `en-US`); this picks by name there.
    /// - Parameters:
    ///   - preferred: The preferred languages, most preferred first.
    ///   - available: The languages of the localized packs.
    ///   - primary: The app's primary language, taken when no preferred language matches.
    /// - Returns: One of `available`, or `nil` when neither a preferred nor the primary language matches.
    public static func bestMatch(preferred: [LanguageTag], available: [LanguageTag], primary: LanguageTag)
        -> LanguageTag?
    {
        for language in preferred + [primary] {
            if let match = bestMatch(for: language, in: available) { return match }
        }
        return nil
    }

    /// The available tag that serves `language` best, if any (see ``bestMatch(preferred:available:primary:)``).
    public static func bestMatch(for language: LanguageTag, in available: [LanguageTag]) -> LanguageTag? {
        let wanted = language.maximized
        func rank(_ tag: LanguageTag) -> Int? {
            let full = tag.maximized
            guard full.language == wanted.language, full.script == wanted.script else { return nil }
            if tag == language { return 0 }
            if full == wanted { return 1 }
            return tag.region == nil ? 2 : 3
        }
        return available.compactMap { tag in rank(tag).map { (tag, $0) } }
            .min { ($0.1, $0.0.description) < ($1.1, $1.0.description) }?.0
    }
}

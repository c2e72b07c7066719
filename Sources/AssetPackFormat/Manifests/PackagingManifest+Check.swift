import Foundation

/// How a packaging manifest given as bytes is checked: every key, so that one mistake does not hide the next.
extension PackagingManifest {
    /// Finds every problem of a manifest given as bytes: each key is checked, so one mistake does not hide
    /// the next.
    public static func check(_ bytes: [UInt8], file: String) -> ManifestCheck {
        let document: JSONDocument
        let object: [String: JSONValue]
        switch decodeObject(bytes, file: file) {
        case .success(let decoded):
            document = decoded.document
            object = decoded.object
        case .failure(let problem):
            return ManifestCheck(parsed: nil, problems: [problem])
        }
        var problems: [ManifestProblem] = []
        let misspelt = checkUnknownKeys(of: object, file: file, problems: &problems)
        var warnings = trailingCommaWarnings(document, file: file)
        // Readers disagree on which of two values counts (Foundation, and so this tool, keeps the first).
        problems += duplicateKeyProblems(document, file: file)
        let id = take(file: file, problems: &problems) {
            try parseID(object["assetPackID"], file: file, warnings: &warnings)
        }
        let policy = parsePolicy(object["downloadPolicy"], file: file, problems: &problems)
        let selectors = parseSelectors(object["fileSelectors"], file: file, problems: &problems)
        let platforms = parsePlatforms(object["platforms"], file: file, problems: &problems)
        let sourceRoot = take(file: file, problems: &problems) { try parseSourceRoot(object["sourceRoot"], file: file) }
        let language = take(file: file, problems: &problems) { try parseLanguage(object["language"], file: file) }
        let userInfo = take(file: file, problems: &problems) { try parseUserInfo(object["userInfo"], file: file) }
        // A misspelt key is said once, with its fix: not again as the right key "is missing".
        problems.removeAll { misspelt.contains($0.key) && $0.message == "is missing" }
        problems += warnings
        // What its files can be checked with, even when another key is wrong: one run finds those problems too.
        let selection = partialSelection(
            id: id,
            policy: policy,
            selectors: selectors,
            platforms: platforms,
            sourceRoot: sourceRoot,
            language: language,
            file: file
        )
        let indices = selectors.map { $0.map(\.index) }
        guard let id, let policy, let selectors, let platforms, let sourceRoot, let language, let userInfo,
            !problems.contains(where: { $0.severity == .error })
        else {
            var check = ManifestCheck(parsed: nil, problems: problems, assetPackID: id, selection: selection)
            check.selectorIndices = indices
            return check
        }
        let manifest = PackagingManifest(
            assetPackID: id,
            downloadPolicy: policy,
            fileSelectors: selectors.map(\.selector),
            platforms: platforms,
            sourceRoot: sourceRoot.value,
            language: language.value,
            userInfo: userInfo.value
        )
        let parsed = ParsedManifest(manifest: manifest, file: file, problems: problems)
        return ManifestCheck(parsed: parsed, problems: problems, assetPackID: id, selection: parsed)
    }

    /// The manifest's JSON and its top-level object, or the one problem that keeps them from being read.
    private static func decodeObject(
        _ bytes: [UInt8],
        file: String
    ) -> Result<(document: JSONDocument, object: [String: JSONValue]), ManifestProblem> {
        let document: JSONDocument
        do {
            document = try JSONScanner.document(bytes, comments: true)
        } catch {
            return .failure(invalidJSONProblem(error, file: file))
        }
        guard case .object(let object) = document.value else {
            return .failure(
                .error(
                    file,
                    "(top level)",
                    "is \(document.value.typeName), not an object",
                    fix: "start from `ba-mock template`"
                )
            )
        }
        return .success((document: document, object: object))
    }

    /// What and where the syntax error is, as "line 3, column 5: Invalid value", in JSONSerialization's words
    /// (which this message gave when JSONSerialization read manifests).
    private static func invalidJSONProblem(_ error: any Error, file: String) -> ManifestProblem {
        guard let failure = error as? JSONScanner.Failure, let place = failure.place else {
            return .error(file, "(file)", "is not valid JSON: \(error)", fix: nil, code: .invalidJSON)
        }
        let what: String
        switch failure.kind {
        case .unclosedComment:
            return .error(
                file,
                "(file)",
                "is not valid JSON: the /* comment on line \(place.line) is never closed",
                fix: "close it with */ (or remove it)",
                code: .invalidJSON
            )
        case .invalidUTF8: what = "Invalid UTF-8 sequence in the string at \(place)"
        default: what = "\(place): \(failure.kind.words)"
        }
        return .error(
            file,
            "(file)",
            "is not valid JSON: \(what)",
            fix: "check quotes, commas and brackets there; `//` and `/* */` comments are allowed",
            code: .invalidJSON
        )
    }

    /// The known keys that the unknown keys of `object` are near misses of; each unknown key is an error.
    private static func checkUnknownKeys(
        of object: [String: JSONValue],
        file: String,
        problems: inout [ManifestProblem]
    ) -> Set<String> {
        var misspelt: Set<String> = []
        for key in object.keys.sorted() where !knownKeys.contains(key) {
            let near = nearMiss(key, in: knownKeys)
            if let near { misspelt.insert(near) }
            problems.append(
                .error(
                    file,
                    key,
                    "is not a key of packaging manifests; a key that is ignored gives a pack that differs from the "
                        + "one App Store Connect builds",
                    fix: near.map { "did you mean \"\($0)\"?" }
                        ?? "remove it (keys: \(knownKeys.joined(separator: ", ")))"
                )
            )
        }
        return misspelt
    }

    /// What `body` returns, or `nil` when it throws, with what it threw added to `problems`.
    private static func take<T>(file: String, problems: inout [ManifestProblem], _ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch let problem as ManifestProblem {
            problems.append(problem)
        } catch {
            problems.append(.error(file, "(top level)", "\(error)", fix: nil))
        }
        return nil
    }

    /// A warning for each comma before a closing bracket in `document`.
    private static func trailingCommaWarnings(_ document: JSONDocument, file: String) -> [ManifestProblem] {
        document.trailingCommas.map { offset in
            .warning(
                file,
                "(file)",
                "has a comma before a closing bracket (\(document.place(of: offset))); this tool reads it, "
                    + "but JSON does not allow it and whether ba-package accepts it is not known",
                fix: "remove the comma"
            )
        }
    }

    /// An error for each key written twice in one object of `document`.
    private static func duplicateKeyProblems(_ document: JSONDocument, file: String) -> [ManifestProblem] {
        document.duplicateKeys.map { duplicate in
            .error(
                file,
                duplicate.path,
                "is written twice in one object (the second at \(document.place(of: duplicate.offset))); "
                    + "JSON readers disagree on which value counts",
                fix: "keep one of them"
            )
        }
    }

    /// The manifest that the files can be checked with, or `nil` without valid selectors and a valid source root.
    private static func partialSelection(
        id: String?,
        policy: DownloadPolicy?,
        selectors: [(index: Int, selector: FileSelector)]?,
        platforms: [String]?,
        sourceRoot: Checked<String>?,
        language: Checked<String>?,
        file: String
    ) -> ParsedManifest? {
        var selection: ParsedManifest?
        if let valid = selectors, !valid.isEmpty, let sourceRoot {
            let manifest = PackagingManifest(
                assetPackID: id ?? "",  // a wrong ID does not hide the files' problems
                downloadPolicy: policy ?? .onDemand,
                fileSelectors: valid.map(\.selector),
                platforms: platforms ?? [],
                sourceRoot: sourceRoot.value,
                language: language?.value
            )
            selection = ParsedManifest(manifest: manifest, file: file, problems: [])
        }
        return selection
    }
}

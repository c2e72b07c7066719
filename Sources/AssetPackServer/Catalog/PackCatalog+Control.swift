import AssetPackFormat

/// What the control endpoint (`/_mock/packs/...`) changes in a catalog: published versions and obsolete marks,
/// and what it reports.
extension PackCatalog {
    /// Publishes pack `id` at `version` from now on, whatever its content (the control endpoint's
    /// counterpart of `--pack-version`), so update flows can be scripted without touching files.
    /// - Throws: ``AssetPackServerError`` with code `.packNotFound` for an unknown pack.
    public func setVersion(_ version: Int, forPackWithID id: String) throws {
        guard state.packs[id] != nil || archives.contains(where: { $0.id == id }) else { throw unknownPack(id) }
        runtimeVersions[id] = version
        publish()
    }

    /// Removes a version set through the control endpoint: the pack is published at its `--pack-version`
    /// pin, or at the version its content has, again.
    /// - Throws: ``AssetPackServerError`` with code `.packNotFound` for an unknown pack.
    public func clearVersion(forPackWithID id: String) throws {
        guard state.packs[id] != nil || archives.contains(where: { $0.id == id }) else { throw unknownPack(id) }
        let pinned = runtimeVersions.removeValue(forKey: id)
        publish()
        if let pinned, let published = packStates.first(where: { $0.id == id })?.publishedVersion {
            log(
                "unpinned \(id): was published as version \(pinned), now as version \(published)"
                    + (published < pinned
                        ? "; clients that installed version \(pinned) will not take \(published) (a device updates only "
                            + "to a higher version). Fix: pin a version above \(pinned) (PUT /_mock/packs/\(id)/version/N)"
                        : "")
            )
        }
    }

    /// One pack as the control endpoint reports it.
    public struct PackState: Sendable, Hashable {
        public var id: String
        /// The version its content has (counted from 1).
        public var contentVersion: Int
        /// The version published (the pin, if any).
        public var publishedVersion: Int
        /// Where a pin comes from: `control` (PUT /_mock/packs/ID/version), `option` (--pack-version), or nil.
        public var pinnedBy: String?
        /// Marked obsolete through the control endpoint.
        public var obsolete: Bool
        /// Its manifest is gone.
        public var removed: Bool
        /// The errors of its manifest or build right now (its last good version stays published).
        public var problems: [ManifestProblem] = []
    }

    /// Every pack this catalog knows, published or not, sorted by ID.
    public var packStates: [PackState] {
        state.packs.keys.sorted().compactMap { id in
            guard let record = state.packs[id] else { return nil }
            return PackState(
                id: id,
                contentVersion: record.version,
                publishedVersion: published(record, id: id),
                pinnedBy: runtimeVersions[id] != nil ? "control" : pinnedVersions[id] != nil ? "option" : nil,
                obsolete: hidden.contains(id),
                removed: record.removed,
                problems: problems.filter { $0.pack == id }
            )
        }
    }

    /// The IDs of the packs built so far (published or not).
    public var knownPackIDs: Set<String> { Set(state.packs.keys).union(archives.map(\.id)) }

    /// Marks a pack obsolete (no longer published) or publishes it again.
    /// - Throws: ``AssetPackServerError`` with code `.packNotFound` for an unknown pack.
    public func setObsolete(_ obsolete: Bool, packWithID id: String) throws {
        guard state.packs[id] != nil || archives.contains(where: { $0.id == id }) else { throw unknownPack(id) }
        if obsolete { hidden.insert(id) } else { hidden.remove(id) }
        publish()
    }

    private func unknownPack(_ id: String) -> AssetPackServerError {
        AssetPackServerError(
            code: .packNotFound,
            message: "no pack \"\(AssetPackID.printable(id))\" in \(folder.root). Fix: GET /manifest lists the packs"
        )
    }
}

/// `--pack-version ID=N` values: versions to publish whatever the content, like `ba-serve
/// --asset-pack-versions`.
public enum PackVersionPins {
    /// Parses `ID=N` values.
    /// - Returns: The versions by pack ID.
    /// - Throws: ``AssetPackServerError`` with code `.invalidOption` naming the bad value.
    public static func parse(_ values: [String]) throws -> [String: Int] {
        var pins: [String: Int] = [:]
        for value in values {
            let parts = value.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, AssetPackID.problem(with: parts[0]) == nil, let version = Int(parts[1]),
                version >= 1
            else {
                throw AssetPackServerError(
                    code: .invalidOption,
                    message:
                        "--pack-version takes ID=N with a pack ID and a version of 1 or more, e.g. Levels=7 (got \(value))"
                )
            }
            pins[parts[0]] = version
        }
        return pins
    }
}

/// Pack IDs a command line names (`--pack-version ID=N`, `--fault …,pack=ID`) must be packs being served: a
/// typo would pin or break nothing, silently.
public enum NamedPacks {
    /// - Throws: ``AssetPackServerError`` with code `.invalidOption` naming the first unknown ID, its option
    ///   and the packs there are.
    public static func check(pins: [String], faults: [String], known: Set<String>) throws {
        let named: [(ids: [String], option: (String) -> String)] = [
            (pins, { "--pack-version \($0)=…" }), (faults, { "--fault …,pack=\($0)" }),
        ]
        for (ids, option) in named {
            for id in ids.sorted() where !known.contains(id) {
                throw AssetPackServerError(code: .invalidOption, message: "\(option(id)): \(unknown(id, known: known))")
            }
        }
    }

    /// What is said of a pack ID that names no pack served (a pack whose manifest was removed is served still, as
    /// obsolete): the one it was perhaps meant to be, and the packs there are.
    static func unknown(_ id: String, known: Set<String>) -> String {
        let list = known.sorted()
        let guess = PackagingManifest.nearMiss(id, in: list).map { "did you mean \($0)? " } ?? ""
        return "there is no pack \(id) served here (\(guess)packs: \(list.joined(separator: ", ")))"
    }
}

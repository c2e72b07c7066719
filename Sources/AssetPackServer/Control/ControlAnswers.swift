import AssetPackFormat

/// The control API's answers (`/_mock/...`), each a shape of the JSON contract (``JSONOutput``).
enum ControlAnswer {
    /// `GET /_mock/faults`: `{"faults": [rule...], "seed": N}`; `DELETE /_mock/faults` has no seed.
    struct Faults: Encodable, Equatable {
        var faults: [String]
        var seed: UInt64?
    }

    /// `POST /_mock/faults`: the rule added, as the server reads it, and every rule in force.
    struct FaultAdded: Encodable, Equatable {
        var added: String
        var faults: [String]
    }

    /// `DELETE /_mock/faults/<n>`: the rule removed and every rule left.
    struct FaultRemoved: Encodable, Equatable {
        var removed: String
        var faults: [String]
    }

    /// `PUT` or `DELETE /_mock/packs/<id>/version`: the version published now (`null` when the pack is not
    /// published) and whether it is pinned.
    struct Version: Encodable, Equatable {
        var id: String
        @Nullable var version: Int?
        var pinned: Bool
    }

    /// `PUT` or `DELETE /_mock/packs/<id>/obsolete`.
    struct Obsolete: Encodable, Equatable {
        var id: String
        var obsolete: Bool
    }

    /// `GET /_mock/packs`: every pack the folder has, and the problems of the folder's manifests.
    struct Packs: Encodable, Equatable {
        var packs: [Pack]
        var problems: [ManifestProblem]
    }

    /// One pack of `GET /_mock/packs`.
    struct Pack: Encodable, Equatable {
        var id: String
        var contentVersion: Int
        var publishedVersion: Int
        @Nullable var pinnedBy: String?
        var obsolete: Bool
        var removed: Bool
        var problems: [ManifestProblem]

        init(_ state: PackCatalog.PackState) {
            id = state.id
            contentVersion = state.contentVersion
            publishedVersion = state.publishedVersion
            pinnedBy = state.pinnedBy
            obsolete = state.obsolete
            removed = state.removed
            problems = state.problems
        }
    }
}

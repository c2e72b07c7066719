import AssetPackFormat
import Foundation
import SystemPackage

/// Verification: installed files re-hashed against their pack's index.
extension AssetPackReader {
    /// What a verification found.
    public struct Verification: Sendable {
        /// A file (or a pack's index) that does not match.
        public struct Problem: Sendable, Hashable {
            /// How it does not match.
            public enum Kind: String, Sendable, Hashable {
                /// The file's bytes differ from the index's digest.
                case differs
                /// The file is not there.
                case missing
                /// The pack's index cannot be read.
                case indexUnreadable
            }

            /// The pack.
            public var pack: String
            /// The file's namespace path; `nil` for the pack's index.
            public var path: String?
            public var kind: Kind
        }

        /// Files checked.
        public var checked: Int
        /// What did not match, pack by pack, in index order.
        public var problems: [Problem]
    }

    /// Re-hashes installed files against their pack's index and says what differs. Blocking: reads every
    /// byte.
    /// - Parameter id: One pack, or every installed pack.
    /// - Throws: ``AssetPackClientError`` with code `.assetPackNotFound` for a pack that is not installed.
    public func verification(ofAssetPackWithID id: String? = nil) throws -> Verification {
        let view = try currentNamespace()
        let packs: [InstalledPack]
        if let id {
            guard let pack = view.installed[id] else {
                throw AssetPackClientError(
                    code: .assetPackNotFound,
                    message: "pack \(id) is not installed",
                    assetPackID: id
                )
            }
            packs = [pack]
        } else {
            packs = view.installed.values.sorted { $0.id < $1.id }
        }
        var result = Verification(checked: 0, problems: [])
        for pack in packs {
            let index: PackIndex
            do {
                index = try store.loadIndex(of: pack)
            } catch {
                result.problems.append(.init(pack: pack.id, path: nil, kind: .indexUnreadable))
                continue
            }
            for row in index.files {
                result.checked += 1
                let digest: String
                do {
                    digest = try FileDigest.sha256(of: folder(of: pack).appending(row.path))
                } catch {
                    // Gone is missing; anything else in its place (a folder, a FIFO, unreadable) differs.
                    let gone = AssetPackClientError.isNotFound(error)
                    result.problems.append(.init(pack: pack.id, path: row.path, kind: gone ? .missing : .differs))
                    continue
                }
                if digest != row.sha256 { result.problems.append(.init(pack: pack.id, path: row.path, kind: .differs)) }
            }
        }
        return result
    }

    /// Re-hashes installed files against their pack's index. Blocking: reads every byte.
    /// - Parameter id: One pack, or every installed pack.
    /// - Returns: The number of files checked.
    /// - Throws: ``AssetPackClientError`` with code `.verificationFailed` naming every file that differs or is
    ///   missing, or `.assetPackNotFound` for a pack that is not installed.
    public func verify(assetPackWithID id: String? = nil) throws -> Int {
        let result = try verification(ofAssetPackWithID: id)
        guard result.problems.isEmpty else {
            let lines = result.problems.map { problem in
                switch problem.kind {
                case .differs: "\(problem.pack): \(problem.path ?? "") differs from the pack's index"
                case .missing: "\(problem.pack): \(problem.path ?? "") is missing"
                case .indexUnreadable: "\(problem.pack): index unreadable"
                }
            }
            throw AssetPackClientError(
                code: .verificationFailed,
                message: "\(result.problems.count) installed file(s) do not match: " + lines.joined(separator: "; ")
                    + ". Fix: `ba-sync remove ID` then `ba-sync ensure ID`"
            )
        }
        return result.checked
    }
}

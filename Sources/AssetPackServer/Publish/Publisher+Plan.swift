import AssetPackFormat
import Foundation
import SystemPackage

/// What `publish` puts where: immutable keys for archives, one mutable manifest, and the URLs in it.
extension Publisher {
    /// An object `publish` makes sure is in the store.
    struct PlannedObject: Sendable {
        var step: Step
        var payload: S3Bucket.Payload
        var headers: [(String, String)]
    }

    /// `Cache-Control` of a pack or a delta: its key never names other bytes.
    static let immutable = "public, max-age=31536000, immutable"

    /// Reads `s3://BUCKET/PREFIX` into the bucket and the prefix (with no leading or trailing `/`).
    /// - Throws: ``PublishError`` with code `.invalidDestination`.
    static func destination(_ text: String) throws -> (bucket: String, prefix: String) {
        guard text.hasPrefix("s3://") else {
            throw PublishError(
                code: .invalidDestination,
                message: "\(text) is not an S3 destination",
                fix: "write it as s3://BUCKET or s3://BUCKET/PREFIX"
            )
        }
        let rest = text.dropFirst(5)
        let bucket = String(rest.prefix { $0 != "/" })
        let segments = rest.dropFirst(bucket.count).split(separator: "/")
        // A client collapses `.` and `..` in a URL: keys holding them could not be reached.
        if let dots = segments.first(where: { $0 == "." || $0 == ".." }) {
            throw PublishError(
                code: .invalidDestination,
                message: "the prefix in \(text) has a \"\(dots)\" segment, which a URL cannot name",
                fix: "write the prefix without . and .. segments"
            )
        }
        let prefix = segments.joined(separator: "/")
        // S3's rules for a bucket's name: 3 to 63 of a-z, 0-9, '.' and '-', starting and ending with a letter or digit.
        let allowed = bucket.utf8.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
        }
        guard (3...63).contains(bucket.utf8.count), allowed,
            bucket.first?.isLetter == true || bucket.first?.isNumber == true,
            bucket.last?.isLetter == true || bucket.last?.isNumber == true
        else {
            throw PublishError(
                code: .invalidDestination,
                message: "\"\(bucket)\" in \(text) is not a bucket name: S3 names are 3 to 63 characters of a-z, 0-9, "
                    + "'.' and '-', starting and ending with a letter or a digit"
            )
        }
        return (bucket, prefix)
    }

    /// The key of `relative` under `prefix`.
    static func key(_ relative: String, prefix: String) -> String {
        prefix.isEmpty ? relative : "\(prefix)/\(relative)"
    }

    /// The objects of `snapshot` (packs and deltas, under keys that carry version and digest) and the manifest
    /// naming them, with URLs under `baseURL` (relative to the manifest when `nil`).
    static func plan(
        _ snapshot: CatalogSnapshot,
        prefix: String,
        baseURL: String?,
        manifestMaxAge: Int,
        platforms: [String]
    ) throws -> (objects: [PlannedObject], platformManifests: [PlannedObject], manifest: PlannedObject) {
        let base = baseURL.map { $0.hasSuffix("/") ? $0 : $0 + "/" } ?? ""
        var objects: [PlannedObject] = []
        var entries: [DownloadManifest.Entry] = []
        func object(
            _ kind: Step.Kind,
            _ relative: String,
            _ pack: ServedPack,
            _ archive: FilePath,
            _ sha256: String,
            _ size: Int64
        ) {
            objects.append(
                PlannedObject(
                    step: Step(
                        kind: kind,
                        key: key(relative, prefix: prefix),
                        id: pack.id,
                        version: pack.version,
                        bytes: size,
                        sha256: sha256
                    ),
                    payload: .file(archive, range: 0..<size, sha256: sha256),
                    headers: [("content-type", "application/octet-stream"), ("cache-control", immutable)]
                )
            )
        }
        for pack in snapshot.packs {
            let packPath = "packs/\(pack.id)/\(pack.version)-\(pack.sha256)"
            object(.pack, packPath, pack, pack.archive, pack.sha256, pack.downloadSize)
            var entry = pack.manifestEntry(baseURL: "")
            entry.url = base + packPath
            for (index, delta) in pack.deltas.enumerated() {
                let deltaPath = "deltas/\(pack.id)/\(pack.version)-from-\(delta.fromVersion)-\(delta.sha256)"
                object(.delta, deltaPath, pack, delta.archive, delta.sha256, delta.downloadSize)
                entry.deltas?[index].url = base + deltaPath
            }
            entries.append(entry)
        }
        var manifest = snapshot.manifest(baseURL: "")
        manifest.assetPacks = entries
        let headers = [("content-type", "application/json"), ("cache-control", "public, max-age=\(manifestMaxAge)")]
        let platformManifests = try Set(platforms).sorted().map { platform in
            try manifestObject(manifest.only(platform: platform), .platformManifest, "manifest-\(platform).json")
        }
        return (objects, platformManifests, try manifestObject(manifest, .manifest, "manifest"))

        func manifestObject(_ manifest: DownloadManifest, _ kind: Step.Kind, _ name: String) throws -> PlannedObject {
            let bytes: Data
            do {
                bytes = try manifest.encoded()
            } catch {
                throw PublishError(code: .io, message: "cannot encode the manifest: \(error)")
            }
            let sha256 = FileDigest.sha256(of: bytes)
            return PlannedObject(
                step: Step(kind: kind, key: key(name, prefix: prefix), bytes: Int64(bytes.count), sha256: sha256),
                payload: .data(bytes, sha256: sha256),
                headers: headers
            )
        }
    }

    /// Whether the store holds `object` as publish would write it, going by its HEAD: the same size, the same
    /// SHA-256 in the store's checksum (which it checked on upload) or in the `x-amz-meta-sha256` publish
    /// writes beside it, and the same `Cache-Control` and `Content-Type` (a header changed, by
    /// `--manifest-max-age` or by hand, is sent again). The metadata is what an object sent in parts has: its
    /// checksum is of its parts' checksums (each checked by the store on upload), and the metadata was set
    /// when its upload began.
    static func holds(_ head: S3Bucket.Head?, _ object: PlannedObject) -> Bool {
        guard let head, head.size == object.step.bytes,
            head.checksumSHA256 == Data(hexDigest: object.step.sha256)?.base64EncodedString()
                || head.metadataSHA256 == object.step.sha256
        else { return false }
        return object.headers.allSatisfy { name, value in
            switch name {
            case "cache-control": head.cacheControl == value
            case "content-type": head.contentType == value
            default: true
            }
        }
    }
}

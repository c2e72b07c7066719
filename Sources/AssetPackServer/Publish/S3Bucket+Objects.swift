import Foundation

/// Listing and deleting objects, for the pruning of old versions.
extension S3Bucket {
    /// Every object whose key starts with `prefix`, a page (1 000 keys) at a time.
    func list(prefix: String) async throws -> [Publisher.ListedObject] {
        var objects: [Publisher.ListedObject] = []
        var token: String?
        let dates = ISO8601DateFormatter()
        dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let plainDates = ISO8601DateFormatter()
        repeat {
            let query = [("list-type", "2"), ("prefix", prefix)] + (token.map { [("continuation-token", $0)] } ?? [])
            let body = String(decoding: try await send("GET", key: nil, query: query).body, as: UTF8.self)
            for block in Self.blocks("Contents", in: body) {
                guard let key = Self.element("Key", in: block),
                    let size = Self.element("Size", in: block).flatMap(Int64.init),
                    let modified = Self.element("LastModified", in: block),
                    let date = dates.date(from: modified) ?? plainDates.date(from: modified)
                else { continue }
                objects.append(Publisher.ListedObject(key: key, size: size, lastModified: date))
            }
            let next =
                Self.element("IsTruncated", in: body) == "true" ? Self.element("NextContinuationToken", in: body) : nil
            // A store that hands back the token it was given would loop forever.
            if let next, next == token {
                throw PublishError(
                    code: .refused,
                    message: "the store at \(endpoint.text) listed s3://\(bucket)/\(prefix) with the same continuation "
                        + "token twice; nothing was deleted"
                )
            }
            token = next
        } while token != nil
        return objects
    }

    /// Deletes `key` (gone already is fine, as S3 answers it).
    func delete(_ key: String) async throws {
        _ = try await send("DELETE", key: key, allowing: [404])
    }
}

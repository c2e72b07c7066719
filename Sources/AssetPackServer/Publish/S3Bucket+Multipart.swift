import AssetPackFormat
import Crypto
import Foundation
import NIOHTTP1
import SystemPackage

/// Multipart uploads: a large object in parts sent side by side, and an upload a run left unfinished taken up
/// again where it stopped (its parts already in the store, with the same size and digest, are not sent again).
extension S3Bucket {
    /// A part the store holds of an unfinished upload.
    struct StoredPart: Sendable, Hashable {
        var size: Int64
        var etag: String
        /// `ChecksumSHA256` (base64), when the store lists it.
        var checksumSHA256: String?
    }

    /// What was sent of a multipart object.
    struct PartsSent: Sendable, Hashable {
        var parts: Int
        /// Bytes of parts an earlier run had sent, not sent again.
        var resumedBytes: Int64
    }

    /// Uploads `range.count` bytes of `file` as `key` in parts of `partSize` bytes, at most `jobs` at once,
    /// taking up an unfinished upload of the same key (keys carry the content's SHA-256, so one is the same
    /// bytes). Each part carries its SHA-256 (signed, and as `x-amz-checksum-sha256`), which the store checks.
    /// - Returns: How many parts, and the bytes an earlier run had sent.
    func putInParts(
        _ key: String,
        file: FilePath,
        size: Int64,
        sha256: String,
        headers: [(String, String)],
        partSize: Int64,
        jobs: Int
    ) async throws -> PartsSent {
        var upload = try await unfinishedUpload(key)
        if upload == nil { upload = (try await startUpload(key, sha256, headers), [:]) }
        guard let (uploadID, stored) = upload else { return PartsSent(parts: 0, resumedBytes: 0) }
        let ranges = stride(from: Int64(0), to: size, by: Int(partSize)).map { $0..<min($0 + partSize, size) }
        let numbered = Array(zip(1..., ranges))
        let sent = try await concurrently(numbered, jobs: jobs) { number, range in
            // The MD5 only to compare with a part an earlier run left that the store lists without a checksum.
            let compareMD5 = stored[number].map { $0.checksumSHA256 == nil } ?? false
            let digests = try await BlockingIO.longJob { try Self.digests(of: file, range, md5: compareMD5) }
            if let old = stored[number], old.size == Int64(range.count),
                old.checksumSHA256 == digests.sha256Base64 || digests.md5.map({ old.etag == "\"\($0)\"" }) == true
            {
                return (number, old.etag, digests.sha256Base64, Int64(range.count))
            }
            let response = try await send(
                "PUT",
                key: key,
                query: [("partNumber", String(number)), ("uploadId", uploadID)],
                headers: [("x-amz-checksum-sha256", digests.sha256Base64)],
                payload: .file(file, range: range, sha256: digests.sha256)
            )
            return (number, response.headers.first(name: "etag") ?? "", digests.sha256Base64, Int64(0))
        }
        try await complete(key, uploadID, parts: sent.map { ($0.0, $0.1, $0.2) })
        return PartsSent(parts: sent.count, resumedBytes: sent.reduce(0) { $0 + $1.3 })
    }

    /// The newest unfinished upload of `key` and the parts the store holds of it, or `nil`.
    private func unfinishedUpload(_ key: String) async throws -> (String, [Int: StoredPart])? {
        let uploads = try await send("GET", key: nil, query: [("uploads", ""), ("prefix", key)])
        let body = String(decoding: uploads.body, as: UTF8.self)
        guard
            let uploadID = Self.blocks("Upload", in: body).last(where: { Self.element("Key", in: $0) == key })
                .flatMap({ Self.element("UploadId", in: $0) })
        else { return nil }
        var parts: [Int: StoredPart] = [:]
        var marker = "0"
        while true {
            let listed = try await send(
                "GET",
                key: key,
                query: [("uploadId", uploadID), ("part-number-marker", marker)]
            )
            let text = String(decoding: listed.body, as: UTF8.self)
            for block in Self.blocks("Part", in: text) {
                guard let number = Self.element("PartNumber", in: block).flatMap(Int.init),
                    let size = Self.element("Size", in: block).flatMap(Int64.init),
                    let etag = Self.element("ETag", in: block)
                else { continue }
                parts[number] = StoredPart(
                    size: size,
                    etag: etag,
                    checksumSHA256: Self.element("ChecksumSHA256", in: block)
                )
            }
            // A store that lists the same page again (or goes backwards) would loop forever: part numbers only grow.
            guard Self.element("IsTruncated", in: text) == "true",
                let next = Self.element("NextPartNumberMarker", in: text), let after = Int(next),
                after > Int(marker) ?? 0
            else { break }
            marker = next
        }
        return (uploadID, parts)
    }

    private func startUpload(_ key: String, _ sha256: String, _ headers: [(String, String)]) async throws -> String {
        let response = try await send(
            "POST",
            key: key,
            query: [("uploads", "")],
            headers: headers + [("x-amz-checksum-algorithm", "SHA256"), ("x-amz-meta-sha256", sha256)]
        )
        guard let uploadID = Self.element("UploadId", in: String(decoding: response.body, as: UTF8.self)) else {
            throw PublishError(
                code: .refused,
                message: "the store at \(endpoint.text) started an upload of \(name(key)) without an UploadId"
            )
        }
        return uploadID
    }

    private func complete(_ key: String, _ uploadID: String, parts: [(Int, String, String)]) async throws {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (number, etag, checksum) in parts.sorted(by: { $0.0 < $1.0 }) {
            xml += "<Part><PartNumber>\(number)</PartNumber><ETag>\(Self.escaped(etag))</ETag>"
            xml += "<ChecksumSHA256>\(checksum)</ChecksumSHA256></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = Data(xml.utf8)
        let response = try await send(
            "POST",
            key: key,
            query: [("uploadId", uploadID)],
            headers: [("content-type", "application/xml")],
            payload: .data(body, sha256: FileDigest.sha256(of: body))
        )
        // S3 may answer 200 and still fail the completion, with an error in the body.
        let text = String(decoding: response.body, as: UTF8.self)
        if text.contains("<Error>") {
            throw S3Bucket.error(
                Response(status: 500, headers: response.headers, body: response.body),
                method: "POST",
                object: name(key),
                self
            )
        }
    }

    /// The SHA-256 (hex and base64) and, when asked, the MD5 (hex: a part's ETag on S3 without KMS) of
    /// `range` of a file, in one read.
    private static func digests(
        of file: FilePath,
        _ range: Range<Int64>,
        md5 wantMD5: Bool
    ) throws -> (sha256: String, sha256Base64: String, md5: String?) {
        let fd = try FileDescriptor.open(file, .readOnly)
        return try fd.closeAfter {
            var sha = SHA256()
            var md5 = Insecure.MD5()
            let read = try fd.forEachChunk(from: range.lowerBound, upTo: Int64(range.count)) {
                sha.update(bufferPointer: $0)
                if wantMD5 { md5.update(bufferPointer: $0) }
            }
            guard read == Int64(range.count) else {
                throw PublishError(
                    code: .io,
                    message: "\(file) ended at \(range.lowerBound + read) bytes while being uploaded"
                )
            }
            let digest = sha.finalize()
            return (digest.hexString, Data(digest).base64EncodedString(), wantMD5 ? md5.finalize().hexString : nil)
        }
    }

    /// The inner texts of every `<name>...</name>` of an S3 answer (its lists are flat: no element nests in
    /// one of the same name).
    static func blocks(_ name: String, in body: String) -> [String] {
        body.components(separatedBy: "<\(name)>").dropFirst().compactMap { piece in
            piece.range(of: "</\(name)>").map { String(piece[..<$0.lowerBound]) }
        }
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
    }
}
